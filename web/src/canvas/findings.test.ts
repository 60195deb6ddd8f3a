import { describe, expect, it } from 'vitest';
import type { Finding } from '../api/runs.ts';
import { fromSpec, nodeById, type CanvasDocument } from './document.ts';
import { connect, removeEdge, removeNode, renameNode, setBudgets, setComposition, setEdgeFields, setNodeFields, type EditResult } from './edit.ts';
import { findingOfProblem, findingsOnEdge, findingsOnNode, locText, placeFindings, specPath, standingFindings, targetOf, verdictOf, type FindingTarget, type Loc } from './findings.ts';

function read(spec: unknown): CanvasDocument {
  const result = fromSpec(spec);
  if (!result.ok) throw new Error('unreadable');
  return result.doc;
}

function ok(result: EditResult): CanvasDocument {
  if (!result.ok) throw new Error(result.error.message);
  return result.doc;
}

const DOC = read({
  pattern: 'CriticLoop',
  budgets: { maxTokens: 999999999 },
  nodes: [
    { id: 'writer', kind: 'LLMAgent', tools: ['mcp:nope.x'] },
    { id: 'critic', kind: 'LLMAgent', output: { labels: ['approved', 'rejected'] } },
  ],
  edges: [
    { from: 'writer', to: 'critic' },
    { from: 'critic', to: 'writer', when: 'rejected', maxIterations: 9 },
  ],
});
const WRITER = nodeById(DOC, 'writer')?.key ?? '';
const CRITIC = nodeById(DOC, 'critic')?.key ?? '';
const FORWARD = DOC.edges[0]?.key ?? '';
const BACK = DOC.edges[1]?.key ?? '';

function finding(loc: Loc, code = 'x'): Finding {
  return { loc, field: locText(loc), code, message: `${code} at ${locText(loc)}` };
}

describe('a finding\'s loc', () => {
  it.each<[string, Loc, FindingTarget]>([
    ['a node', ['spec', 'nodes', 1], { kind: 'node', node: CRITIC, id: 'critic', field: null, path: [] }],
    ['a node\'s field', ['spec', 'nodes', 0, 'model'], { kind: 'node', node: WRITER, id: 'writer', field: 'model', path: ['model'] }],
    ['one of a node\'s tools', ['spec', 'nodes', 0, 'tools', 0], { kind: 'node', node: WRITER, id: 'writer', field: 'tools', path: ['tools', 0] }],
    ['one of a node\'s labels', ['spec', 'nodes', 1, 'output', 'labels', 1], { kind: 'node', node: CRITIC, id: 'critic', field: 'output', path: ['output', 'labels', 1] }],
    ['an edge', ['spec', 'edges', 1], { kind: 'edge', edge: BACK, from: 'critic', to: 'writer', field: null }],
    ['an edge\'s field', ['spec', 'edges', 1, 'maxIterations'], { kind: 'edge', edge: BACK, from: 'critic', to: 'writer', field: 'maxIterations' }],
    ['a budget', ['spec', 'budgets', 'maxTokens'], { kind: 'budgets', budget: 'maxTokens' }],
    ['the budgets', ['spec', 'budgets'], { kind: 'budgets', budget: null }],
    ['the pattern', ['spec', 'pattern'], { kind: 'composition', field: 'pattern' }],
    ['the node list', ['spec', 'nodes'], { kind: 'composition', field: 'nodes' }],
    ['a node past the end of the list', ['spec', 'nodes', 7, 'id'], { kind: 'composition', field: 'nodes' }],
    ['the spec', ['spec'], { kind: 'composition', field: null }],
    ['nothing', [], { kind: 'composition', field: null }],
    ['a field of a 422\'s body', ['body', 'spec', 'nodes', 0, 'kind'], { kind: 'node', node: WRITER, id: 'writer', field: 'kind', path: ['kind'] }],
    ['a run\'s inline composition', ['body', 'composition', 'edges', 0, 'to'], { kind: 'edge', edge: FORWARD, from: 'writer', to: 'critic', field: 'to' }],
    ['a field of the body outside the spec', ['body', 'input'], { kind: 'composition', field: null }],
  ])('at %s is placed there', (_what, loc, target) => {
    expect(targetOf(DOC, loc)).toEqual(target);
  });
});

describe('the spec path of a loc', () => {
  it.each<[Loc, Loc | null]>([
    [['spec', 'nodes', 0], ['nodes', 0]],
    [['body', 'spec', 'pattern'], ['pattern']],
    [['body', 'composition'], []],
    [['query'], null],
  ])('of %j is %j', (loc, path) => {
    expect(specPath(loc)).toEqual(path);
  });
});

