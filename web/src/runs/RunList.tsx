// The list part of the runs page: the caller's runs of the filters in pages of 50 ("Load more"),
// read again on Refresh and every 5 s while any run shown is live; rows keep their place, so a
// refresh moves neither the focus nor the scroll. Cancel from a row; the states of no runs, a
// refusal (the sidecar's words) and a token no longer accepted (back to sign-in).

import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import type { Problem } from '../api/http.ts';
import { cancelRun, listRuns, type Run } from '../api/runs.ts';
import { href, runsRoute } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, link, muted, primaryButton } from '../ui/classes.ts';
import { PAGE_SIZE, captionText, hasFilters, listRequest, refreshLimit, type RunsQuery } from './filters.ts';
import { isLive } from './rows.ts';
import { RunsTable, type CancelOutcome } from './RunsTable.tsx';

/** How often the list is read again while a run shown is live. */
export const REFRESH_MS = 5_000;

interface Loaded {
  /** The filters these runs are of. */
  readonly key: string;
  readonly runs: readonly Run[];
  readonly next: string | null;
  /** When they were read (epoch ms). */
  readonly at: number;
}

interface Failed {
  readonly key: string;
  readonly doing: string;
  readonly problem: Problem;
}

/** What came of a cancel, shown while the same filters are. */
type Notice = { readonly key: string } & ({ readonly kind: 'info'; readonly text: string } | { readonly kind: 'problem'; readonly doing: string; readonly problem: Problem });

/** `more` after `runs`, a run already shown (a page boundary moved by a new run) not repeated. */
export function appendPage(runs: readonly Run[], more: readonly Run[]): Run[] {
  const seen = new Set(runs.map((r) => r.name));
  return [...runs, ...more.filter((r) => !seen.has(r.name))];
}

function clock(at: number): string {
  return `${new Date(at).toISOString().slice(11, 19)} UTC`;
}

interface Props {
  readonly namespace: string;
  readonly filters: RunsQuery;
  /** Opens the start form (the empty state's button). */
  readonly onStart: () => void;
  /** Opens the namespace chooser (from a refusal). */
  readonly onChooseNamespace: () => void;
  /** Called after a cancel, so the approvals waiting are read again. */
  readonly onCancelled?: () => void;
  /** Shown left of Refresh (the filters). */
  readonly toolbar?: ReactNode;
}

