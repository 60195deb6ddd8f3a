// The body of a run graph node (the canvas wraps it with its handles, `FlowNode.tsx`): id and
// kind, the state in words with a mark, what it spent, the loop round of a loop head. The
// running node has a halo that pulses only when motion is welcome; a node waiting for a
// person says "awaiting you".

import type { NodeState } from '../run/model.ts';
import { loopText, metricsText, STATE_MARKS, STATE_WORDS, type NodeCardData } from './node-card.ts';

const FRAME: Readonly<Record<NodeState, string>> = {
  idle: 'border-slate-400 bg-white dark:border-slate-500 dark:bg-slate-900',
  running: 'border-sky-600 bg-sky-50 dark:border-sky-300 dark:bg-sky-950',
  awaiting: 'border-amber-600 bg-amber-50 dark:border-amber-300 dark:bg-amber-950',
  ok: 'border-emerald-700 bg-white dark:border-emerald-400 dark:bg-slate-900',
  failed: 'border-red-700 bg-red-50 dark:border-red-400 dark:bg-red-950',
  stopped: 'border-amber-700 bg-white dark:border-amber-400 dark:bg-slate-900',
  expired: 'border-red-700 bg-red-50 dark:border-red-400 dark:bg-red-950',
  skipped: 'border-dashed border-slate-400 bg-slate-50 dark:border-slate-600 dark:bg-slate-950',
};

const BADGE: Readonly<Record<NodeState, string>> = {
  idle: 'text-slate-700 dark:text-slate-300',
  running: 'bg-sky-700 text-white dark:bg-sky-300 dark:text-slate-950',
  awaiting: 'bg-amber-700 text-white dark:bg-amber-300 dark:text-slate-950',
  ok: 'text-emerald-800 dark:text-emerald-300',
  failed: 'bg-red-700 text-white dark:bg-red-300 dark:text-slate-950',
  stopped: 'text-amber-800 dark:text-amber-300',
  expired: 'text-red-800 dark:text-red-300',
  skipped: 'text-slate-600 dark:text-slate-400',
};

export function NodeCard({ data, selected }: { readonly data: NodeCardData; readonly selected: boolean }) {
  const metrics = metricsText(data);
  return (
    <div
      data-state={data.state}
      className={`relative flex h-full w-full flex-col justify-between gap-1 rounded-lg border-2 px-3 py-2 text-left text-slate-900 shadow-sm dark:text-slate-100 ${FRAME[data.state]} ${selected ? 'outline-3 outline-offset-2 outline-sky-700 dark:outline-sky-300' : ''}`}
    >
      {data.state === 'running' ? (
        <span aria-hidden="true" className="pointer-events-none absolute -inset-2 rounded-xl border-4 border-sky-400/60 motion-safe:animate-pulse dark:border-sky-400/50" />
      ) : data.state === 'awaiting' ? (
        <span aria-hidden="true" className="pointer-events-none absolute -inset-2 rounded-xl border-4 border-amber-400/70 dark:border-amber-300/50" />
      ) : null}
      <div className="flex items-baseline justify-between gap-2">
        <span className="truncate font-mono text-sm font-semibold" title={data.id}>
          {data.id}
        </span>
        <span className="shrink-0 text-xs text-slate-600 dark:text-slate-400">{data.kind}</span>
      </div>
      <div className="flex items-center justify-between gap-2 text-xs">
        <span className={`inline-flex items-center gap-1 rounded px-1.5 py-0.5 font-semibold ${BADGE[data.state]}`}>
          <span aria-hidden="true">{STATE_MARKS[data.state]}</span>
          {STATE_WORDS[data.state]}
        </span>
        {data.loop === null ? null : (
          <span className="rounded border border-slate-400 px-1.5 py-0.5 font-mono dark:border-slate-500" title="Times the loop back to this node was taken, of its cap">
            {loopText(data.loop)}
          </span>
        )}
      </div>
      <div className="truncate text-xs text-slate-700 dark:text-slate-300">
        {metrics ?? (data.model === null ? ' ' : `model ${data.model}`)}
      </div>
      <div className="flex justify-between gap-2 truncate text-xs">
        <span className="truncate text-slate-700 dark:text-slate-300">
          {data.label === null ? (data.entries > 1 ? `entered ${data.entries}×` : ' ') : `→ ${data.label}`}
        </span>
        {data.budgetHit === null ? null : <span className="font-semibold text-red-800 dark:text-red-300">{data.budgetHit} budget spent</span>}
      </div>
    </div>
  );
}
