// History: the runs opened here (rule 12.59, kept in this browser) and your runs on the server
// (rule 12.62, read with your token, narrowed by composition and your role, a page at a time).
// Each run links to its page; a finished one to its replay (12.63), a live one to Follow (12.64,
// its live page, with Cancel and Reconnect there); any two can be compared (12.61): press A on
// one and B on another.

import { useCallback, useEffect, useId, useState, type ReactNode } from 'react';
import type { Problem } from '../api/http.ts';
import { getRanSpec, getRun, isTerminal, listRuns, type Run } from '../api/runs.ts';
import { fromSpec } from '../canvas/document.ts';
import { announceArrival, canvasStore } from '../compose/canvas-store.ts';
import { formatRunKey, href, navigate, type RunKey } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, focusRing, input, link, muted, primaryButton } from '../ui/classes.ts';
import { formatCount, formatTime } from '../ui/format.ts';
import { caption, FigureText, headCell, numCell, numHeadCell, PhaseBadge, table, textCell } from './parts.tsx';
import { isLive, readRecent, RECENT_KEY, RECENT_LIMIT, withPhase, without, writeRecent, type RecentRun } from './recent.ts';

/** The two runs chosen for Compare. */
export interface Selection {
  readonly a: RunKey | null;
  readonly b: RunKey | null;
}

const sameKey = (x: RunKey | null, y: RunKey) => x !== null && x.namespace === y.namespace && x.name === y.name;

/** Choosing `key` as A (or B): a run cannot be both, so choosing it as one clears the other. */
export function choose(selection: Selection, side: 'a' | 'b', key: RunKey): Selection {
  if (sameKey(selection[side], key)) return { ...selection, [side]: null };
  const other = side === 'a' ? 'b' : 'a';
  return { ...selection, [side]: key, [other]: sameKey(selection[other], key) ? null : selection[other] };
}

export function HistoryPage() {
  const [selection, setSelection] = useState<Selection>({ a: null, b: null });
  const onChoose = useCallback((side: 'a' | 'b', key: RunKey) => {
    setSelection((s) => choose(s, side, key));
  }, []);
  return (
    <section className="flex flex-col gap-6">
      <div className="flex flex-col gap-1">
        <PageHeading>History</PageHeading>
        <p className={muted}>Open a run again, replay a finished one, follow a live one, or compare two.</p>
      </div>
      <CompareBar selection={selection} onClear={() => { setSelection({ a: null, b: null }); }} />
      <OpenedHere selection={selection} onChoose={onChoose} />
      <ServerRuns selection={selection} onChoose={onChoose} />
    </section>
  );
}

function CompareBar({ selection, onClear }: { readonly selection: Selection; readonly onClear: () => void }) {
  const ready = selection.a !== null && selection.b !== null;
  const name = (key: RunKey | null) => (key === null ? <span className={muted}>not chosen</span> : <span className="font-mono">{formatRunKey(key)}</span>);
  return (
    <div id="compare-bar" tabIndex={-1} role="region" aria-label="Compare two runs" className={`${card} ${focusRing} sticky top-0 z-10 flex flex-wrap items-center gap-x-6 gap-y-2 py-3`}>
      <p className="font-medium">Compare</p>
      <p>A: {name(selection.a)}</p>
      <p>B: {name(selection.b)}</p>
      {ready ? null : (
        <p id="compare-how" className={`text-sm ${muted}`}>
          Press <strong>A</strong> on one run below and <strong>B</strong> on another.
        </p>
      )}
      <div className="ml-auto flex gap-2">
        {selection.a !== null || selection.b !== null ? (
          <button
            type="button"
            className={button}
            onClick={() => {
              // Clear goes away with the choice: the focus moves to the region it was in.
              document.getElementById('compare-bar')?.focus();
              onClear();
            }}
          >
            Clear
          </button>
        ) : null}
        <button
          type="button"
          className={primaryButton}
          disabled={!ready}
          aria-describedby={ready ? undefined : 'compare-how'}
          onClick={() => {
            navigate({ page: 'compare', a: selection.a, b: selection.b });
          }}
        >
          Compare A and B
        </button>
      </div>
    </div>
  );
}

