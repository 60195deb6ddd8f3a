import { describe, expect, it } from 'vitest';
import { parseRun, type Run } from '../api/runs.ts';
import { RunModel } from '../run/model.ts';
import { traceEvents } from './generated-run.ts';
import { compareWarnings, nodeRows, totalRows, type Side } from './compare.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };

function run(name: string, status: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): Run {
  const parsed = parseRun({ metadata: { name, namespace: 'team-a' }, spec: { owner: 'alice', input: 'x', ...spec }, status: { phase: 'Succeeded', ...status } });
  if (parsed === null) throw new Error('not a run');
  return parsed;
}

function enter(nodeId: string, entry: number) {
  return { type: 'node.enter', nodeId, kind: 'LLMAgent', entry, depth: 0, inputSize: 1 };
}

function exit(nodeId: string, entry: number, tokens: number, durationMs: number) {
  return { type: 'node.exit', nodeId, kind: 'LLMAgent', entry, depth: 0, status: 'ok', tokens, modelCalls: 1, durationMs, answerSize: 1 };
}

function model(...bodies: Record<string, unknown>[]): RunModel {
  const m = new RunModel();
  m.applyAll(traceEvents([{ type: 'run.start', composition: 'review', pattern: 'Pipeline', nodes: 3, budgets, captureContent: false, dryRunTools: false, inputSize: 1 }, ...bodies]));
  return m;
}

const end = (tokens: number, wallTimeMs: number, dropped = 0) => ({ type: 'run.end', outcome: 'Succeeded', totals: { tokens, toolCalls: 1, delegations: 0, remoteCalls: 2, wallTimeMs }, dropped, outputSize: 1 });

const A: Side = {
  run: run('a'),
  model: model(enter('draft', 1), { type: 'tool.call', nodeId: 'draft', entry: 1, tool: 'search', callId: 'c1', status: 'ok', durationMs: 3, resultSize: 1 }, exit('draft', 1, 120, 900), enter('review', 2), exit('review', 2, 0, 3000), end(120, 5000)),
};
const B: Side = {
  run: run('b'),
  model: model(enter('draft', 1), exit('draft', 1, 150, 700), enter('draft', 2), exit('draft', 2, 50, 300), enter('publish', 3), exit('publish', 3, 30, 400), end(230, 4200, 3)),
};

describe('comparing two runs', () => {
  it.each([
    ['tokens', 120, 230, 110],
    ['toolCalls', 1, 1, 0],
    ['remoteCalls', 2, 2, 0],
    ['wallTimeMs', 5000, 4200, -800],
    ['events', 7, 8, 1],
    ['dropped', 0, 3, 3],
  ] as const)('gives the total %s of A and B and B − A', (key, a, b, d) => {
    expect(totalRows(A, B).find((r) => r.key === key)).toMatchObject({ a, b, delta: d });
  });

  it('takes the totals from the run’s status when its events could not be read, and has no difference without both', () => {
    const statusOnly: Side = { run: run('c', { totals: { tokens: 99, toolCalls: 4, delegations: 1, remoteCalls: 0, wallTimeMs: 10 }, eventCount: 12 }), model: null };
    const rows = totalRows(statusOnly, B);
    expect(rows.find((r) => r.key === 'tokens')).toMatchObject({ a: 99, b: 230, delta: 131 });
    expect(rows.find((r) => r.key === 'events')).toMatchObject({ a: 12, b: 8, delta: -4 });
    expect(rows.find((r) => r.key === 'dropped')).toMatchObject({ a: null, b: 3, delta: null });
    const unreadable: Side = { run: null, model: null };
    expect(totalRows(unreadable, B).every((r) => r.a === null && r.delta === null)).toBe(true);
  });

  it.each([
    ['draft', { tokens: 120, durationMs: 900, entries: 1, calls: 1 }, { tokens: 200, durationMs: 1000, entries: 2, calls: 0 }, null],
    ['review', { tokens: 0, durationMs: 3000, entries: 1, calls: 0 }, null, 'a'],
    ['publish', null, { tokens: 30, durationMs: 400, entries: 1, calls: 0 }, 'b'],
  ] as const)('gives node %s each run’s figures and marks a node only one run entered', (id, a, b, only) => {
    expect(nodeRows(A, B).find((r) => r.id === id)).toEqual({ id, kind: 'LLMAgent', a, b, only });
  });

  it('lists A’s nodes in the order A entered them, then those only B entered', () => {
    expect(nodeRows(A, B).map((r) => r.id)).toEqual(['draft', 'review', 'publish']);
  });

  it('marks nothing as “only in one” when a side’s events could not be read', () => {
    expect(nodeRows({ run: null, model: null }, B).map((r) => r.only)).toEqual([null, null]);
  });

  it.each([
    ['the same composition and revision', { composition: { name: 'review', revision: 2, digest: 'd1' } }, { composition: { name: 'review', revision: 2, digest: 'd1' } }, null],
    ['different compositions', { composition: { name: 'review', revision: 2, digest: 'd1' } }, { composition: { name: 'critic-loop', revision: 2, digest: 'd2' } }, 'different compositions'],
    ['different revisions', { composition: { name: 'review', revision: 2, digest: 'd1' } }, { composition: { name: 'review', revision: 3, digest: 'd2' } }, 'revision 2 of “review” and B ran revision 3'],
    ['inline specs that differ', { composition: { name: 'review', digest: 'd1' } }, { composition: { name: 'review', digest: 'd2' } }, 'digests differ'],
  ])('warns when they ran %s', (_, sa, sb, warning) => {
    const warnings = compareWarnings(run('a', sa), run('b', sb));
    if (warning === null) expect(warnings).toEqual([]);
    else expect(warnings.join(' ')).toContain(warning);
  });

  it('names the composition a run refers to when it has not recorded what it ran', () => {
    const warnings = compareWarnings(run('a', {}, { compositionRef: { name: 'review', revision: 1 } }), run('b', {}, { compositionRef: { name: 'review', revision: 2 } }));
    expect(warnings.join(' ')).toContain('revision 1 of “review”');
  });
});