export function RunList({ namespace, filters, onStart, onChooseNamespace, onCancelled, toolbar }: Props) {
  const { token, api, me, expire } = useSession();
  const { phase, role, composition } = filters;
  const key = `${phase}\n${role}\n${composition}`;
  const ids = useId();
  const linkId = useCallback((name: string) => `${ids}-run-${name}`, [ids]);

  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [failed, setFailed] = useState<Failed | null>(null);
  const [busy, setBusy] = useState<'refresh' | 'more' | null>(null);
  const [tick, setTick] = useState(0);
  const [settled, setSettled] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  const [noticed, setNotice] = useState<Notice | null>(null);
  const [focusName, setFocusName] = useState<string | null>(null);
  const shown = useRef<{ key: string; count: number }>({ key: '', count: 0 });
  const busyNow = useRef<'refresh' | 'more' | null>(null);
  const moreAbort = useRef<AbortController | null>(null);

  const current = loaded?.key === key ? loaded : null;
  const problem = failed?.key === key ? failed : null;
  const live = current?.runs.some(isLive) ?? false;
  const notice = noticed?.key === key ? noticed : null;

  useEffect(() => {
    shown.current = { key: loaded?.key ?? '', count: loaded?.runs.length ?? 0 };
  }, [loaded]);
  useEffect(() => {
    busyNow.current = busy;
  }, [busy]);
  useEffect(() => () => moreAbort.current?.abort(), []);

  const gone = useCallback(
    (p: Problem) => {
      expire(p);
    },
    [expire],
  );

  // The first page of these filters, and every refresh (as many runs as are shown).
  useEffect(() => {
    const abort = new AbortController();
    const keyed = shown.current.key === key ? refreshLimit(shown.current.count) : PAGE_SIZE;
    void listRuns(token, namespace, listRequest({ phase, role, composition }, keyed), { ...api, signal: abort.signal }).then((result) => {
      if (abort.signal.aborted) return;
      setBusy(null);
      setSettled((n) => n + 1);
      if (result.ok) {
        const at = Date.now();
        setNow(at);
        setLoaded({ key, runs: result.value.items, next: result.value.continue, at });
        setFailed(null);
      } else if (result.problem.status === 401) {
        gone(result.problem);
      } else {
        setFailed({ key, doing: shown.current.key === key ? 'Refreshing your runs' : `Listing your runs in ${namespace}`, problem: result.problem });
      }
    });
    return () => {
      abort.abort();
    };
  }, [token, api, namespace, key, phase, role, composition, tick, gone]);

  const refresh = useCallback(() => {
    if (busyNow.current !== null) return;
    busyNow.current = 'refresh';
    setBusy('refresh');
    setTick((t) => t + 1);
  }, []);

  // Every 5 s while a run shown is live (or after the sidecar's Retry-After, if longer).
  const retryAfter = problem?.problem.retryAfterSeconds ?? 0;
  useEffect(() => {
    if (!live) return undefined;
    const timer = window.setTimeout(() => {
      if (busyNow.current === null) refresh();
      else setSettled((n) => n + 1); // busy loading more: try again in 5 s
    }, Math.max(REFRESH_MS, retryAfter * 1000));
    return () => {
      window.clearTimeout(timer);
    };
  }, [live, settled, retryAfter, refresh]);

  // A live run's duration counts up.
  useEffect(() => {
    if (!live) return undefined;
    const timer = window.setInterval(() => {
      setNow(Date.now());
    }, 1000);
    return () => {
      window.clearInterval(timer);
    };
  }, [live]);

  // After "Load more", the focus goes to the first run it brought.
  useEffect(() => {
    if (focusName !== null) document.getElementById(linkId(focusName))?.focus();
  }, [focusName, linkId]);

  const loadMore = () => {
    if (busyNow.current !== null || current?.next == null) return;
    const after = current.next;
    busyNow.current = 'more';
    setBusy('more');
    const abort = new AbortController();
    moreAbort.current = abort;
    void listRuns(token, namespace, listRequest(filters, PAGE_SIZE, after), { ...api, signal: abort.signal }).then((result) => {
      if (abort.signal.aborted) return;
      setBusy(null);
      if (result.ok) {
        setLoaded((previous) => (previous?.key === key ? { ...previous, runs: appendPage(previous.runs, result.value.items), next: result.value.continue } : previous));
        setFocusName(result.value.items[0]?.name ?? null);
      } else if (result.problem.status === 401) {
        gone(result.problem);
      } else {
        setFailed({ key, doing: 'Loading more runs', problem: result.problem });
      }
    });
  };

  const cancel = async (run: Run): Promise<CancelOutcome> => {
    const result = await cancelRun(token, run.namespace === '' ? namespace : run.namespace, run.name, api);
    if (result.ok) {
      setNotice({ key, kind: 'info', text: `Asked to cancel ${run.name}: it ends Cancelled shortly.` });
      refresh();
      onCancelled?.();
      return 'asked';
    }
    if (result.problem.status === 401) {
      gone(result.problem);
      return 'failed';
    }
    if (result.problem.status === 409) {
      setNotice({ key, kind: 'info', text: `Nothing to cancel: ${result.problem.message}.` });
      refresh();
      return 'ended';
    }
    setNotice({ key, kind: 'problem', doing: `Cancelling ${run.name}`, problem: result.problem });
    return 'failed';
  };

  const caption = captionText(me.username, namespace, filters);
  const stale = current === null && loaded !== null && problem === null;
  const rows = current ?? (stale ? loaded : null);

  return (
    <div className="flex flex-col gap-3">
      <div className="flex flex-wrap items-end gap-x-4 gap-y-2">
        {current?.runs.length === 0 && !hasFilters(filters) ? null : toolbar}
        <button type="button" className={`${button} ml-auto`} aria-disabled={busy !== null} onClick={refresh}>
          {busy === 'refresh' ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <div className="flex flex-wrap items-baseline gap-x-4 gap-y-1">
        <p role="status" className="font-medium">
          {statusText(current, problem !== null, stale || (current === null && problem === null))}
        </p>
        {current === null ? null : (
          <p className={`${muted} text-sm`}>
            Updated {clock(current.at)}
            {live ? `; read again every ${REFRESH_MS / 1000} s while a run is live` : ''}.
          </p>
        )}
      </div>

      <div aria-live="polite" className="empty:hidden">
        {notice?.kind === 'info' ? <p className="rounded-md border border-sky-700 bg-sky-50 p-3 text-sky-950 dark:border-sky-400 dark:bg-sky-950 dark:text-sky-50">{notice.text}</p> : null}
      </div>
      {notice?.kind === 'problem' ? <ProblemAlert doing={notice.doing} problem={notice.problem} /> : null}

      {problem === null ? null : (
        <div className="flex flex-col gap-2">
          <ProblemAlert doing={problem.doing} problem={problem.problem} />
          <RefusalHelp problem={problem.problem} namespace={namespace} onChooseNamespace={onChooseNamespace} />
        </div>
      )}

      {rows === null ? null : rows.runs.length === 0 ? (
        stale ? null : <EmptyRuns namespace={namespace} filtered={hasFilters(filters)} onStart={onStart} />
      ) : (
        <>
          <RunsTable runs={rows.runs} caption={caption} username={me.username} now={now} linkId={linkId} onCancel={cancel} stale={stale} />
          {current?.next == null ? null : (
            <div className="flex items-center gap-3">
              <button type="button" className={button} aria-disabled={busy !== null} onClick={loadMore}>
                {busy === 'more' ? 'Loading…' : `Load ${PAGE_SIZE} more`}
              </button>
              <span className={`${muted} text-sm`}>Older runs follow.</span>
            </div>
          )}
        </>
      )}
    </div>
  );
}

function statusText(current: Loaded | null, failed: boolean, loading: boolean): string {
  if (current !== null) {
    const n = current.runs.length;
    return `${n} ${n === 1 ? 'run' : 'runs'}${current.next === null ? '' : ', older ones not loaded yet'}`;
  }
  if (failed) return 'No runs shown';
  return loading ? 'Loading runs…' : '';
}

/** What to do about a refusal, besides the sidecar's own words. */
function RefusalHelp({ problem, namespace, onChooseNamespace }: { readonly problem: Problem; readonly namespace: string; readonly onChooseNamespace: () => void }) {
  if (problem.status === 400) {
    return (
      <p>
        The address names a filter the sidecar does not know.{' '}
        <a className={link} href={href(runsRoute(namespace))}>
          Show all your runs
        </a>
      </p>
    );
  }
  if (problem.status === 403 || problem.status === 404) {
    return (
      <p>
        {problem.status === 403 ? 'Your cluster role does not let you read runs here.' : 'Nothing was found here.'} Is <span className="font-mono">{namespace}</span> the right namespace?{' '}
        <button type="button" className={`${link} cursor-pointer`} onClick={onChooseNamespace}>
          Choose another namespace
        </button>
      </p>
    );
  }
  return null;
}

/** No runs: none at all yet (start one), or none of these filters (clear them). */
export function EmptyRuns({ namespace, filtered, onStart }: { readonly namespace: string; readonly filtered: boolean; readonly onStart: () => void }) {
  if (filtered) {
    return (
      <div className={`${card} flex flex-col items-start gap-2`}>
        <h2 className="text-lg font-semibold">No runs of yours match these filters</h2>
        <p className={muted}>Other runs of yours in {namespace} may match other filters.</p>
        <a className={link} href={href(runsRoute(namespace))}>
          Clear filters
        </a>
      </div>
    );
  }
  return (
    <div className={`${card} flex flex-col items-start gap-2`}>
      <h2 className="text-lg font-semibold">
        No runs of yours in <span className="font-mono">{namespace}</span> yet
      </h2>
      <p className={muted}>The runs you start, and those naming you as an approver, are listed here, newest first.</p>
      <button type="button" className={primaryButton} onClick={onStart}>
        Start your first run
      </button>
    </div>
  );
}
