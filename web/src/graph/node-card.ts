// What a node of the run graph shows, and says to a screen reader: its id, kind and state in
// words (never colour alone), what it spent, and a loop head's round. Built from the run
// model's node (`NodeView`) and the loop it heads, so the card and its label agree.

import type { NodeState, NodeView } from '../run/model.ts';
import { BUDGET_NAMES } from '../run/summary.ts';
import { formatCount, formatDuration } from '../ui/format.ts';

export interface LoopRound {
  /** Times the back edge was taken in this entry of the loop. */
  readonly iteration: number;
  readonly max: number;
  /** True once the loop reached its cap. */
  readonly stopped: boolean;
}

export interface NodeCardData extends Record<string, unknown> {
  readonly id: string;
  readonly kind: string;
  readonly state: NodeState;
  readonly entries: number;
  readonly tokens: number;
  readonly durationMs: number;
  readonly calls: number;
  readonly model: string | null;
  /** The label the node last answered with (a route, an approval's outcome). */
  readonly label: string | null;
  /** The loop this node heads, if any. */
  readonly loop: LoopRound | null;
  /** The budget that ran out while it ran, in words. */
  readonly budgetHit: string | null;
}

export const STATE_WORDS: Readonly<Record<NodeState, string>> = {
  idle: 'not reached',
  running: 'running',
  awaiting: 'awaiting you',
  ok: 'ok',
  failed: 'failed',
  stopped: 'stopped',
  expired: 'expired',
  skipped: 'skipped',
};

/** A mark beside the state's word (the word says it; the mark helps the eye). */
export const STATE_MARKS: Readonly<Record<NodeState, string>> = {
  idle: '○',
  running: '●',
  awaiting: '◆',
  ok: '✓',
  failed: '✗',
  stopped: '■',
  expired: '✗',
  skipped: '–',
};

export function nodeCardData(view: NodeView, loop: LoopRound | null): NodeCardData {
  return {
    id: view.id,
    kind: view.kind,
    state: view.state,
    entries: view.entries,
    tokens: view.tokens,
    durationMs: view.durationMs,
    calls: view.calls,
    model: view.model,
    label: view.label,
    loop,
    budgetHit: view.budgetHit === null ? null : BUDGET_NAMES[view.budgetHit],
  };
}

/**
 * "120 tokens · 0.90 s · 2 calls" once the node has finished an entry; while its first entry
 * is open, what it is doing; null for a node not entered.
 */
export function metricsText(data: NodeCardData): string | null {
  if (data.entries === 0) return null;
  const finished = data.tokens > 0 || data.durationMs > 0 || data.entries > 1;
  if (!finished && data.state === 'awaiting') return 'waiting for a decision';
  if (!finished && data.state === 'running') return data.calls > 0 ? `working · ${formatCount(data.calls)} ${data.calls === 1 ? 'call' : 'calls'} so far` : 'working…';
  const parts = [`${formatCount(data.tokens)} tokens`, formatDuration(data.durationMs)];
  if (data.calls > 0) parts.push(`${formatCount(data.calls)} ${data.calls === 1 ? 'call' : 'calls'}`);
  return parts.join(' · ');
}

/** "loop 1/2", "loop 2/2, stopped" */
export function loopText(loop: LoopRound): string {
  return loop.stopped ? `loop ${loop.max}/${loop.max}, cap reached` : `loop ${Math.min(loop.iteration, loop.max)}/${loop.max}`;
}

/** What a screen reader says for the node: id, kind, state, then what it spent. */
export function nodeAriaLabel(data: NodeCardData): string {
  const parts = [`${data.id}, ${data.kind}, ${STATE_WORDS[data.state]}`];
  if (data.entries > 1) parts.push(`entered ${data.entries} times`);
  const metrics = metricsText(data);
  if (metrics !== null) parts.push(metrics);
  if (data.label !== null) parts.push(`last label ${data.label}`);
  if (data.loop !== null) parts.push(loopText(data.loop));
  if (data.budgetHit !== null) parts.push(`${data.budgetHit} budget ran out here`);
  return parts.join('; ');
}
