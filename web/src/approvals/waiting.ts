// The approvals waiting for the signed-in person in the namespace being looked at: the runs they
// own or approve that are `AwaitingApproval`, and each run's pending approvals from its status.
// Read every 10 s and whenever a page asks (after a decision); the navigation and the tab's
// title show the count (rule 12.40).

import { useCallback, useEffect, useRef, useState } from 'react';
import type { Problem } from '../api/http.ts';
import { listRuns, type PendingApproval, type Run } from '../api/runs.ts';
import { useSession } from '../app/session.tsx';

export const WAITING_POLL_MS = 10_000;

export interface WaitingApproval {
  readonly run: Run;
  readonly approval: PendingApproval;
}

export interface Waiting {
  /** How many wait, or null before the first answer (or with no namespace chosen). */
  readonly count: number | null;
  readonly items: readonly WaitingApproval[];
  readonly problem: Problem | null;
  /** Reads again now. */
  readonly refresh: () => void;
}

/** Each pending approval of each run, oldest expiry first. */
export function waitingOf(runs: readonly Run[]): WaitingApproval[] {
  return runs
    .flatMap((run) => run.pendingApprovals.map((approval) => ({ run, approval })))
    .sort((a, b) => a.approval.expiresAt.localeCompare(b.approval.expiresAt) || a.run.name.localeCompare(b.run.name));
}

export function useWaitingApprovals(enabled: boolean): Waiting {
  const { token, api, namespace, expire } = useSession();
  const [state, setState] = useState<{ readonly items: readonly WaitingApproval[] | null; readonly problem: Problem | null }>({ items: null, problem: null });
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => {
    setTick((t) => t + 1);
  }, []);
  const timer = useRef<number | null>(null);

  useEffect(() => {
    if (!enabled || namespace === '') return undefined;
    const abort = new AbortController();
    void listRuns(token, namespace, { phase: 'AwaitingApproval', limit: 500 }, { ...api, signal: abort.signal }).then((result) => {
      if (abort.signal.aborted) return;
      if (result.ok) {
        setState({ items: waitingOf(result.value.items), problem: null });
      } else if (result.problem.status === 401) {
        expire(result.problem);
      } else {
        setState((previous) => ({ items: previous.items, problem: result.problem }));
      }
      timer.current = window.setTimeout(refresh, WAITING_POLL_MS);
    });
    return () => {
      abort.abort();
      if (timer.current !== null) window.clearTimeout(timer.current);
    };
  }, [enabled, token, api, namespace, expire, refresh, tick]);

  const items = state.items ?? [];
  return { count: enabled && namespace !== '' && state.items !== null ? items.length : null, items, problem: state.problem, refresh };
}