describe('placing a verdict', () => {
  const verdict = { errors: [finding(['spec', 'nodes', 0, 'tools', 0], 'unknown_tool'), finding(['spec', 'edges', 1, 'maxIterations'], 'loop_cap')], warnings: [finding(['spec', 'nodes', 1, 'output', 'labels', 0], 'label_ends_run')] };

  it('keeps warnings apart from errors', () => {
    const placed = placeFindings(DOC, verdict);
    expect(placed.errors.map((p) => p.finding.code)).toEqual(['unknown_tool', 'loop_cap']);
    expect(placed.warnings.map((p) => p.finding.code)).toEqual(['label_ends_run']);
  });

  it('gives each node and edge its own findings', () => {
    const placed = placeFindings(DOC, verdict);
    expect(findingsOnNode(placed, WRITER).errors.map((p) => p.finding.code)).toEqual(['unknown_tool']);
    expect(findingsOnNode(placed, CRITIC).warnings.map((p) => p.finding.code)).toEqual(['label_ends_run']);
    expect(findingsOnEdge(placed, BACK).errors.map((p) => p.finding.code)).toEqual(['loop_cap']);
    expect(findingsOnEdge(placed, FORWARD)).toEqual({ errors: [], warnings: [] });
  });
});

describe('a placed finding', () => {
  const placed = placeFindings(DOC, {
    errors: [
      finding(['spec', 'nodes', 0, 'tools', 0], 'on_tools'),
      finding(['spec', 'nodes', 1], 'on_critic'),
      finding(['spec', 'edges', 1, 'maxIterations'], 'on_cap'),
      finding(['spec', 'budgets', 'maxTokens'], 'on_tokens'),
      finding(['spec', 'pattern'], 'on_pattern'),
    ],
    warnings: [finding(['spec', 'edges', 0], 'on_forward')],
  });
  const codes = (doc: CanvasDocument): string[] => {
    const standing = standingFindings(placed, doc);
    return [...standing.errors, ...standing.warnings].map((p) => p.finding.code);
  };
  const ALL = ['on_tools', 'on_critic', 'on_cap', 'on_tokens', 'on_pattern', 'on_forward'];

  it.each<[string, (doc: CanvasDocument) => CanvasDocument, string[]]>([
    ['nothing changes', (d) => d, ALL],
    ['the node is renamed (its tools did not change, the ends of its edges did)', (d) => ok(renameNode(d, WRITER, 'author')), ALL.filter((c) => c !== 'on_forward')],
    ['the node\'s tools change', (d) => ok(setNodeFields(d, WRITER, { tools: ['mcp:demo.x'] })), ALL.filter((c) => c !== 'on_tools')],
    ['another field of the node changes', (d) => ok(setNodeFields(d, WRITER, { instruction: 'write' })), ALL],
    ['anything about the node it is on changes', (d) => ok(setNodeFields(d, CRITIC, { instruction: 'judge' })), ALL.filter((c) => c !== 'on_critic')],
    ['the node goes', (d) => ok(removeNode(d, WRITER)), ['on_critic', 'on_tokens', 'on_pattern']],
    ['the edge\'s cap changes', (d) => ok(setEdgeFields(d, BACK, { maxIterations: 3 })), ALL.filter((c) => c !== 'on_cap')],
    ['an edge before it goes (it follows its edge, not the index)', (d) => ok(removeEdge(d, FORWARD)), ALL.filter((c) => c !== 'on_forward')],
    ['a new edge is drawn', (d) => ok(connect(d, CRITIC, CRITIC)), ALL],
    ['the budget changes', (d) => setBudgets(d, { maxTokens: 1000 }), ALL.filter((c) => c !== 'on_tokens')],
    ['another budget changes', (d) => setBudgets(d, { timeoutSeconds: 10 }), ALL],
    ['the pattern changes', (d) => setComposition(d, { pattern: 'Pipeline' }), ALL.filter((c) => c !== 'on_pattern')],
  ])('stands or goes as it should when %s', (_what, change, standing) => {
    expect(codes(change(DOC))).toEqual(standing);
  });
});

describe('the validate reply', () => {
  it('is read into a verdict', () => {
    const body = { valid: false, errors: [{ loc: ['spec', 'pattern'], field: 'spec.pattern', code: 'pattern_mismatch', message: 'm' }], warnings: [] };
    expect(verdictOf(body)).toEqual({ valid: false, errors: [{ loc: ['spec', 'pattern'], field: 'spec.pattern', code: 'pattern_mismatch', message: 'm' }], warnings: [] });
  });

  it.each([null, [], { errors: [] }, { valid: 'yes', errors: [] }])('is not a verdict when it is %j', (body) => {
    expect(verdictOf(body)).toBeNull();
  });
});

describe('a 422 for a body that is not a spec', () => {
  it('is a finding at its loc, placed like the validator\'s', () => {
    const found = findingOfProblem({ status: 422, code: 'invalid', message: 'unknown variant `Agent`', loc: ['body', 'spec', 'nodes', 1, 'kind'], retryAfterSeconds: null });
    expect(found).toEqual({ loc: ['body', 'spec', 'nodes', 1, 'kind'], field: 'body.spec.nodes[1].kind', code: 'invalid', message: 'unknown variant `Agent`' });
    expect(targetOf(DOC, found.loc)).toMatchObject({ kind: 'node', id: 'critic', field: 'kind' });
  });
});
