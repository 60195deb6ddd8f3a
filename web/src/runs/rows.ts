// What each cell of the runs table says about a run, in words (pure, so it is tested apart
// from the markup).

import { isTerminal, type Run } from '../api/runs.ts';
import { between, formatCount, formatDuration } from '../ui/format.ts';

/** A run that may still change: not ended (a run with no phase yet is about to start). */
export function isLive(run: Run): boolean {
  return !isTerminal(run.phase);
}

/**
 * The Composition and revision a run runs: what it recorded once started, else what it asked
 * for ("human-review", revision 3 or null for the newest), or null for an inline composition.
 */
export function compositionOf(run: Run): { readonly name: string; readonly revision: number | null } | null {
  if (run.compositionRef === null) return null;
  return { name: run.compositionRef.name, revision: run.compositionRef.revision ?? run.composition?.revision ?? null };
}

/** Milliseconds from start to completion, or to `now` for a live run; null before it starts. */
export function durationOf(run: Run, now: number): number | null {
  if (run.startTime === null) return null;
  if (run.completionTime !== null) return between(run.startTime, run.completionTime);
  if (!isLive(run)) return null;
  const start = Date.parse(run.startTime);
  return Number.isNaN(start) ? null : Math.max(0, now - start);
}

/** "3 min 05 s", "12.4 s so far" for a live run, "–" when unknown. */
export function durationText(run: Run, now: number): string {
  const ms = durationOf(run, now);
  if (ms === null) return '–';
  return run.completionTime === null ? `${formatDuration(ms)} so far` : formatDuration(ms);
}

/** The run's tokens (status.totals), or "–" before any are counted. */
export function tokensText(run: Run): string {
  return run.totals === null ? '–' : formatCount(run.totals.tokens);
}

/** "1 approval waiting", "2 approvals waiting". */
export function waitingText(count: number): string {
  return `${count} ${count === 1 ? 'approval' : 'approvals'} waiting`;
}

/** Why a run ended badly or has not started, when its status says. */
export function reasonOf(run: Run): string | null {
  if (run.error !== null && run.error.message !== '') return run.error.node === null ? run.error.message : `${run.error.node}: ${run.error.message}`;
  if (run.phase === null || run.phase === 'Pending') return run.message;
  return null;
}
