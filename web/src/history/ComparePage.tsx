// Compare (rule 12.61): two runs side by side: outcome, phase, composition and revision (with a
// warning when they ran different ones), totals, and each node's tokens, latency, entries and
// calls from the runs' events, with B − A. Each run is read on its own: one that cannot be read
// shows its problem, and the other is still shown.

import { useEffect, useId, useState } from 'react';
import type { Problem } from '../api/http.ts';
import { getRun, isTerminal, type Run } from '../api/runs.ts';
import { formatRunKey, href, navigate, parseRunKey, type RunKey } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import type { RunModel } from '../run/model.ts';
import { PageHeading } from '../ui/PageHeading.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, input, link, muted, primaryButton } from '../ui/classes.ts';
import { formatCount, formatDelta, formatDuration, formatTime } from '../ui/format.ts';
import { compareWarnings, delta, nodeRows, ranOf, totalRows, type Figure, type NodeFigures, type Side, type Unit } from './compare.ts';
import { readAllEvents } from '../api/event-pages.ts';
import { caption, FigureText, headCell, numCell, numHeadCell, PhaseBadge, table, textCell } from './parts.tsx';
import { readRecent } from './recent.ts';
import { replayInstant } from './replay.ts';

interface Props {
  readonly a: RunKey | null;
  readonly b: RunKey | null;
}

export function ComparePage({ a, b }: Props) {
  const pairKey = `${a === null ? '' : formatRunKey(a)}|${b === null ? '' : formatRunKey(b)}`;
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Compare two runs</PageHeading>
      <Picker key={`picker ${pairKey}`} a={a} b={b} />
      {a !== null && b !== null ? <Comparison key={`comparison ${pairKey}`} a={a} b={b} /> : null}
    </section>
  );
}

/** The two runs by `namespace/name`; runs opened here are offered as suggestions. */
function Picker({ a, b }: Props) {
  const ids = useId();
  const { namespace } = useSession();
  const [textA, setTextA] = useState(a === null ? '' : formatRunKey(a));
  const [textB, setTextB] = useState(b === null ? '' : formatRunKey(b));
  const [error, setError] = useState<string | null>(null);
  const [suggestions] = useState(() => readRecent().map(formatRunKey));
  const keyOf = (text: string): RunKey | null => {
    const trimmed = text.trim();
    // A bare name is a run in the namespace being looked at.
    return trimmed.includes('/') ? parseRunKey(trimmed) : trimmed === '' || namespace === '' ? null : { namespace, name: trimmed };
  };
  const field = (side: 'A' | 'B', value: string, set: (v: string) => void) => (
    <div className="flex min-w-64 flex-1 flex-col gap-1">
      <label htmlFor={`${ids}-${side}`} className="font-medium">
        Run {side}
      </label>
      <input
        id={`${ids}-${side}`}
        className={`${input} font-mono`}
        value={value}
        list={`${ids}-recent`}
        autoComplete="off"
        spellCheck={false}
        placeholder="namespace/name"
        aria-describedby={`${ids}-hint${error === null ? '' : ` ${ids}-error`}`}
        onChange={(event) => {
          set(event.target.value);
        }}
      />
    </div>
  );
  return (
    <form
      className={`${card} flex flex-col gap-2`}
      aria-label="Which runs"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        const ka = keyOf(textA);
        const kb = keyOf(textB);
        if (ka === null || kb === null) {
          setError(`Name both runs as namespace/name (for example ${namespace === '' ? 'team-a' : namespace}/release-notes-1).`);
          return;
        }
        setError(null);
        navigate({ page: 'compare', a: ka, b: kb });
      }}
    >
      <div className="flex flex-wrap items-end gap-3">
        {field('A', textA, setTextA)}
        {field('B', textB, setTextB)}
        <button
          type="button"
          className={button}
          onClick={() => {
            setTextA(textB);
            setTextB(textA);
          }}
        >
          Swap
        </button>
        <button type="submit" className={primaryButton}>
          Compare
        </button>
      </div>
      <datalist id={`${ids}-recent`}>
        {suggestions.map((s) => (
          <option key={s} value={s} />
        ))}
      </datalist>
      <p id={`${ids}-hint`} className={`text-sm ${muted}`}>
        Type <span className="font-mono">namespace/name</span> (a bare name is in {namespace === '' ? 'your namespace' : <span className="font-mono">{namespace}</span>}), or
        choose them on the{' '}
        <a className={link} href="#/history">
          History page
        </a>{' '}
        with the A and B buttons. B − A is B’s figure less A’s.
      </p>
      {error === null ? null : (
        <p id={`${ids}-error`} role="alert" className="text-red-800 dark:text-red-200">
          {error}
        </p>
      )}
    </form>
  );
}

