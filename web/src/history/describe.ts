// One trace event in a line of words, for the replay's "current event" and its recent events.
// Sizes and figures only: content (inputs, answers, approval text) is never written here.

import type { TraceEvent } from '../api/trace.ts';
import { formatCount, formatDuration } from '../ui/format.ts';

const BUDGET_NAMES = {
  maxTokens: 'tokens',
  maxToolCalls: 'tool calls',
  maxDelegations: 'delegations',
  maxRemoteCalls: 'remote calls',
  timeoutSeconds: 'time (s)',
} as const;

/** The node an event is about, if any. */
export function nodeOf(event: TraceEvent): string | null {
  switch (event.type) {
    case 'run.start':
    case 'run.end':
      return null;
    case 'loop.iteration':
      return event.head;
    case 'budget.hit':
      return event.nodeId ?? null;
    default:
      return event.nodeId;
  }
}

export function describeEvent(event: TraceEvent): string {
  switch (event.type) {
    case 'run.start':
      return `The run starts: ${event.composition} (${event.pattern}, ${event.nodes} nodes).`;
    case 'run.end':
      return `The run ends: ${event.outcome}${event.error == null ? '' : ` (${event.error.message})`}${event.dropped > 0 ? `, ${formatCount(event.dropped)} events dropped` : ''}.`;
    case 'node.enter':
      return `${event.nodeId} is entered (entry ${event.entry}${event.model == null ? '' : `, model ${event.model}`}).`;
    case 'node.exit':
      return `${event.nodeId} exits ${event.status}: ${formatCount(event.tokens)} tokens, ${formatDuration(event.durationMs)}${event.label == null ? '' : `, “${event.label}”`}${event.error == null ? '' : ` (${event.error})`}.`;
    case 'route.taken':
      return `${event.nodeId} routes “${event.label}”${event.to == null ? '' : ` to ${event.to}`}.`;
    case 'loop.iteration':
      return event.stopped
        ? `The loop ${event.tail} → ${event.head} stops at iteration ${event.iteration} of ${event.max}.`
        : `The loop ${event.tail} → ${event.head} goes round: iteration ${event.iteration} of ${event.max}.`;
    case 'tool.call':
      return `${event.nodeId} calls the tool ${event.tool}: ${event.status}, ${formatDuration(event.durationMs)}${event.dryRun === true ? ' (dry run)' : ''}.`;
    case 'mcp.call':
      return `${event.nodeId} calls the MCP tool ${event.tool}: ${event.status}, ${formatDuration(event.durationMs)}.`;
    case 'a2a.message':
      return `${event.nodeId} ${event.direction === 'outbound' ? 'sends to' : 'hears from'} a remote agent (${event.skill})${event.taskState == null ? '' : `: ${event.taskState}`}.`;
    case 'budget.hit':
      return `Budget hit: ${BUDGET_NAMES[event.budget]} ${formatCount(event.used)} of ${formatCount(event.limit)}${event.nodeId == null ? '' : ` at ${event.nodeId}`}.`;
    case 'approval.requested':
      return `${event.nodeId} asks a person (${event.kind}, ${formatCount(event.size)} bytes to read).`;
    case 'approval.decided':
      return `${event.nodeId}: ${event.decision} after ${formatDuration(event.waitMs)}.`;
  }
}
