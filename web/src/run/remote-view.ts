// What the run panel's A2A and MCP tabs say about each call and each registry entry the run uses
// (rules 12.47–12.51), as plain words: the components only lay these out.

import { isRecord } from '../api/http.ts';
import type { RegistryItem } from '../api/registry.ts';
import { formatCount, formatDuration } from '../ui/format.ts';
import type { A2aCall, A2aOutcome, A2aSent, Content, McpCallView } from './remote-calls.ts';

const OUTCOME_WORDS: Readonly<Record<A2aOutcome, string>> = {
  'in-flight': 'waiting for the remote agent',
  asking: 'waiting for a person to answer the agent’s question',
  replied: 'replied',
  completed: 'completed',
  stopped: 'stopped',
  'not-sent': 'not sent',
};

/** Where an A2A call stands, in words: "completed", "stopped at failed", "not sent". */
export function a2aOutcomeText(call: A2aCall): string {
  if (call.outcome !== 'stopped') return OUTCOME_WORDS[call.outcome];
  const why = call.verdict === null || call.verdict.status === 'ok' ? '' : ` (${call.verdict.status})`;
  return call.stoppedAt === null ? `stopped before the task reached any state${why}` : `stopped at ${call.stoppedAt}${why}`;
}

function bytes(n: number): string {
  return n === 1 ? '1 byte' : `${formatCount(n)} bytes`;
}

/** The one line a call's button reads: its number, node, remote and where it stands. */
export function a2aSummary(call: A2aCall, index: number): string {
  const time = call.durationMs === null || call.outcome === 'in-flight' || call.outcome === 'asking' || call.outcome === 'not-sent' ? '' : `, ${formatDuration(call.durationMs)}`;
  return `Call ${index + 1}: ${call.nodeId} → ${call.entry}.${call.skill}, ${a2aOutcomeText(call)}${time}`;
}

/** A message sent to the remote: always one text part (rule 6.4), by its JSON-RPC method when the event names it (12.47). */
export function sentText(sent: A2aSent): string {
  const by = sent.method === null ? '' : ` by ${sent.method}`;
  return `${sent.kind === 'request' ? 'Request' : 'A person’s answer to its question'}${by}: one text part, ${bytes(sent.size)}`;
}

/** The task's states in order, or why there are none. */
export function statesText(call: A2aCall): string {
  if (call.states.length > 0) return call.states.map((s) => s.state).join(' → ');
  if (call.outcome === 'not-sent') return 'none: nothing was sent';
  if (call.reply !== null) return 'none: the agent answered with a message, not a task';
  return 'none yet';
}

/** The reply in words: its size and final state, or why there is none yet. */
export function replyText(call: A2aCall): string {
  const reply = call.reply;
  if (reply === null) {
    if (call.outcome === 'not-sent') return 'none: nothing was sent';
    if (call.outcome === 'stopped') return 'none: the call ended without one';
    return 'none yet';
  }
  const size = reply.size === 0 ? 'nothing came back' : `one text, ${bytes(reply.size)}`;
  return reply.state === null ? size : `${size}, the task ${reply.state}`;
}

/** Why a content field shows no text (null when it has text). */
export function contentNote(content: Content): string | null {
  switch (content.kind) {
    case 'text':
      return null;
    case 'empty':
      return 'Empty.';
    case 'off':
      return 'Not recorded: this run does not capture content.';
    case 'capped':
      return 'Not recorded: the run had captured as much content as it may.';
  }
}

/** The one line an MCP call's button reads. */
export function mcpSummary(call: McpCallView, index: number): string {
  const head = `Call ${index + 1}: ${call.nodeId} → ${call.entry}.${call.tool}`;
  if (!call.sent) {
    const status = call.verdict?.dryRun === true ? 'answered by the dry-run tool, not sent' : `not sent (${call.verdict?.status ?? 'unknown'})`;
    return `${head}, ${status}`;
  }
  const time = call.durationMs === null ? '' : ` in ${formatDuration(call.durationMs)}`;
  const size = call.resultSize === null ? '' : `, ${bytes(call.resultSize)} back`;
  return `${head}, ${call.status ?? 'unknown'}${time}${size}`;
}

/** An MCP entry's transport (`spec.mcp.transport`; StreamableHttp when not set). */
export function transportText(item: RegistryItem): string | null {
  const mcp = item.spec['mcp'];
  if (!isRecord(mcp)) return null;
  const transport = mcp['transport'];
  if (transport === undefined || transport === null || transport === 'StreamableHttp') return 'Streamable HTTP';
  if (transport === 'Sse') return 'HTTP with server-sent events (legacy SSE)';
  return typeof transport === 'string' ? transport : 'unknown';
}

/** The entries named, each with its RegistryEntry when the caller may read it. */
export function entriesOf(names: readonly string[], items: readonly RegistryItem[]): readonly { readonly name: string; readonly item: RegistryItem | null }[] {
  return names.map((name) => ({ name, item: items.find((i) => i.name === name) ?? null }));
}

/** Whether calls to `entry` act on the world (its `effect: Acting`, rule 12.50). */
export function isActing(items: readonly RegistryItem[], entry: string): boolean {
  return items.some((i) => i.name === entry && i.effect === 'Acting');
}
