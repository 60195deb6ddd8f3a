import { describe, expect, it } from 'vitest';
import { RunModel, share } from './model.ts';
import { events } from './test-events.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };

/** Events as the runner sends them, with seq and ts filled in (one second apart). */
export { events };

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

const reviewEdges = [
  { from: 'research', to: 'writer' },
  { from: 'writer', to: 'review' },
  { from: 'review', to: 'publish', when: 'approved' },
  { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2 },
];

const enter = (nodeId: string, kind: string, entry: number, extra: Record<string, unknown> = {}) => ({ type: 'node.enter', nodeId, kind, entry, depth: 0, inputSize: 1, ...extra });
const exit = (nodeId: string, kind: string, entry: number, extra: Record<string, unknown> = {}) => ({
  type: 'node.exit',
  nodeId,
  kind,
  entry,
  depth: 0,
  status: 'ok',
  tokens: 10,
  modelCalls: 1,
  durationMs: 100,
  answerSize: 1,
  ...extra,
});

describe('the edges a run took, told with the spec\'s edges', () => {
  it('counts a rejected draft\'s way back once (the loop and its route are one step) and each forward edge as often as it was taken', () => {
    const model = new RunModel([], reviewEdges);
    const run = events(
      { type: 'run.start', composition: 'human-review', pattern: 'CriticLoop', nodes: 4, budgets, captureContent: false, dryRunTools: false, inputSize: 3 },
      enter('research', 'LLMAgent', 1),
      exit('research', 'LLMAgent', 1),
      enter('writer', 'LLMAgent', 2),
      exit('writer', 'LLMAgent', 2),
      enter('review', 'HumanApproval', 3),
      { type: 'approval.requested', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', digest: 'd', size: 5, complete: true, expiresAt: '2026-12-05T11:00:00.000Z' },
      { type: 'approval.decided', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', decision: 'rejected', waitMs: 1000, comment: 'shorter' },
      exit('review', 'HumanApproval', 3, { label: 'rejected', tokens: 0 }),
      { type: 'loop.iteration', head: 'writer', tail: 'review', iteration: 1, max: 2, stopped: false },
      { type: 'route.taken', nodeId: 'review', label: 'rejected', to: 'writer' },
      enter('writer', 'LLMAgent', 4),
      exit('writer', 'LLMAgent', 4),
      enter('review', 'HumanApproval', 5),
      exit('review', 'HumanApproval', 5, { label: 'approved', tokens: 0 }),
      { type: 'route.taken', nodeId: 'review', label: 'approved', to: 'publish' },
      enter('publish', 'LLMAgent', 6),
    );
    model.applyAll(run.slice(0, 12));
    expect(model.liveEdges).toEqual(new Set(['review→writer']));
    expect(model.nodes.get('writer')?.state).toBe('running');
    expect(model.loops.get('review→writer')).toMatchObject({ iteration: 1, max: 2 });
    model.applyAll(run.slice(12));
    expect(Object.fromEntries(model.edgesTaken)).toEqual({ 'research→writer': 1, 'writer→review': 2, 'review→writer': 1, 'review→publish': 1 });
    expect(model.liveEdges).toEqual(new Set(['review→publish']));
  });

  it('counts each branch of a fan-out once, and each branch into its join once, with no edge the spec does not have', () => {
    const model = new RunModel([], [
      { from: 'gather', to: 'a' },
      { from: 'gather', to: 'b' },
      { from: 'a', to: 'combine' },
      { from: 'b', to: 'combine' },
      { from: 'combine', to: 'brief' },
    ]);
    model.applyAll(
      events(
        enter('gather', 'Parallel', 1),
        exit('gather', 'Parallel', 1, { tokens: 0 }),
        enter('a', 'LLMAgent', 2, { depth: 1 }),
        enter('b', 'LLMAgent', 3, { depth: 1 }),
        exit('b', 'LLMAgent', 3, { depth: 1 }),
        exit('a', 'LLMAgent', 2, { depth: 1 }),
        enter('combine', 'Join', 4),
        exit('combine', 'Join', 4, { tokens: 0 }),
        enter('brief', 'LLMAgent', 5),
      ),
    );
    expect(Object.fromEntries(model.edgesTaken)).toEqual({ 'gather→a': 1, 'gather→b': 1, 'a→combine': 1, 'b→combine': 1, 'combine→brief': 1 });
  });

  it('reaches a supervisor\'s child from its parent\'s entry, and counts it as a delegation', () => {
    const model = new RunModel([], []);
    model.applyAll(
      events(
        enter('lead', 'Supervisor', 1),
        { type: 'tool.call', nodeId: 'lead', entry: 1, tool: 'n_researcher', callId: 'c1', status: 'ok', durationMs: 5, resultSize: 2 },
        enter('researcher', 'LLMAgent', 2, { depth: 1, parentEntry: 1 }),
      ),
    );
    expect(Object.fromEntries(model.edgesTaken)).toEqual({ 'lead→researcher': 1 });
    expect(model.used.maxDelegations).toBe(1);
  });

  it('marks the node that was running when a budget ran out', () => {
    const model = new RunModel([{ id: 'write', kind: 'LLMAgent' }]);
    model.applyAll(events(enter('write', 'LLMAgent', 1), { type: 'budget.hit', budget: 'maxTokens', limit: 1000, used: 1002, nodeId: 'write' }));
    expect(model.nodes.get('write')?.budgetHit).toBe('maxTokens');
  });
});