/** One side as read: the run, and the model of its events, each with its problem if it failed. */
export interface SideState {
  readonly key: RunKey;
  readonly loading: boolean;
  readonly run: Run | null;
  readonly runProblem: Problem | null;
  readonly model: RunModel | null;
  readonly eventsProblem: Problem | null;
}

function useSide(namespace: string, name: string): SideState {
  const { token, api, expire } = useSession();
  const [state, setState] = useState<SideState>({ key: { namespace, name }, loading: true, run: null, runProblem: null, model: null, eventsProblem: null });
  useEffect(() => {
    const abort = new AbortController();
    const options = { ...api, signal: abort.signal };
    void Promise.all([getRun(token, namespace, name, options), readAllEvents(token, namespace, name, options)]).then(([run, stored]) => {
      if (abort.signal.aborted) return;
      const refused = [run, stored].find((r) => !r.ok && r.problem.status === 401);
      if (refused !== undefined && !refused.ok) {
        expire(refused.problem);
        return;
      }
      setState({
        key: { namespace, name },
        loading: false,
        run: run.ok ? run.value : null,
        runProblem: run.ok ? null : run.problem,
        model: stored.ok ? replayInstant(stored.value.events, []) : null,
        // The run's own problem says it all when the run cannot be read.
        eventsProblem: stored.ok || !run.ok ? null : stored.problem,
      });
    });
    return () => {
      abort.abort();
    };
  }, [token, api, expire, namespace, name]);
  return state;
}

function Comparison({ a, b }: { readonly a: RunKey; readonly b: RunKey }) {
  const sa = useSide(a.namespace, a.name);
  const sb = useSide(b.namespace, b.name);
  if (sa.loading || sb.loading) {
    return (
      <p role="status" className={card}>
        Reading both runs and their events…
      </p>
    );
  }
  return <ComparisonView a={sa} b={sb} />;
}

/** Both sides read (rendered alone in tests). */
export function ComparisonView({ a, b }: { readonly a: SideState; readonly b: SideState }) {
  const sideA: Side = { run: a.run, model: a.model };
  const sideB: Side = { run: b.run, model: b.model };
  const warnings = a.run !== null && b.run !== null ? compareWarnings(a.run, b.run) : [];
  const same = a.key.namespace === b.key.namespace && a.key.name === b.key.name;
  return (
    <>
      <div className="grid gap-4 md:grid-cols-2">
        <RunCard side="A" state={a} />
        <RunCard side="B" state={b} />
      </div>
      {same ? <Warning>A and B are the same run: every difference is 0.</Warning> : null}
      {warnings.map((w) => (
        <Warning key={w}>{w}</Warning>
      ))}
      <TotalsTable a={sideA} b={sideB} />
      <NodesTable a={sideA} b={sideB} />
    </>
  );
}

function Warning({ children }: { readonly children: string }) {
  return (
    <p role="note" className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100">
      <strong>Not like for like: </strong>
      {children}
    </p>
  );
}

function RunCard({ side, state }: { readonly side: 'A' | 'B'; readonly state: SideState }) {
  const { key, run, model } = state;
  const ran = run === null ? null : ranOf(run);
  const outcome = model?.outcome ?? null;
  return (
    <section className={`${card} flex flex-col gap-2`} aria-label={`Run ${side}`}>
      <h2 className="flex flex-wrap items-baseline gap-2 text-lg font-semibold">
        <span>{side}:</span>
        <a className={`${link} font-mono`} href={href({ page: 'run', ...key })}>
          {formatRunKey(key)}
        </a>
      </h2>
      {state.runProblem === null ? null : <ProblemAlert doing={`Reading run ${side}`} problem={state.runProblem} />}
      {run === null ? null : (
        <dl className="grid grid-cols-[auto_1fr] items-center gap-x-4 gap-y-1 text-sm">
          {outcome === null ? null : (
            <>
              <dt className={muted}>Outcome</dt>
              <dd>
                <PhaseBadge phase={outcome} />
              </dd>
            </>
          )}
          {outcome !== null && outcome === run.phase ? null : (
            <>
              <dt className={muted}>Phase</dt>
              <dd>
                <PhaseBadge phase={run.phase} />
                {outcome === null && !isTerminal(run.phase) ? <span className={`ml-2 text-sm ${muted}`}>still live: its figures so far</span> : null}
              </dd>
            </>
          )}
          <dt className={muted}>Composition</dt>
          <dd>
            {ran?.name == null ? 'inline' : <span className="font-mono">{ran.name}</span>}
            {ran?.revision == null ? '' : `, revision ${ran.revision}`}
          </dd>
          <dt className={muted}>Started</dt>
          <dd>{formatTime(run.startTime ?? run.created)}</dd>
        </dl>
      )}
      {state.eventsProblem === null ? null : <ProblemAlert doing={`Reading run ${side}’s events`} problem={state.eventsProblem} />}
    </section>
  );
}