/** What each row offers: Follow a live run, Replay a finished one; A and B for Compare. */
function RunActions({ runKey, phase, selection, onChoose }: { readonly runKey: RunKey; readonly phase: Run['phase']; readonly selection: Selection; readonly onChoose: (side: 'a' | 'b', key: RunKey) => void }) {
  const label = formatRunKey(runKey);
  return (
    <>
      <td className={textCell}>
        {phase === null ? (
          <a className={link} href={href({ page: 'run', ...runKey })}>
            Open<span className="sr-only"> {label}</span>
          </a>
        ) : isTerminal(phase) ? (
          <a className={link} href={href({ page: 'replay', ...runKey })}>
            Replay<span className="sr-only"> {label}</span>
          </a>
        ) : (
          <a className={link} href={href({ page: 'run', ...runKey })}>
            Follow<span className="sr-only"> {label} live</span>
          </a>
        )}
      </td>
      <td className={textCell}>
        <ShowOnCanvas runKey={runKey} />
      </td>
      <td className={`${textCell} whitespace-nowrap`}>
        {(['a', 'b'] as const).map((side) => (
          <button
            key={side}
            type="button"
            aria-pressed={sameKey(selection[side], runKey)}
            aria-label={`Compare ${label} as ${side.toUpperCase()}`}
            className={`${button} mr-1 px-2 py-0.5 aria-pressed:border-sky-800 aria-pressed:bg-sky-700 aria-pressed:text-white dark:aria-pressed:border-sky-300 dark:aria-pressed:bg-sky-300 dark:aria-pressed:text-slate-950`}
            onClick={() => {
              onChoose(side, runKey);
            }}
          >
            {side.toUpperCase()}
          </button>
        ))}
      </td>
    </>
  );
}

/**
 * Show (rule 12.60): the spec the run ran (`GET …/composition`) put on the canvas, unlinked and
 * undoably (Compose's banner says what it is, with Undo and a link back to the run).
 */
function ShowOnCanvas({ runKey }: { readonly runKey: RunKey }) {
  const { token, api, expire } = useSession();
  const [problem, setProblem] = useState<string | null>(null);
  const label = formatRunKey(runKey);
  return (
    <>
      <button
        type="button"
        className={`${button} px-2 py-0.5 text-sm`}
        onClick={() => {
          void getRanSpec(token, runKey.namespace, runKey.name, api).then((reply) => {
            if (!reply.ok) {
              if (reply.problem.status === 401) expire(reply.problem);
              else setProblem(`Not shown (${reply.problem.status}): ${reply.problem.message}`);
              return;
            }
            const read = fromSpec(reply.value.spec);
            if (!read.ok) {
              setProblem(`Not shown: ${read.problems.map((p) => p.message).join('; ')}`);
              return;
            }
            canvasStore().getState().load(read.doc);
            const ran = reply.value.name === '' ? 'an inline composition' : `${reply.value.name}${reply.value.revision === null ? '' : ` revision ${String(reply.value.revision)}`}`;
            announceArrival({ said: `Showing the spec run ${label} ran (${ran}); it is not linked to a Composition until you save it.`, back: { label: `Open the run ${label}`, href: href({ page: 'run', ...runKey }) } });
            navigate({ page: 'compose' });
          });
        }}
      >
        Show<span className="sr-only"> {label} on the canvas</span>
      </button>
      {problem === null ? null : (
        <span role="alert" className="block text-sm text-red-800 dark:text-red-200">
          {problem}
        </span>
      )}
    </>
  );
}

function RunNameLink({ runKey, showNamespace }: { readonly runKey: RunKey; readonly showNamespace: boolean }) {
  return (
    <a className={`${link} font-mono`} href={href({ page: 'run', ...runKey })}>
      {showNamespace ? <span className={muted}>{runKey.namespace}/</span> : null}
      {runKey.name}
    </a>
  );
}

