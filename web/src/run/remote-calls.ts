// A run's remote calls as its A2A and MCP tabs show them (rules 12.47, 12.48, 12.51), folded
// from its trace events. Pure and lenient: every field is read with a type check, so an event of
// an odd shape gives blanks, never a throw.
//
// What the runner emits, and when (runner/src/a2a/client/agent.rs, runner/src/mcp/tool.rs,
// runner/src/engine/agent.rs):
//
// - One A2A call of a node's model is a run of `a2a.message` events that all carry the same
//   `callId` (the model's own id for the tool call, `ToolContext::call_id`), node, entry and skill:
//   1. `outbound`, no `taskState`: the request, sent as one message of one text part (rule 6.4);
//      `size` is its length in bytes, `text` the request with content capture on.
//   2. `inbound` with a `taskState` and no `text` (`size` 0): each time the remote task's state
//      changes (submitted, working, input-required…); the same state is never sent twice in a row.
//   3. `outbound` again for each answer a person gave to the remote's question (input-required,
//      4.29), after that person's `approval.decided` (kind `Input`, approved).
//   4. `inbound` once when the tool call returns (rule 6.17): the reply. `size` is the reply's
//      length (0 when nothing came back), `text` the reply as the model saw it with capture on
//      (12.48: the reply event arrives when the tool call returns), `taskState` the task's final
//      state, absent when the remote answered with a plain message or the call failed.
//   Then the engine's `tool.call` (reference `a2a:<entry>.<skill>`) says how the call ended and
//   how long it took. A call refused or blocked before anything was sent (a budget spent, an
//   acting call the owner did not confirm, a card refused) has that `tool.call` and no
//   `a2a.message`; a cancelled call has no reply. An outbound message names the JSON-RPC
//   method it went by (`method`: SendMessage, or SendStreamingMessage when the card streams);
//   events recorded before runners said so have none, and none is shown.
// - Telling the reply from a state change: the reply carries `text` when capture is on, and
//   otherwise a `size` over 0, no `taskState`, or the state the call already stands at (a state
//   change never repeats one). A reply that fits none of these (capture off, nothing came back,
//   a final state never seen before) is closed by the call's `tool.call` instead.
// - Pairing: the events of one call carry one `callId`, so replies, states and answers pair by
//   `callId` (with node, entry and skill). Where they cannot (a provider that gives every call
//   the same id, or events with none), rule 12.48 decides: an inbound event goes to the oldest
//   open call of the same node to the same skill.
// - MCP: one `mcp.call` per call, when it returns (7.4), with its status, duration, result size
//   and, with capture on, its arguments and result (the result left out when it is empty). The
//   engine's `tool.call` (reference `mcp:<entry>.<tool>`) follows; one with no `mcp.call` before
//   it was never sent (refused before it ran, or answered by the dry-run tool).

import type { TraceEvent } from '../api/trace.ts';
import { between } from '../ui/format.ts';

/** What a content field of an event holds (rules 8.4, 8.5, 8.9). */
export type Content =
  | { readonly kind: 'text'; readonly text: string }
  /** Captured, and there was nothing. */
  | { readonly kind: 'empty' }
  /** The run does not capture content. */
  | { readonly kind: 'off' }
  /** The run captures content but its cap for the run was reached before this (8.9). */
  | { readonly kind: 'capped' };

/** The verdict of the engine's `tool.call` on a call. */
export interface ToolVerdict {
  readonly status: string;
  readonly durationMs: number | null;
  readonly error: string | null;
  readonly dryRun: boolean;
}

export interface A2aSent {
  /** The request, or a person's answer to the remote's question. */
  readonly kind: 'request' | 'answer';
  readonly seq: number;
  readonly ts: string;
  /** Bytes of its one text part. */
  readonly size: number;
  /** The JSON-RPC method it went by, when the event says (12.47). */
  readonly method: string | null;
  readonly content: Content;
}

export interface A2aState {
  readonly state: string;
  readonly seq: number;
  readonly ts: string;
}

