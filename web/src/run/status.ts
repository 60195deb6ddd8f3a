// What the panel says about the run as a whole: its phase as the events tell it (fresher than
// the run object read once), and how its events are coming in (rules 12.43 and 12.44).

import type { Problem } from '../api/http.ts';
import { tokenRefused } from '../app/session.tsx';
import { isTerminal, type Run, type RunPhase } from '../api/runs.ts';
import { formatDuration } from '../ui/format.ts';
import type { RunModel } from './model.ts';
import type { FeedState } from './useRunFeed.ts';

/** The run's phase: its outcome once it ended, awaiting while an approval waits, running once started; else what the run object says. */
export function livePhase(run: Run | null, model: RunModel): RunPhase | null {
  if (model.end !== null) return model.end.outcome;
  if (run !== null && isTerminal(run.phase)) return run.phase;
  if (model.pendingApprovals().length > 0) return 'AwaitingApproval';
  if (model.start !== null) return 'Running';
  return run?.phase ?? null;
}

export { PHASE_WORDS } from '../api/runs.ts';

export const PHASE_BADGE: Readonly<Record<RunPhase, string>> = {
  Pending: 'border-slate-500 bg-slate-100 text-slate-900 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-100',
  Running: 'border-sky-700 bg-sky-100 text-sky-950 dark:border-sky-300 dark:bg-sky-900 dark:text-sky-50',
  AwaitingApproval: 'border-amber-700 bg-amber-100 text-amber-950 dark:border-amber-300 dark:bg-amber-900 dark:text-amber-50',
  Succeeded: 'border-emerald-700 bg-emerald-100 text-emerald-950 dark:border-emerald-300 dark:bg-emerald-900 dark:text-emerald-50',
  Failed: 'border-red-700 bg-red-100 text-red-950 dark:border-red-300 dark:bg-red-900 dark:text-red-50',
  Cancelled: 'border-slate-500 bg-slate-100 text-slate-900 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-100',
  BudgetExhausted: 'border-red-700 bg-red-100 text-red-950 dark:border-red-300 dark:bg-red-900 dark:text-red-50',
  Rejected: 'border-red-700 bg-red-100 text-red-950 dark:border-red-300 dark:bg-red-900 dark:text-red-50',
};

export type Tone = 'live' | 'busy' | 'done' | 'warning' | 'error';

export interface StateLine {
  readonly tone: Tone;
  readonly text: string;
  /** Whether Reconnect is worth offering. */
  readonly reconnect: boolean;
}

function said(problem: Problem): string {
  return problem.message.replace(/\.$/, '');
}

/**
 * How the events are coming in, in a sentence. It is a live region: it changes with the
 * stream's state, never with each event (the timeline counts those).
 */
export function feedStateLine(state: FeedState, events: number): StateLine | null {
  const held = `${events.toLocaleString('en')} ${events === 1 ? 'event' : 'events'}`;
  if (state.kind === 'idle') return null;
  if (state.kind === 'pages') {
    if (state.reading) return { tone: 'busy', text: "Reading the run's stored events…", reconnect: false };
    if (state.problem !== null) return { tone: 'error', text: `Reading the stored events failed (${state.problem.status}): ${said(state.problem)}. ${held} read.`, reconnect: false };
    return { tone: 'done', text: state.complete ? `All ${held} read; the run has ended.` : `${held} read; the stored events end before the run's last one.`, reconnect: false };
  }
  const s = state.status;
  switch (s.state) {
    case 'connecting':
      return { tone: 'busy', text: s.lastSeq === 0 ? "Connecting to the run's events…" : `Connecting again, after event ${s.lastSeq}…`, reconnect: false };
    case 'open':
      return { tone: 'live', text: 'Live: following the run as it goes.', reconnect: false };
    case 'waiting':
      return {
        tone: 'warning',
        text: `The connection dropped (${said(s.problem)}). Reconnecting in ${formatDuration(s.delayMs)} (try ${s.attempt} of 5), after event ${s.lastSeq}.`,
        reconnect: false,
      };
    case 'stopped': {
      const end = s.end;
      switch (end.reason) {
        case 'ended':
          return { tone: 'done', text: `All ${held} received; the run has ended.`, reconnect: false };
        case 'closed':
          return { tone: 'done', text: `Stopped following the run (${held}).`, reconnect: true };
        case 'gave-up':
          return { tone: 'error', text: `Reconnecting gave up after 5 tries (${said(end.problem)}).`, reconnect: true };
        case 'unauthenticated':
          return { tone: 'error', text: `${tokenRefused({ message: said(end.problem) })}. Sign in again with a fresh token.`, reconnect: false };
        case 'forbidden':
          return {
            tone: 'error',
            text: `The cluster refuses you this run's events (403): ${said(end.problem)}. Ask an admin to bind you a Role that may get this StudioRun (examples/rbac/studio-user-role.yaml), then reload.`,
            reconnect: false,
          };
        case 'too-many-streams':
          return { tone: 'error', text: end.explanation, reconnect: true };
        case 'refused':
          return {
            tone: 'error',
            text: `The sidecar refused the run's events (${end.problem.status}): ${said(end.problem)}. ${
              end.problem.status === 404
                ? 'The run may have been deleted, or you are neither its owner nor one of its approvers.'
                : "Reload the page to try again; if it happens again, the sidecar's log says why."
            }`,
            reconnect: false,
          };
      }
    }
  }
}
