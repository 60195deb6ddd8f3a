// Small pieces the history, replay and compare pages share: a run's phase and a node's state as
// words with a colour (the word always says it; the colour only helps), a figure or a dash.

import { PHASE_WORDS, type RunPhase } from '../api/runs.ts';
import type { NodeState } from '../run/model.ts';
import { formatCount, formatDuration } from '../ui/format.ts';

const badge = 'inline-block rounded-full border px-2 py-0.5 text-sm font-medium whitespace-nowrap';

const GOOD = 'border-emerald-700 bg-emerald-50 text-emerald-900 dark:border-emerald-400 dark:bg-emerald-950 dark:text-emerald-100';
const BAD = 'border-red-700 bg-red-50 text-red-900 dark:border-red-400 dark:bg-red-950 dark:text-red-100';
const LIVE = 'border-sky-700 bg-sky-50 text-sky-900 dark:border-sky-400 dark:bg-sky-950 dark:text-sky-100';
const WAIT = 'border-amber-700 bg-amber-50 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100';
const QUIET = 'border-slate-400 bg-slate-50 text-slate-800 dark:border-slate-500 dark:bg-slate-800 dark:text-slate-100';

const PHASE_TONE: Record<RunPhase, string> = {
  Pending: QUIET,
  Running: LIVE,
  AwaitingApproval: WAIT,
  Succeeded: GOOD,
  Failed: BAD,
  Cancelled: QUIET,
  BudgetExhausted: BAD,
  Rejected: BAD,
};

export function phaseLabel(phase: RunPhase | null): string {
  return phase === null ? 'Unknown' : PHASE_WORDS[phase];
}

/** A run's phase (or outcome, which is its final phase). */
export function PhaseBadge({ phase }: { readonly phase: RunPhase | null }) {
  return <span className={`${badge} ${phase === null ? QUIET : PHASE_TONE[phase]}`}>{phaseLabel(phase)}</span>;
}

const STATE: Record<NodeState, { readonly label: string; readonly tone: string }> = {
  idle: { label: 'not yet', tone: QUIET },
  running: { label: 'running', tone: LIVE },
  awaiting: { label: 'awaiting a person', tone: WAIT },
  ok: { label: 'ok', tone: GOOD },
  failed: { label: 'failed', tone: BAD },
  stopped: { label: 'stopped', tone: BAD },
  expired: { label: 'expired', tone: BAD },
  skipped: { label: 'skipped', tone: QUIET },
};

export function NodeStateBadge({ state }: { readonly state: NodeState }) {
  return <span className={`${badge} ${STATE[state].tone}`}>{STATE[state].label}</span>;
}

/** A number as the unit writes it, or a dash (with words for a screen reader) when unknown. */
export function FigureText({ value, unit = 'count' }: { readonly value: number | null; readonly unit?: 'count' | 'duration' }) {
  if (value === null) {
    return (
      <>
        <span aria-hidden="true">–</span>
        <span className="sr-only">not known</span>
      </>
    );
  }
  return <>{unit === 'duration' ? formatDuration(value) : formatCount(value)}</>;
}

/** Table cell classes: numbers right-aligned in tabular figures. */
export const numCell = 'px-3 py-1.5 text-right tabular-nums whitespace-nowrap';
export const textCell = 'px-3 py-1.5 text-left';
export const headCell = 'px-3 py-1.5 text-left font-semibold';
export const numHeadCell = 'px-3 py-1.5 text-right font-semibold';
export const table = 'w-full border-collapse text-sm [&_tbody_tr]:border-t [&_tbody_tr]:border-slate-200 dark:[&_tbody_tr]:border-slate-700';
export const caption = 'mb-2 text-left text-base font-semibold';