export interface A2aReply {
  readonly seq: number;
  readonly ts: string;
  readonly size: number;
  /** The task's final state; null for a plain message reply or a failed call. */
  readonly state: string | null;
  readonly content: Content;
}

/**
 * Where a call stands: waiting for the remote (`in-flight`), for a person's answer to its
 * question (`asking`), replied with no verdict yet (`replied`), `completed`, `stopped` short
 * (see `stoppedAt`), or `not-sent` (refused or blocked before anything left).
 */
export type A2aOutcome = 'in-flight' | 'asking' | 'replied' | 'completed' | 'stopped' | 'not-sent';

export interface A2aCall {
  /** Stable for the run: the seq of its first event. */
  readonly key: string;
  readonly nodeId: string;
  readonly entry: string;
  readonly skill: string;
  readonly callId: string;
  /** The request first, then any answers, in order. */
  readonly sent: readonly A2aSent[];
  /** The task's states in order (12.47). */
  readonly states: readonly A2aState[];
  readonly reply: A2aReply | null;
  readonly verdict: ToolVerdict | null;
  readonly outcome: A2aOutcome;
  /** For a stopped call, the last task state it reached (null when it reached none). */
  readonly stoppedAt: string | null;
  readonly durationMs: number | null;
}

export interface McpCallView {
  readonly key: string;
  readonly seq: number;
  readonly nodeId: string;
  readonly entry: string;
  readonly tool: string;
  readonly callId: string;
  /** ok, error, refused or cancelled; null for a call never sent (see `verdict`). */
  readonly status: string | null;
  readonly durationMs: number | null;
  readonly resultSize: number | null;
  readonly arguments: Content;
  readonly result: Content;
  /** True when the call reached the server (it has its `mcp.call`). */
  readonly sent: boolean;
  readonly verdict: ToolVerdict | null;
}

