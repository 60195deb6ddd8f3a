// How the panel words events: one short line per event for the timeline (`summarize`), the
// node an event is about, and the names of budgets and outcomes as a person reads them.

import { BUDGET_KEYS, type BudgetKey, type Outcome, type TraceEvent } from '../api/trace.ts';
import { formatCount, formatDuration, formatTime } from '../ui/format.ts';

export const BUDGET_NAMES: Readonly<Record<BudgetKey, string>> = {
  maxTokens: 'Tokens',
  maxToolCalls: 'Tool calls',
  maxDelegations: 'Delegations',
  maxRemoteCalls: 'Remote calls',
  timeoutSeconds: 'Time',
};

/** The budgets in the order the panel shows them. */
export const BUDGET_ORDER: readonly BudgetKey[] = BUDGET_KEYS;

/** What each budget counts, for "1,002 tokens". */
export const BUDGET_UNITS: Readonly<Record<BudgetKey, string>> = {
  maxTokens: 'tokens',
  maxToolCalls: 'tool calls',
  maxDelegations: 'delegations',
  maxRemoteCalls: 'remote calls',
  timeoutSeconds: 'of time',
};

/** A budget's amount: "1,000" or, for the timeout (in seconds), "42 s", "5 min 00 s". */
export function budgetAmount(key: BudgetKey, amount: number): string {
  if (key !== 'timeoutSeconds') return formatCount(amount);
  return amount < 60 ? `${Math.round(amount)} s` : formatDuration(Math.round(amount) * 1000);
}

export const OUTCOME_WORDS: Readonly<Record<Outcome, string>> = {
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Cancelled: 'Cancelled',
  BudgetExhausted: 'Budget exhausted',
  Rejected: 'Rejected',
};

/** The node an event is about, if one. */
export function eventNode(event: TraceEvent): string | null {
  switch (event.type) {
    case 'run.start':
      return null;
    case 'run.end':
      return event.error?.node ?? null;
    case 'loop.iteration':
      return event.tail;
    case 'budget.hit':
      return event.nodeId ?? null;
    default:
      return event.nodeId;
  }
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** A text cut to `max` characters, on one line. */
export function clip(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** What an event says, in one short line. */
export function summarize(event: TraceEvent): string {
  switch (event.type) {
    case 'run.start': {
      const parts = [`${event.composition} (${event.pattern}), ${plural(event.nodes, 'node')}`];
      if (event.captureContent) parts.push('content captured');
      if (event.dryRunTools) parts.push('dry run: tools answer with dry-run text');
      return parts.join(' · ');
    }
    case 'run.end': {
      const parts = [OUTCOME_WORDS[event.outcome]];
      if (event.totals.wallTimeMs !== undefined) parts[0] = `${parts[0] ?? ''} in ${formatDuration(event.totals.wallTimeMs)}`;
      if (event.totals.tokens !== undefined) parts.push(plural(event.totals.tokens, 'token'));
      if (event.dropped > 0) parts.push(`${plural(event.dropped, 'event')} dropped`);
      if (event.error != null) parts.push(clip(event.error.node == null ? event.error.message : `at ${event.error.node}: ${event.error.message}`));
      return parts.join(' · ');
    }
    case 'node.enter': {
      const parts = [`entered (${event.kind}${event.model == null ? '' : `, model ${event.model}`})`];
      if (event.parentEntry != null) parts.push('called by its supervisor');
      if (event.screenFlags !== undefined && event.screenFlags.length > 0) parts.push(`screen flagged: ${event.screenFlags.join(', ')}`);
      return parts.join(' · ');
    }
    case 'node.exit': {
      const status = event.status === 'expired' ? 'expired (a rejection)' : event.status;
      const parts = [event.error == null ? status : `${status}: ${clip(event.error, 60)}`];
      if (event.label != null) parts.push(`label ${event.label}`);
      if (event.tokens > 0) parts.push(plural(event.tokens, 'token'));
      if (event.modelCalls > 0) parts.push(plural(event.modelCalls, 'model call'));
      parts.push(formatDuration(event.durationMs));
      return parts.join(' · ');
    }
    case 'loop.iteration':
      return event.stopped
        ? `loop ${event.tail} → ${event.head} reached its cap (${event.max}): the branch ends with the answer under review`
        : `loop ${event.tail} → ${event.head}: round ${event.iteration} of at most ${event.max}`;
    case 'route.taken':
      return event.to == null ? `chose ${event.label}: no edge, the branch ends` : `chose ${event.label} → ${event.to}`;
    case 'tool.call': {
      const parts = [`${event.tool} ${event.status}`, formatDuration(event.durationMs)];
      if (event.dryRun === true) parts.push('dry run');
      if (event.error != null) parts.push(clip(event.error, 60));
      return parts.join(' · ');
    }
    case 'budget.hit':
      return `${BUDGET_NAMES[event.budget]} budget spent: ${budgetAmount(event.budget, event.used)} of ${budgetAmount(event.budget, event.limit)}`;
    case 'approval.requested': {
      const parts = [`${event.kind} ${event.approvalId} waits for a person`, plural(event.size, 'byte'), `expires ${formatTime(event.expiresAt)}`];
      if (!event.complete) parts.push('too long to show whole: it can only be rejected');
      return parts.join(' · ');
    }
    case 'approval.decided': {
      const word = event.decision === 'expired' ? 'expired (a rejection)' : event.decision;
      const text = `${event.approvalId} ${word} after ${formatDuration(event.waitMs)}`;
      return event.comment == null || event.comment === '' ? text : `${text}: “${clip(event.comment, 60)}”`;
    }
    case 'mcp.call':
      return `mcp ${event.entry}.${event.tool} ${event.status} · ${formatDuration(event.durationMs)}`;
    case 'a2a.message': {
      const parts = [`a2a ${event.entry}.${event.skill} ${event.direction}`, plural(event.size, 'byte')];
      if (event.taskState != null) parts.push(event.taskState);
      return parts.join(' · ');
    }
  }
}
