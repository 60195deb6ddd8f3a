import { describe, expect, it } from 'vitest';
import { parseTraceEvent, type TraceEvent } from '../api/trace.ts';
import { RunModel, share } from './model.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };

/** Events as the runner sends them, with seq and ts filled in (one second apart). */
export function events(...bodies: Record<string, unknown>[]): TraceEvent[] {
  return bodies.map((body, i) => {
    const parsed = parseTraceEvent(JSON.stringify({ seq: i + 1, runId: 'uid-1', ts: new Date(Date.UTC(2026, 11, 5, 10, 0, i)).toISOString(), ...body }));
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed.event;
  });
}

const reviewRun = events(
  { type: 'run.start', composition: 'review', pattern: 'Pipeline', nodes: 3, budgets, captureContent: true, dryRunTools: false, inputSize: 3 },
  { type: 'node.enter', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, inputSize: 3, input: 'v2', model: 'scripted' },
  { type: 'tool.call', nodeId: 'draft', entry: 1, tool: 'search', callId: 'c1', status: 'ok', durationMs: 5, resultSize: 2 },
  { type: 'node.exit', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, status: 'ok', tokens: 120, modelCalls: 2, durationMs: 900, answerSize: 5, answer: 'notes' },
  { type: 'node.enter', nodeId: 'review', kind: 'HumanApproval', entry: 2, depth: 0, inputSize: 5 },
  { type: 'approval.requested', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', digest: 'd', size: 5, complete: true, expiresAt: '2026-12-05T11:00:00.000Z' },
  { type: 'approval.decided', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', decision: 'approved', waitMs: 2000 },
  { type: 'node.exit', nodeId: 'review', kind: 'HumanApproval', entry: 2, depth: 0, status: 'ok', tokens: 0, modelCalls: 0, durationMs: 3000, answerSize: 5, label: 'approved' },
  { type: 'route.taken', nodeId: 'review', label: 'approved', to: 'publish' },
  { type: 'node.enter', nodeId: 'publish', kind: 'LLMAgent', entry: 3, depth: 0, inputSize: 5 },
  { type: 'node.exit', nodeId: 'publish', kind: 'LLMAgent', entry: 3, depth: 0, status: 'ok', tokens: 30, modelCalls: 1, durationMs: 400, answerSize: 4 },
  { type: 'run.end', outcome: 'Succeeded', totals: { tokens: 150, toolCalls: 1, delegations: 0, remoteCalls: 0, wallTimeMs: 11000 }, dropped: 0, outputSize: 4 },
);

describe('a run model built from trace events', () => {
  it('follows each node from idle to running to its outcome, and marks a node never entered as skipped', () => {
    const model = new RunModel([
      { id: 'draft', kind: 'LLMAgent' },
      { id: 'review', kind: 'HumanApproval' },
      { id: 'publish', kind: 'LLMAgent' },
      { id: 'fix', kind: 'LLMAgent' },
    ]);
    expect(model.nodes.get('draft')?.state).toBe('idle');
    model.applyAll(reviewRun.slice(0, 2));
    expect(model.nodes.get('draft')?.state).toBe('running');
    model.applyAll(reviewRun.slice(2, 6));
    expect(model.nodes.get('draft')).toMatchObject({ state: 'ok', tokens: 120, modelCalls: 2, calls: 1, input: 'v2', answer: 'notes' });
    expect(model.nodes.get('review')?.state).toBe('awaiting');
    expect(model.pendingApprovals().map((a) => a.requested.approvalId)).toEqual(['approval-1']);
    expect(model.edgesTaken.get('draft→review')).toBe(1);
    model.applyAll(reviewRun.slice(6));
    expect(model.pendingApprovals()).toEqual([]);
    expect(model.nodes.get('review')).toMatchObject({ state: 'ok', label: 'approved' });
    expect(model.edgesTaken.get('review→publish')).toBe(1);
    expect(model.nodes.get('fix')?.state).toBe('skipped');
    expect(model.outcome).toBe('Succeeded');
  });

  it('counts budgets as events arrive, leaves the waiting time out of the timeout, and takes run.end totals', () => {
    const model = new RunModel();
    model.applyAll(reviewRun.slice(0, 7));
    expect(model.used.maxTokens).toBe(120);
    expect(model.used.maxToolCalls).toBe(1);
    // run.start at 10:00:00, approval.decided at 10:00:06 after a 2 s wait: 4 s of the timeout used.
    expect(model.used.timeoutSeconds).toBe(4);
    model.applyAll(reviewRun.slice(7));
    expect(model.used.maxTokens).toBe(150);
    expect(model.used.timeoutSeconds).toBe(9);
    expect(share(model.used.maxTokens, budgets.maxTokens)).toBeCloseTo(0.15);
  });

  it('ignores an event it has applied already, so a resumed stream never counts twice', () => {
    const model = new RunModel();
    model.applyAll(reviewRun.slice(0, 4));
    expect(model.applyAll(reviewRun.slice(0, 4))).toBe(0);
    expect(model.used.maxTokens).toBe(120);
    expect(model.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('counts a loop and records when it stopped at its cap', () => {
    const model = new RunModel();
    model.applyAll(
      events(
        { type: 'run.start', composition: 'critic', pattern: 'Loop', nodes: 2, budgets, captureContent: false, dryRunTools: false, inputSize: 1 },
        { type: 'loop.iteration', head: 'write', tail: 'critic', iteration: 1, max: 2, stopped: false },
        { type: 'loop.iteration', head: 'write', tail: 'critic', iteration: 3, max: 2, stopped: true },
        { type: 'budget.hit', budget: 'maxTokens', limit: 1000, used: 1002, nodeId: 'write' },
      ),
    );
    expect(model.loops.get('critic→write')).toMatchObject({ iteration: 3, max: 2, stopped: true });
    expect(model.edgesTaken.get('critic→write')).toBe(1);
    expect(model.budgetHits.map((h) => h.budget)).toEqual(['maxTokens']);
  });
});