export interface RemoteCalls {
  readonly a2a: readonly A2aCall[];
  readonly mcp: readonly McpCallView[];
  readonly captured: boolean;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

/** A content field as recorded: its text, or why there is none. `size` null: not known. */
export function contentOf(captured: boolean, value: unknown, size: number | null): Content {
  if (typeof value === 'string') return value === '' ? { kind: 'empty' } : { kind: 'text', text: value };
  if (!captured) return { kind: 'off' };
  return size === 0 ? { kind: 'empty' } : { kind: 'capped' };
}

/** `a2a:<entry>.<name>` or `mcp:<entry>.<name>`, split as the validator splits it (at the first dot). */
export function parseToolRef(reference: unknown): { readonly kind: 'a2a' | 'mcp'; readonly entry: string; readonly name: string } | null {
  const ref = str(reference);
  if (ref === null) return null;
  const match = /^(a2a|mcp):([^.]+)\.(.+)$/.exec(ref);
  if (match === null) return null;
  const [, kind, entry, name] = match;
  if ((kind !== 'a2a' && kind !== 'mcp') || entry === undefined || name === undefined) return null;
  return { kind, entry, name };
}

/** How the engine records a call id it does not keep (`recorded_call_id`): then only a size. */
function unrecordedId(callId: string): boolean {
  return callId.startsWith('(call id of ');
}

interface A2aDraft {
  key: string;
  nodeId: string;
  entry: string;
  skill: string;
  callId: string;
  sent: A2aSent[];
  states: A2aState[];
  reply: A2aReply | null;
  verdict: ToolVerdict | null;
  startTs: string | null;
  lastTs: string | null;
}

interface McpDraft {
  view: McpCallView;
  matched: boolean;
}

function lastState(call: A2aDraft): string | null {
  return call.states.at(-1)?.state ?? null;
}

function isOpen(call: A2aDraft): boolean {
  return call.reply === null && call.verdict === null;
}

function verdictOf(event: Record<string, unknown>): ToolVerdict {
  return { status: str(event['status']) ?? 'unknown', durationMs: num(event['durationMs']), error: str(event['error']), dryRun: event['dryRun'] === true };
}

/**
 * The oldest of `calls` that `callId` pairs with; where none does, and `fallback` allows it, the
 * oldest of them all (rule 12.48: the oldest open request of the same node to the same skill).
 */
function pair<T extends { readonly callId: string }>(calls: readonly T[], callId: string, fallback: boolean): T | undefined {
  return calls.find((c) => c.callId === callId) ?? (fallback ? calls[0] : undefined);
}

function outcomeOf(call: A2aDraft, ended: boolean): { readonly outcome: A2aOutcome; readonly stoppedAt: string | null } {
  const reached = call.reply?.state ?? lastState(call);
  if (call.sent.length === 0 && call.states.length === 0 && call.reply === null) return { outcome: 'not-sent', stoppedAt: null };
  if (call.verdict !== null) return call.verdict.status === 'ok' ? { outcome: 'completed', stoppedAt: null } : { outcome: 'stopped', stoppedAt: reached };
  if (call.reply !== null) {
    if (call.reply.state === 'completed') return { outcome: 'completed', stoppedAt: null };
    return call.reply.state === null ? { outcome: 'replied', stoppedAt: null } : { outcome: 'stopped', stoppedAt: reached };
  }
  if (ended) return { outcome: 'stopped', stoppedAt: reached };
  return { outcome: lastState(call) === 'input-required' ? 'asking' : 'in-flight', stoppedAt: null };
}

/** Folds a run's events (in seq order) into its A2A and MCP calls, in the order they started. */
export function foldRemoteCalls(events: readonly TraceEvent[], capturedHint = false): RemoteCalls {
  let captured = capturedHint;
  let ended = false;
  const a2a: A2aDraft[] = [];
  const mcp: McpDraft[] = [];
  // Approved answers to remote questions not yet sent, per node (an answer follows its decision).
  const answersDue = new Map<string, number>();

  for (const event of events) {
    const raw = event as unknown as Record<string, unknown>;
    switch (event.type) {
      case 'run.start':
        captured = raw['captureContent'] === true;
        break;
      case 'run.end':
        ended = true;
        break;
      case 'approval.decided':
        if (raw['kind'] === 'Input' && raw['decision'] === 'approved') {
          const node = str(raw['nodeId']) ?? '';
          answersDue.set(node, (answersDue.get(node) ?? 0) + 1);
        }
        break;
      case 'a2a.message': {
        const nodeId = str(raw['nodeId']) ?? '';
        const entry = str(raw['entry']) ?? '';
        const skill = str(raw['skill']) ?? '';
        const callId = str(raw['callId']) ?? '';
        const size = num(raw['size']) ?? 0;
        const state = str(raw['taskState']);
        const text = raw['text'];
        const direction = raw['direction'];
        const method = str(raw['method']);
        if (direction !== 'outbound' && direction !== 'inbound') break;
        const same = a2a.filter((c) => isOpen(c) && c.nodeId === nodeId && c.entry === entry && c.skill === skill);
        if (direction === 'outbound') {
          const due = answersDue.get(nodeId) ?? 0;
          const asking = due > 0 ? pair(same.filter((c) => lastState(c) === 'input-required'), callId, false) : undefined;
          if (asking !== undefined) {
            answersDue.set(nodeId, due - 1);
            asking.sent.push({ kind: 'answer', seq: event.seq, ts: event.ts, size, method, content: contentOf(captured, text, size) });
            asking.lastTs = event.ts;
          } else {
            a2a.push({ key: `a2a-${event.seq}`, nodeId, entry, skill, callId, sent: [{ kind: 'request', seq: event.seq, ts: event.ts, size, method, content: contentOf(captured, text, size) }], states: [], reply: null, verdict: null, startTs: event.ts, lastTs: event.ts });
          }
          break;
        }
        let call = pair(same, callId, true);
        if (call === undefined) {
          // An inbound event with no request before it (its request was not stored): a call of its own.
          call = { key: `a2a-${event.seq}`, nodeId, entry, skill, callId, sent: [], states: [], reply: null, verdict: null, startTs: event.ts, lastTs: event.ts };
          a2a.push(call);
        }
        call.lastTs = event.ts;
        const isReply = typeof text === 'string' || size > 0 || state === null || state === lastState(call);
        if (state !== null && state !== lastState(call)) call.states.push({ state, seq: event.seq, ts: event.ts });
        if (isReply) call.reply = { seq: event.seq, ts: event.ts, size, state, content: contentOf(captured, text, size) };
        break;
      }
      case 'mcp.call': {
        const resultSize = num(raw['resultSize']);
        mcp.push({
          matched: false,
          view: {
            key: `mcp-${event.seq}`,
            seq: event.seq,
            nodeId: str(raw['nodeId']) ?? '',
            entry: str(raw['entry']) ?? '',
            tool: str(raw['tool']) ?? '',
            callId: str(raw['callId']) ?? '',
            status: str(raw['status']) ?? 'unknown',
            durationMs: num(raw['durationMs']),
            resultSize,
            arguments: contentOf(captured, raw['arguments'], null),
            result: contentOf(captured, raw['result'], resultSize),
            sent: true,
            verdict: null,
          },
        });
        break;
      }
      case 'tool.call': {
        const ref = parseToolRef(raw['reference']);
        if (ref === null) break;
        const nodeId = str(raw['nodeId']) ?? '';
        const callId = str(raw['callId']) ?? '';
        const verdict = verdictOf(raw);
        if (ref.kind === 'a2a') {
          const candidates = a2a.filter((c) => c.verdict === null && c.nodeId === nodeId && c.entry === ref.entry && c.skill === ref.name);
          const call = pair(candidates, callId, unrecordedId(callId));
          if (call === undefined) {
            a2a.push({ key: `a2a-${event.seq}`, nodeId, entry: ref.entry, skill: ref.name, callId, sent: [], states: [], reply: null, verdict, startTs: event.ts, lastTs: event.ts });
          } else {
            call.verdict = verdict;
            call.lastTs = event.ts;
          }
        } else {
          const candidates = mcp.filter((c) => !c.matched && c.view.nodeId === nodeId && c.view.entry === ref.entry && c.view.tool === ref.name);
          const call = pair(
            candidates.map((c) => ({ callId: c.view.callId, draft: c })),
            callId,
            unrecordedId(callId),
          );
          if (call === undefined) {
            mcp.push({
              matched: true,
              view: { key: `mcp-${event.seq}`, seq: event.seq, nodeId, entry: ref.entry, tool: ref.name, callId, status: null, durationMs: verdict.durationMs, resultSize: null, arguments: contentOf(captured, raw['arguments'], null), result: { kind: 'empty' }, sent: false, verdict },
            });
          } else {
            call.draft.matched = true;
            call.draft.view = { ...call.draft.view, verdict };
          }
        }
        break;
      }
      default:
        break;
    }
  }

  return {
    captured,
    a2a: a2a.map((c) => {
      const { outcome, stoppedAt } = outcomeOf(c, ended);
      const end = c.reply?.ts ?? (c.verdict === null ? null : c.lastTs);
      return {
        key: c.key,
        nodeId: c.nodeId,
        entry: c.entry,
        skill: c.skill,
        callId: c.callId,
        sent: c.sent,
        states: c.states,
        reply: c.reply,
        verdict: c.verdict,
        outcome,
        stoppedAt,
        durationMs: c.verdict?.durationMs ?? between(c.startTs, end),
      };
    }),
    mcp: mcp.map((c) => c.view),
  };
}

/** The registry entries a run uses, by kind: the tools its spec's nodes name, then any its events name. */
export function usedEntries(toolRefs: Iterable<string>, calls: RemoteCalls): { readonly a2a: readonly string[]; readonly mcp: readonly string[] } {
  const a2a = new Set<string>();
  const mcp = new Set<string>();
  for (const reference of toolRefs) {
    const ref = parseToolRef(reference);
    if (ref !== null) (ref.kind === 'a2a' ? a2a : mcp).add(ref.entry);
  }
  for (const c of calls.a2a) if (c.entry !== '') a2a.add(c.entry);
  for (const c of calls.mcp) if (c.entry !== '') mcp.add(c.entry);
  const sorted = (s: Set<string>) => [...s].sort((x, y) => x.localeCompare(y));
  return { a2a: sorted(a2a), mcp: sorted(mcp) };
}