function DeltaText({ a, b, unit = 'count' }: { readonly a: Figure; readonly b: Figure; readonly unit?: Unit }) {
  const d = delta(a, b);
  if (d === null) return <FigureText value={null} />;
  return <>{formatDelta(d, unit === 'duration' ? formatDuration : formatCount)}</>;
}

export function TotalsTable({ a, b }: { readonly a: Side; readonly b: Side }) {
  const rows = totalRows(a, b);
  return (
    <div className={`${card} max-w-3xl overflow-x-auto`}>
      <table className={table}>
        <caption className={caption}>Totals</caption>
        <thead>
          <tr>
            <th scope="col" className={headCell}>
              Figure
            </th>
            <th scope="col" className={numHeadCell}>
              A
            </th>
            <th scope="col" className={numHeadCell}>
              B
            </th>
            <th scope="col" className={numHeadCell}>
              B − A
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.key}>
              <th scope="row" className={`${textCell} font-medium`}>
                {row.label}
              </th>
              <td className={numCell}>
                <FigureText value={row.a} unit={row.unit} />
              </td>
              <td className={numCell}>
                <FigureText value={row.b} unit={row.unit} />
              </td>
              <td className={`${numCell} font-medium`}>
                <DeltaText a={row.a} b={row.b} unit={row.unit} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const NODE_FIGURES: readonly { readonly key: keyof NodeFigures; readonly label: string; readonly unit: Unit }[] = [
  { key: 'tokens', label: 'Tokens', unit: 'count' },
  { key: 'durationMs', label: 'Latency', unit: 'duration' },
  { key: 'entries', label: 'Entries', unit: 'count' },
  { key: 'calls', label: 'Calls', unit: 'count' },
];

export function NodesTable({ a, b }: { readonly a: Side; readonly b: Side }) {
  const rows = nodeRows(a, b);
  const groupBorder = 'border-l border-slate-300 dark:border-slate-600';
  return (
    <div className={`${card} overflow-x-auto`}>
      <table className={table}>
        <caption className={caption}>
          Per node <span className={`text-sm font-normal ${muted}`}>(latency: time spent in the node over all its entries)</span>
        </caption>
        <thead>
          <tr>
            <td className={headCell} />
            {NODE_FIGURES.map((f) => (
              <th key={f.key} scope="colgroup" colSpan={3} className={`${headCell} ${groupBorder} text-center`}>
                {f.label}
              </th>
            ))}
          </tr>
          <tr>
            <th scope="col" className={headCell}>
              Node
            </th>
            {NODE_FIGURES.map((f) => (
              <FigureHeads key={f.key} label={f.label} border={groupBorder} />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={1 + 3 * NODE_FIGURES.length} className={`${textCell} ${muted}`}>
                Neither run’s events name a node.
              </td>
            </tr>
          ) : (
            rows.map((row) => (
              <tr key={row.id}>
                <th scope="row" className={`${textCell} font-normal`}>
                  <span className="font-mono font-medium">{row.id}</span>
                  {row.kind === '' ? null : <span className={`ml-2 text-xs ${muted}`}>{row.kind}</span>}
                  {row.only === null ? null : (
                    <span className="ml-2 rounded-full border border-amber-700 px-2 text-xs text-amber-950 dark:border-amber-400 dark:text-amber-100">
                      ran only in {row.only.toUpperCase()}
                    </span>
                  )}
                </th>
                {NODE_FIGURES.map((f) => {
                  const va = row.a === null ? null : row.a[f.key];
                  const vb = row.b === null ? null : row.b[f.key];
                  return (
                    <FigureCells key={f.key} a={va} b={vb} unit={f.unit} border={groupBorder} />
                  );
                })}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

function FigureHeads({ label, border }: { readonly label: string; readonly border: string }) {
  return (
    <>
      <th scope="col" className={`${numHeadCell} ${border}`}>
        <span className="sr-only">{label} </span>A
      </th>
      <th scope="col" className={numHeadCell}>
        <span className="sr-only">{label} </span>B
      </th>
      <th scope="col" className={numHeadCell}>
        <span className="sr-only">{label} </span>B − A
      </th>
    </>
  );
}

function FigureCells({ a, b, unit, border }: { readonly a: Figure; readonly b: Figure; readonly unit: Unit; readonly border: string }) {
  return (
    <>
      <td className={`${numCell} ${border}`}>
        <FigureText value={a} unit={unit} />
      </td>
      <td className={numCell}>
        <FigureText value={b} unit={unit} />
      </td>
      <td className={`${numCell} font-medium`}>
        <DeltaText a={a} b={b} unit={unit} />
      </td>
    </>
  );
}
