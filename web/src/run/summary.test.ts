import { describe, expect, it } from 'vitest';
import type { TraceEventType } from '../api/trace.ts';
import { eventNode, summarize } from './summary.ts';
import { event } from './test-events.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };

const cases: readonly (readonly [string, Record<string, unknown>, string, string | null])[] = [
  ['run.start', { type: 'run.start', composition: 'human-review', pattern: 'CriticLoop', nodes: 4, budgets, captureContent: true, dryRunTools: false, inputSize: 3 }, 'human-review (CriticLoop), 4 nodes · content captured', null],
  ['run.start in a dry run', { type: 'run.start', composition: 'solo', pattern: 'Pipeline', nodes: 1, budgets, captureContent: false, dryRunTools: true, inputSize: 3 }, 'solo (Pipeline), 1 node · dry run: tools answer with dry-run text', null],
  ['run.end', { type: 'run.end', outcome: 'Succeeded', totals: { tokens: 1234, wallTimeMs: 12400 }, dropped: 0, outputSize: 9 }, 'Succeeded in 12.4 s · 1,234 tokens', null],
  ['run.end failed', { type: 'run.end', outcome: 'Failed', error: { message: 'the model answered 500', node: 'writer' }, totals: {}, dropped: 3, outputSize: 0 }, 'Failed · 3 events dropped · at writer: the model answered 500', 'writer'],
  ['run.end out of budget', { type: 'run.end', outcome: 'BudgetExhausted', totals: { tokens: 1 }, dropped: 0, outputSize: 0 }, 'Budget exhausted · 1 token', null],
  ['node.enter', { type: 'node.enter', nodeId: 'writer', kind: 'LLMAgent', entry: 2, depth: 0, inputSize: 3, model: 'scripted' }, 'entered (LLMAgent, model scripted)', 'writer'],
  ['node.enter of a child', { type: 'node.enter', nodeId: 'analyst', kind: 'LLMAgent', entry: 3, depth: 1, inputSize: 3, parentEntry: 1, screenFlags: ['injection'] }, 'entered (LLMAgent) · called by its supervisor · screen flagged: injection', 'analyst'],
  ['node.exit', { type: 'node.exit', nodeId: 'writer', kind: 'LLMAgent', entry: 2, depth: 0, status: 'ok', tokens: 120, modelCalls: 2, durationMs: 900, answerSize: 5 }, 'ok · 120 tokens · 2 model calls · 900 ms', 'writer'],
  ['node.exit with a label', { type: 'node.exit', nodeId: 'review', kind: 'HumanApproval', entry: 3, depth: 0, status: 'ok', tokens: 0, modelCalls: 0, durationMs: 3000, answerSize: 5, label: 'approved' }, 'ok · label approved · 3.00 s', 'review'],
  ['node.exit failed', { type: 'node.exit', nodeId: 'writer', kind: 'LLMAgent', entry: 2, depth: 0, status: 'failed', tokens: 0, modelCalls: 1, durationMs: 50, answerSize: 0, error: 'timed out' }, 'failed: timed out · 1 model call · 50 ms', 'writer'],
  ['loop.iteration', { type: 'loop.iteration', head: 'writer', tail: 'review', iteration: 1, max: 2, stopped: false }, 'loop review → writer: round 1 of at most 2', 'review'],
  ['loop.iteration at its cap', { type: 'loop.iteration', head: 'writer', tail: 'review', iteration: 3, max: 2, stopped: true }, 'loop review → writer reached its cap (2): the branch ends with the answer under review', 'review'],
  ['route.taken', { type: 'route.taken', nodeId: 'review', label: 'approved', to: 'publish' }, 'chose approved → publish', 'review'],
  ['route.taken to no edge', { type: 'route.taken', nodeId: 'checker', label: 'give_up' }, 'chose give_up: no edge, the branch ends', 'checker'],
  ['tool.call', { type: 'tool.call', nodeId: 'research', entry: 1, tool: 'mcp_demo_tools_search_articles', callId: 'c1', status: 'ok', durationMs: 5, resultSize: 2, dryRun: true }, 'mcp_demo_tools_search_articles ok · 5 ms · dry run', 'research'],
  ['tool.call refused', { type: 'tool.call', nodeId: 'research', entry: 1, tool: 'delete', callId: 'c2', status: 'refused', durationMs: 0, resultSize: 0, error: 'not allowed' }, 'delete refused · 0 ms · not allowed', 'research'],
  ['budget.hit', { type: 'budget.hit', budget: 'maxTokens', limit: 1000, used: 1002, nodeId: 'writer' }, 'Tokens budget spent: 1,002 of 1,000', 'writer'],
  ['budget.hit on time', { type: 'budget.hit', budget: 'timeoutSeconds', limit: 300, used: 301 }, 'Time budget spent: 5 min 01 s of 5 min 00 s', null],
  ['approval.requested', { type: 'approval.requested', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', digest: 'd', size: 30, complete: true, expiresAt: '2026-12-05T11:00:00.000Z' }, 'Approval approval-1 waits for a person · 30 bytes · expires 2026-12-05 11:00:00 UTC', 'review'],
  ['approval.requested too long', { type: 'approval.requested', approvalId: 'approval-2', nodeId: 'review', kind: 'Approval', digest: 'd', size: 1, complete: false, expiresAt: '2026-12-05T11:00:00.000Z' }, 'Approval approval-2 waits for a person · 1 byte · expires 2026-12-05 11:00:00 UTC · too long to show whole: it can only be rejected', 'review'],
  ['approval.decided', { type: 'approval.decided', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', decision: 'approved', waitMs: 2000 }, 'approval-1 approved after 2.00 s', 'review'],
  ['approval.decided with a comment', { type: 'approval.decided', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', decision: 'rejected', waitMs: 65000, comment: 'Shorter,\nplease' }, 'approval-1 rejected after 1 min 05 s: “Shorter, please”', 'review'],
  ['mcp.call', { type: 'mcp.call', nodeId: 'research', entry: 'demo-tools', tool: 'search_articles', callId: 'c1', status: 'ok', durationMs: 4, resultSize: 10 }, 'mcp demo-tools.search_articles ok · 4 ms', 'research'],
  ['a2a.message', { type: 'a2a.message', nodeId: 'writer', entry: 'demo-writer', skill: 'draft', callId: 'c3', direction: 'inbound', size: 120, taskState: 'completed' }, 'a2a demo-writer.draft inbound · 120 bytes · completed', 'writer'],
];

describe('the timeline\'s one line per event', () => {
  it.each(cases)('words %s', (_name, body, summary, node) => {
    const e = event(7, body);
    expect(summarize(e)).toBe(summary);
    expect(eventNode(e)).toBe(node);
  });

  it('has a case for every event type', () => {
    const covered = new Set(cases.map(([, body]) => body['type'] as TraceEventType));
    expect([...covered].sort()).toEqual(
      ['a2a.message', 'approval.decided', 'approval.requested', 'budget.hit', 'loop.iteration', 'mcp.call', 'node.enter', 'node.exit', 'route.taken', 'run.end', 'run.start', 'tool.call'],
    );
  });
});