/** The runs opened here, newest first; their phase read again while they are live. */
function OpenedHere({ selection, onChoose }: { readonly selection: Selection; readonly onChoose: (side: 'a' | 'b', key: RunKey) => void }) {
  const { token, api, expire } = useSession();
  const [entries, setEntries] = useState<readonly RecentRun[]>(() => readRecent());

  // Another tab opened a run: show it here too.
  useEffect(() => {
    const update = (event: StorageEvent) => {
      if (event.key === RECENT_KEY || event.key === null) setEntries(readRecent());
    };
    window.addEventListener('storage', update);
    return () => {
      window.removeEventListener('storage', update);
    };
  }, []);

  // The phase of each run that was live when last seen, read again once.
  useEffect(() => {
    const abort = new AbortController();
    const live = readRecent().filter(isLive);
    void Promise.all(
      live.map(async (entry) => {
        const result = await getRun(token, entry.namespace, entry.name, { ...api, signal: abort.signal });
        if (result.ok) return { entry, phase: result.value.phase ?? 'Pending', problem: null };
        return { entry, phase: null, problem: result.problem };
      }),
    ).then((results) => {
      if (abort.signal.aborted) return;
      const refused = results.find((r) => r.problem?.status === 401);
      if (refused?.problem) {
        expire(refused.problem);
        return;
      }
      let list = readRecent();
      for (const { entry, phase, problem } of results) {
        // Gone, or not yours (404): no longer live as far as this list can tell.
        if (problem === null || problem.status === 404) list = withPhase(list, entry, phase);
      }
      writeRecent(list);
      setEntries(list);
    });
    return () => {
      abort.abort();
    };
  }, [token, api, expire]);

  const forget = (entry: RecentRun) => {
    const list = without(readRecent(), entry);
    writeRecent(list);
    setEntries(list);
  };
  const namespaces = new Set(entries.map((e) => e.namespace));

  return (
    <section aria-labelledby="opened-here" className="flex flex-col gap-2">
      <div className="flex flex-wrap items-baseline gap-x-4">
        <h2 id="opened-here" tabIndex={-1} className={`text-xl font-semibold ${focusRing}`}>
          Opened here
        </h2>
        <p className={`text-sm ${muted}`}>
          The last {RECENT_LIMIT} runs started or opened in this browser (live ones are always kept). Stored in this browser only: names and phases, never your token or
          any content.
        </p>
      </div>
      {entries.length === 0 ? (
        <p className={card}>
          No run opened here yet. Runs you start or open appear here; your runs on the server are listed below.
        </p>
      ) : (
        <div className={`${card} overflow-x-auto`}>
          <table className={table}>
            <caption className="sr-only">Runs opened in this browser, newest first</caption>
            <thead>
              <tr>
                <th scope="col" className={headCell}>
                  Run
                </th>
                <th scope="col" className={headCell}>
                  Composition
                </th>
                <th scope="col" className={headCell}>
                  Phase <span className={`font-normal ${muted}`}>(last seen)</span>
                </th>
                <th scope="col" className={headCell}>
                  Opened
                </th>
                <th scope="col" className={headCell}>
                  <span className="sr-only">Replay or follow</span>
                </th>
                <th scope="col" className={headCell}>
                  <span className="sr-only">Show on the canvas</span>
                </th>
                <th scope="col" className={headCell}>
                  Compare as
                </th>
                <th scope="col" className={headCell}>
                  <span className="sr-only">Forget</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <tr key={formatRunKey(entry)}>
                  <th scope="row" className={`${textCell} font-normal`}>
                    <RunNameLink runKey={entry} showNamespace={namespaces.size > 1} />
                  </th>
                  <td className={`${textCell} font-mono`}>{entry.composition ?? <FigureText value={null} />}</td>
                  <td className={textCell}>
                    <PhaseBadge phase={entry.phase} />
                  </td>
                  <td className={`${textCell} whitespace-nowrap`}>{formatTime(entry.openedAt)}</td>
                  <RunActions runKey={entry} phase={entry.phase} selection={selection} onChoose={onChoose} />
                  <td className={textCell}>
                    <button
                      type="button"
                      className={`${button} px-2 py-0.5 text-sm`}
                      onClick={(event) => {
                        // The focus goes to the next row's Forget (or the previous one's, or the
                        // section's heading), never to the page's start.
                        const row = event.currentTarget.closest('tr');
                        const neighbour = (row?.nextElementSibling ?? row?.previousElementSibling)?.querySelector<HTMLButtonElement>('td:last-child button');
                        if (neighbour) neighbour.focus();
                        else document.getElementById('opened-here')?.focus();
                        forget(entry);
                      }}
                    >
                      Forget<span className="sr-only"> {formatRunKey(entry)}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

type Role = '' | 'owner' | 'approver';

interface ServerState {
  readonly runs: readonly Run[];
  readonly next: string | null;
  readonly loading: boolean;
  readonly problem: Problem | null;
}

/** Your runs on the server, in the session's namespace, newest first. */
function ServerRuns({ selection, onChoose }: { readonly selection: Selection; readonly onChoose: (side: 'a' | 'b', key: RunKey) => void }) {
  const { token, api, expire, namespace, me } = useSession();
  const ids = useId();
  const [filters, setFilters] = useState<{ readonly composition: string; readonly role: Role }>({ composition: '', role: '' });
  const [draft, setDraft] = useState(filters);
  const [cursor, setCursor] = useState<string | null>(null);
  const [state, setState] = useState<ServerState>({ runs: [], next: null, loading: true, problem: null });

  useEffect(() => {
    if (namespace === '') return undefined;
    const abort = new AbortController();
    void listRuns(token, namespace, { composition: filters.composition, role: filters.role, limit: PAGE, ...(cursor === null ? {} : { continue: cursor }) }, { ...api, signal: abort.signal }).then(
      (result) => {
        if (abort.signal.aborted) return;
        if (result.ok) {
          setState((s) => ({ runs: cursor === null ? result.value.items : [...s.runs, ...result.value.items], next: result.value.continue, loading: false, problem: null }));
        } else if (result.problem.status === 401) {
          expire(result.problem);
        } else {
          setState((s) => ({ ...s, loading: false, problem: result.problem }));
        }
      },
    );
    return () => {
      abort.abort();
    };
  }, [token, api, expire, namespace, filters, cursor]);

  if (namespace === '') {
    return (
      <section aria-labelledby="server-runs" className="flex flex-col gap-2">
        <h2 id="server-runs" className="text-xl font-semibold">
          Your runs on the server
        </h2>
        <p className={card}>
          Choose a namespace first, on the{' '}
          <a className={link} href="#/">
            Runs page
          </a>
          .
        </p>
      </section>
    );
  }

  return (
    <section aria-labelledby="server-runs" className="flex flex-col gap-2">
      <div className="flex flex-wrap items-baseline gap-x-4">
        <h2 id="server-runs" className="text-xl font-semibold">
          Your runs on the server
        </h2>
        <p className={`text-sm ${muted}`}>
          In <span className="font-mono">{namespace}</span>: the runs you own or approve, newest first (change the namespace on the{' '}
          <a className={link} href={href({ page: 'runs', namespace, query: new URLSearchParams() })}>
            Runs page
          </a>
          ).
        </p>
      </div>
      <form
        className="flex flex-wrap items-end gap-3"
        aria-label="Filter your runs"
        onSubmit={(event) => {
          event.preventDefault();
          setState((s) => ({ ...s, loading: true }));
          setCursor(null);
          setFilters({ composition: draft.composition.trim(), role: draft.role });
        }}
      >
        <div className="flex flex-col gap-1">
          <label htmlFor={`${ids}-composition`} className="text-sm font-medium">
            Composition
          </label>
          <input
            id={`${ids}-composition`}
            className={`${input} h-10 font-mono`}
            placeholder="any"
            autoComplete="off"
            spellCheck={false}
            value={draft.composition}
            onChange={(event) => {
              setDraft((d) => ({ ...d, composition: event.target.value }));
            }}
          />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor={`${ids}-role`} className="text-sm font-medium">
            Your role
          </label>
          <select
            id={`${ids}-role`}
            className={`${input} h-10`}
            value={draft.role}
            onChange={(event) => {
              const value = event.target.value;
              setDraft((d) => ({ ...d, role: value === 'owner' || value === 'approver' ? value : '' }));
            }}
          >
            <option value="">Owner or approver</option>
            <option value="owner">Owner (you started it)</option>
            <option value="approver">Approver</option>
          </select>
        </div>
        <button type="submit" className={`${button} h-10`}>
          Show
        </button>
      </form>
      {state.problem === null ? null : <ProblemAlert doing="Listing your runs" problem={state.problem} />}
      <ServerTable runs={state.runs} username={me.username} selection={selection} onChoose={onChoose} filtered={filters.composition !== '' || filters.role !== ''} loading={state.loading}>
        {state.next === null ? null : (
          <button
            type="button"
            className={button}
            disabled={state.loading}
            onClick={() => {
              setState((s) => ({ ...s, loading: true }));
              setCursor(state.next);
            }}
          >
            {state.loading ? 'Loading…' : 'Show more'}
          </button>
        )}
      </ServerTable>
    </section>
  );
}

const PAGE = 20;

interface ServerTableProps {
  readonly runs: readonly Run[];
  readonly username: string;
  readonly selection: Selection;
  readonly onChoose: (side: 'a' | 'b', key: RunKey) => void;
  readonly filtered: boolean;
  readonly loading: boolean;
  /** Below the table: Show more. */
  readonly children?: ReactNode;
}

/** The server's runs as a table (rendered alone in tests). */
export function ServerTable({ runs, username, selection, onChoose, filtered, loading, children }: ServerTableProps) {
  if (runs.length === 0) {
    return (
      <p className={card} role="status">
        {loading ? 'Reading your runs…' : filtered ? 'No run of yours matches these filters.' : 'You own or approve no run in this namespace yet.'}
      </p>
    );
  }
  return (
    <div className={`${card} flex flex-col items-start gap-3 overflow-x-auto`}>
      <table className={table}>
        <caption className={caption}>
          {formatCount(runs.length)} {runs.length === 1 ? 'run' : 'runs'}, newest first
        </caption>
        <thead>
          <tr>
            <th scope="col" className={headCell}>
              Run
            </th>
            <th scope="col" className={headCell}>
              Composition
            </th>
            <th scope="col" className={headCell}>
              Phase
            </th>
            <th scope="col" className={headCell}>
              Your role
            </th>
            <th scope="col" className={headCell}>
              Started
            </th>
            <th scope="col" className={numHeadCell}>
              Tokens
            </th>
            <th scope="col" className={headCell}>
              <span className="sr-only">Replay or follow</span>
            </th>
            <th scope="col" className={headCell}>
              <span className="sr-only">Show on the canvas</span>
            </th>
            <th scope="col" className={headCell}>
              Compare as
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => {
            const key = { namespace: run.namespace, name: run.name };
            const composition = run.composition ?? run.compositionRef;
            return (
              <tr key={formatRunKey(key)}>
                <th scope="row" className={`${textCell} font-normal`}>
                  <RunNameLink runKey={key} showNamespace={false} />
                </th>
                <td className={textCell}>
                  {composition === null ? (
                    <span className={muted}>inline</span>
                  ) : (
                    <>
                      <span className="font-mono">{composition.name}</span>
                      {composition.revision === null ? null : <span className={muted}> rev {composition.revision}</span>}
                    </>
                  )}
                </td>
                <td className={textCell}>
                  <PhaseBadge phase={run.phase} />
                </td>
                <td className={textCell}>{run.owner === username ? 'owner' : 'approver'}</td>
                <td className={`${textCell} whitespace-nowrap`}>{formatTime(run.startTime ?? run.created)}</td>
                <td className={numCell}>{run.totals === null ? '–' : formatCount(run.totals.tokens)}</td>
                <RunActions runKey={key} phase={run.phase ?? 'Pending'} selection={selection} onChoose={onChoose} />
              </tr>
            );
          })}
        </tbody>
      </table>
      {children}
    </div>
  );
}
