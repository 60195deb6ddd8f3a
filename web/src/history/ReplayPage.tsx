// Replay (rule 12.63): a finished run played again from its stored events, from the start, with
// the spec (and revision) it ran: at 1× (the recorded spacing, idle gaps shortened to 2 s), 4×
// or instant, paused, or moved to any event with the slider. It shows what the live panel
// shows: each node's state and figures, the budgets used, the current event, and at the end the
// outcome and totals. The run panel's graph fits in one slot (`renderGraph`).
//
// Only a finished run is replayed: a live one links to its live page (rule 12.64, Follow).

import { useEffect, useId, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react';
import type { Problem } from '../api/http.ts';
import { getRanSpec, getRun, isTerminal, type RanSpec, type Result, type Run } from '../api/runs.ts';
import type { BudgetKey, TraceEvent } from '../api/trace.ts';
import { href } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { parseSpec } from '../graph/spec.ts';
import { share, type RunModel } from '../run/model.ts';
import { foldRemoteCalls, usedEntries } from '../run/remote-calls.ts';
import { RemoteCallTabs } from '../run/RemoteTabs.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, focusRing, link, muted, primaryButton } from '../ui/classes.ts';
import { formatCount, formatDuration, formatTime } from '../ui/format.ts';
import { GAP_CAP_MS, PLAY_SPEEDS } from './clock.ts';
import { ReplayController, type ReplaySnapshot } from './controller.ts';
import { describeEvent, nodeOf } from './describe.ts';
import { readAllEvents } from '../api/event-pages.ts';
import { caption, FigureText, headCell, NodeStateBadge, numCell, numHeadCell, PhaseBadge, table, textCell } from './parts.tsx';
import { recordOpened } from './recent.ts';
import { specNodesOf } from './replay.ts';

/** What the graph slot gets: the model as it stands (read it again when `version` moves) and the spec the run ran. */
export interface GraphView {
  readonly model: RunModel;
  readonly version: number;
  readonly spec: unknown;
}

export type RenderGraph = (view: GraphView) => ReactNode;

type Load =
  | { readonly step: 'reading-run' }
  | { readonly step: 'failed'; readonly doing: string; readonly problem: Problem; readonly run: Run | null }
  | { readonly step: 'live'; readonly run: Run }
  | { readonly step: 'reading-events'; readonly run: Run; readonly read: number }
  | { readonly step: 'ready'; readonly run: Run; readonly spec: Result<RanSpec>; readonly events: readonly TraceEvent[]; readonly complete: boolean; readonly readMs: number };

interface Props {
  readonly namespace: string;
  readonly name: string;
  readonly renderGraph?: RenderGraph;
}

export function ReplayPage({ namespace, name, renderGraph }: Props) {
  const { token, api, expire } = useSession();
  const [load, setLoad] = useState<Load>({ step: 'reading-run' });

  useEffect(() => {
    const abort = new AbortController();
    const options = { ...api, signal: abort.signal };
    // A function, not the property: the view may go at any await.
    const gone = () => abort.signal.aborted;
    const refused = (problem: Problem): boolean => {
      if (problem.status !== 401) return false;
      expire(problem);
      return true;
    };
    void (async () => {
      const run = await getRun(token, namespace, name, options);
      if (gone()) return;
      if (!run.ok) {
        if (!refused(run.problem)) setLoad({ step: 'failed', doing: 'Reading the run', problem: run.problem, run: null });
        return;
      }
      recordOpened(run.value);
      if (!isTerminal(run.value.phase)) {
        setLoad({ step: 'live', run: run.value });
        return;
      }
      setLoad({ step: 'reading-events', run: run.value, read: 0 });
      const readStarted = performance.now();
      const [spec, stored] = await Promise.all([
        getRanSpec(token, namespace, name, options),
        readAllEvents(token, namespace, name, options, (read) => {
          if (!gone()) setLoad({ step: 'reading-events', run: run.value, read });
        }),
      ]);
      if (gone()) return;
      if (!stored.ok) {
        if (!refused(stored.problem)) setLoad({ step: 'failed', doing: 'Reading the run’s events', problem: stored.problem, run: run.value });
        return;
      }
      if (!spec.ok && refused(spec.problem)) return;
      setLoad({ step: 'ready', run: run.value, spec, events: stored.value.events, complete: stored.value.complete, readMs: performance.now() - readStarted });
    })();
    return () => {
      abort.abort();
    };
  }, [token, api, expire, namespace, name]);

  switch (load.step) {
    case 'reading-run':
      return (
        <Frame namespace={namespace} name={name}>
          <p role="status">Reading the run…</p>
        </Frame>
      );
    case 'failed':
      return (
        <Frame namespace={namespace} name={name} run={load.run}>
          <ProblemAlert doing={load.doing} problem={load.problem} />
          <p>
            <a className={link} href="#/history">
              Back to History
            </a>
          </p>
        </Frame>
      );
    case 'live':
      return (
        <Frame namespace={namespace} name={name} run={load.run}>
          <div className={`${card} flex flex-col items-start gap-3`}>
            <p>
              This run is still live (<PhaseBadge phase={load.run.phase} />
              ). Only a finished run can be replayed: follow it live instead, and replay it once it has ended.
            </p>
            <a className={primaryButton} href={href({ page: 'run', namespace, name })}>
              Follow it live
            </a>
          </div>
        </Frame>
      );
    case 'reading-events':
      return (
        <Frame namespace={namespace} name={name} run={load.run}>
          <p role="status">
            Reading the stored events… {formatCount(load.read)}
            {load.run.eventCount === null ? '' : ` of ${formatCount(load.run.eventCount)}`} read.
          </p>
        </Frame>
      );
    case 'ready':
      return (
        <ReplayView
          namespace={namespace}
          name={name}
          run={load.run}
          spec={load.spec}
          events={load.events}
          complete={load.complete}
          readMs={load.readMs}
          {...(renderGraph === undefined ? {} : { renderGraph })}
        />
      );
  }
}

/** The page's heading and what the run is, while it loads or when it cannot be replayed. */
function Frame({ namespace, name, run = null, children }: { readonly namespace: string; readonly name: string; readonly run?: Run | null; readonly children: ReactNode }) {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Replay of {name}</PageHeading>
      <RunFacts namespace={namespace} name={name} run={run} spec={null} />
      {children}
    </section>
  );
}

function RunFacts({ namespace, name, run, spec }: { readonly namespace: string; readonly name: string; readonly run: Run | null; readonly spec: RanSpec | null }) {
  const composition = spec?.name ?? run?.composition?.name ?? run?.compositionRef?.name ?? null;
  const revision = spec?.revision ?? run?.composition?.revision ?? run?.compositionRef?.revision ?? null;
  return (
    <dl className="flex flex-wrap items-center gap-x-6 gap-y-1 text-sm">
      <div className="flex gap-2">
        <dt className={muted}>Namespace</dt>
        <dd className="font-mono">{namespace}</dd>
      </div>
      <div className="flex gap-2">
        <dt className={muted}>Composition</dt>
        <dd>
          {composition === null ? 'inline' : <span className="font-mono">{composition}</span>}
          {revision === null ? '' : `, revision ${revision}`}
        </dd>
      </div>
      {run === null ? null : (
        <>
          <div className="flex items-center gap-2">
            <dt className={muted}>Phase</dt>
            <dd>
              <PhaseBadge phase={run.phase} />
            </dd>
          </div>
          <div className="flex gap-2">
            <dt className={muted}>Started</dt>
            <dd>{formatTime(run.startTime ?? run.created)}</dd>
          </div>
        </>
      )}
      <div className="flex gap-3">
        <dt className="sr-only">Elsewhere</dt>
        <dd className="flex gap-3">
          <a className={link} href={href({ page: 'run', namespace, name })}>
            Run page
          </a>
          <a className={link} href={href({ page: 'compare', a: { namespace, name }, b: null })}>
            Compare with another run
          </a>
        </dd>
      </div>
    </dl>
  );
}

interface ViewProps {
  readonly namespace: string;
  readonly name: string;
  readonly run: Run;
  readonly spec: Result<RanSpec>;
  readonly events: readonly TraceEvent[];
  /** Whether the stored events end with `run.end`. */
  readonly complete: boolean;
  readonly renderGraph?: RenderGraph;
  /** Where the replay stands at first (tests start at the end); 0 by default. */
  readonly initialPosition?: number;
  /** How long reading the stored events took (ms): the instant replay's measure carries it. */
  readonly readMs?: number | null;
}

/** The performance measure of an instant replay (the console's benchmark reads it): from the press to the end shown. */
export const INSTANT_MEASURE = 'orrery:replay-instant';

/** A loaded replay: the controls, then what the run looked like at that point. */
export function ReplayView({ namespace, name, run, spec, events, complete, renderGraph, initialPosition = 0, readMs = null }: ViewProps) {
  const [replay] = useState(() => new ReplayController(events, specNodesOf(spec.ok ? spec.value.spec : null), initialPosition));
  useEffect(
    () => () => {
      replay.dispose();
    },
    [replay],
  );
  const view = useSyncExternalStore(replay.subscribe, replay.snapshot, replay.snapshot);
  // An instant replay is measured once its end is on the screen (committed).
  useEffect(() => {
    if (!view.ended) return;
    const start = replay.takeInstantStart();
    if (start === null) return;
    performance.measure(INSTANT_MEASURE, { start, end: performance.now(), detail: { events: view.length, readMs } });
  }, [replay, view, readMs]);
  const { model } = view;
  const current = model.events.at(-1) ?? null;
  const currentNode = current === null ? null : nodeOf(current);
  const ranSpec = spec.ok ? spec.value.spec : null;
  const specTools = useMemo(() => parseSpec(ranSpec)?.nodes.flatMap((n) => n.tools) ?? [], [ranSpec]);
  // The A2A and MCP calls up to where the replay stands (12.47–12.51).
  const remote = foldRemoteCalls(model.events, run.captureContent);
  const used = usedEntries(specTools, remote);

  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Replay of {name}</PageHeading>
      <RunFacts namespace={namespace} name={name} run={run} spec={spec.ok ? spec.value : null} />
      {spec.ok ? null : (
        <p className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100">
          <strong>The spec this run ran could not be read ({spec.problem.status === 0 ? 'no answer' : spec.problem.status}):</strong> {spec.problem.message} The replay
          shows the nodes its events name.
        </p>
      )}
      {events.length === 0 ? (
        <p className={card}>This run stored no events, so there is nothing to replay. Its phase is {run.phase ?? 'unknown'}.</p>
      ) : (
        <>
          <Controls replay={replay} view={view} cappedGaps={replay.timeline.cappedGaps} totalMs={replay.timeline.totalMs} />
          {complete ? null : (
            <p className={`text-sm ${muted}`}>
              The stored events end before <code className="font-mono">run.end</code>: the outcome and totals below come from the run’s status.
            </p>
          )}
          <div className="grid gap-4 lg:grid-cols-[minmax(0,1fr)_22rem]">
            <div className="flex min-w-0 flex-col gap-4">
              {renderGraph === undefined ? null : renderGraph({ model, version: view.version, spec: ranSpec })}
              <NodesTable model={model} currentNode={currentNode} />
              <RecentEvents events={model.events} />
              <section className={card} aria-labelledby="replay-remote">
                <h2 id="replay-remote" className="mb-2 text-base font-semibold">
                  Remote calls
                </h2>
                <RemoteCallTabs calls={remote} used={used} namespace={namespace} live={!view.ended} />
              </section>
            </div>
            <div className="flex flex-col gap-4">
              <CurrentEvent event={current} length={view.length} />
              <Outcome model={model} run={run} ended={view.ended} complete={complete} />
              <Loops model={model} />
              <Budgets model={model} />
            </div>
          </div>
        </>
      )}
    </section>
  );
}

function Controls({ replay, view, cappedGaps, totalMs }: { readonly replay: ReplayController; readonly view: ReplaySnapshot; readonly cappedGaps: number; readonly totalMs: number }) {
  const ids = useId();
  const seq = view.model.lastSeq;
  const last = view.model.events.at(-1);
  const playLabel = view.playing ? 'Pause' : view.ended ? 'Play again' : view.position > 0 ? 'Play on' : 'Play';
  const announcement = view.playing
    ? `Playing at ${PLAY_SPEEDS.find((s) => s.speed === view.speed)?.label ?? ''}`
    : view.ended
      ? `Replay at the end: ${view.model.outcome ?? 'no outcome recorded'}`
      : `Paused at seq ${seq} of ${view.length}`;
  return (
    <div className={`${card} flex flex-col gap-3`} role="group" aria-label="Replay controls">
      <div className="flex flex-wrap items-center gap-4">
        <button
          type="button"
          className={`${primaryButton} min-w-28 justify-center`}
          onClick={() => {
            replay.toggle();
          }}
        >
          {playLabel}
        </button>
        <fieldset className="flex items-center gap-2">
          <legend className="sr-only">Speed</legend>
          <span aria-hidden="true" className={muted}>
            Speed
          </span>
          <div className="inline-flex overflow-hidden rounded-md border border-slate-400 dark:border-slate-500">
            {PLAY_SPEEDS.map(({ speed, label }) => (
              <label key={String(speed)} className="cursor-pointer">
                <input
                  type="radio"
                  name={`${ids}-speed`}
                  className="peer sr-only"
                  checked={view.speed === speed}
                  onChange={() => {
                    replay.setSpeed(speed);
                  }}
                />
                <span
                  className={`block px-3 py-1.5 font-medium peer-checked:bg-sky-700 peer-checked:text-white peer-focus-visible:outline-3 peer-focus-visible:-outline-offset-3 peer-focus-visible:outline-sky-600 dark:peer-checked:bg-sky-300 dark:peer-checked:text-slate-950 dark:peer-focus-visible:outline-sky-400`}
                >
                  {label}
                </span>
              </label>
            ))}
          </div>
        </fieldset>
        <button
          type="button"
          className={button}
          aria-describedby={`${ids}-instant-hint`}
          onClick={() => {
            replay.instant();
          }}
        >
          Instant replay
        </button>
        <span id={`${ids}-instant-hint`} className="sr-only">
          Plays every event at once, from the start, and shows the end.
        </span>
        <p className="ml-auto font-medium tabular-nums" data-testid="replay-position">
          {seq === 0 ? `Before the first event (of ${formatCount(view.length)})` : `Seq ${formatCount(seq)} of ${formatCount(view.length)}`}
        </p>
      </div>
      <div className="flex items-center gap-3">
        <label htmlFor={`${ids}-scrub`} className="font-medium whitespace-nowrap">
          Position
        </label>
        <input
          id={`${ids}-scrub`}
          type="range"
          min={0}
          max={view.length}
          step={1}
          value={view.position}
          aria-valuetext={last === undefined ? 'before the first event' : `seq ${last.seq} of ${view.length}: ${last.type}`}
          aria-describedby={`${ids}-scrub-hint`}
          className={`h-2 w-full cursor-pointer accent-sky-700 dark:accent-sky-300 ${focusRing}`}
          onChange={(event) => {
            replay.seek(Number(event.target.value));
          }}
        />
      </div>
      <p id={`${ids}-scrub-hint`} className={`text-sm ${muted}`}>
        Arrow keys step one event, Page Up and Page Down jump, Home and End go to the start and the end. At 1× events come at their recorded
        spacing ({formatDuration(totalMs)} in all)
        {cappedGaps === 0 ? '.' : `; ${formatCount(cappedGaps)} idle ${cappedGaps === 1 ? 'gap' : 'gaps'} longer than ${GAP_CAP_MS / 1000} s (a person deciding, a slow call) ${cappedGaps === 1 ? 'is' : 'are'} shortened to ${GAP_CAP_MS / 1000} s.`}
      </p>
      <p role="status" className="sr-only">
        {announcement}
      </p>
    </div>
  );
}

function NodesTable({ model, currentNode }: { readonly model: RunModel; readonly currentNode: string | null }) {
  const nodes = [...model.nodes.values()];
  return (
    <div className={`${card} overflow-x-auto`}>
      <table className={table}>
        <caption className={caption}>Nodes</caption>
        <thead>
          <tr>
            <th scope="col" className={headCell}>
              Node
            </th>
            <th scope="col" className={headCell}>
              Kind
            </th>
            <th scope="col" className={headCell}>
              State
            </th>
            <th scope="col" className={numHeadCell}>
              Entries
            </th>
            <th scope="col" className={numHeadCell}>
              Tokens
            </th>
            <th scope="col" className={numHeadCell}>
              Latency
            </th>
            <th scope="col" className={numHeadCell}>
              Calls
            </th>
          </tr>
        </thead>
        <tbody>
          {nodes.length === 0 ? (
            <tr>
              <td colSpan={7} className={`${textCell} ${muted}`}>
                No node has been entered yet.
              </td>
            </tr>
          ) : (
            nodes.map((node) => (
              <tr key={node.id} className={node.id === currentNode ? 'bg-sky-50 dark:bg-sky-950' : undefined} aria-current={node.id === currentNode ? 'step' : undefined}>
                <th scope="row" className={`${textCell} font-mono font-medium`}>
                  {node.id}
                  {node.id === currentNode ? <span className="sr-only"> (the current event’s node)</span> : null}
                </th>
                <td className={textCell}>{node.kind || '–'}</td>
                <td className={textCell}>
                  <NodeStateBadge state={node.state} />
                </td>
                <td className={numCell}>{formatCount(node.entries)}</td>
                <td className={numCell}>{formatCount(node.tokens)}</td>
                <td className={numCell}>
                  {/* Latency is counted at each exit: none yet, none to show. */}
                  {node.entries - node.open === 0 ? <FigureText value={null} /> : formatDuration(node.durationMs)}
                </td>
                <td className={numCell}>{formatCount(node.calls)}</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

function CurrentEvent({ event, length }: { readonly event: TraceEvent | null; readonly length: number }) {
  return (
    <section className={card} aria-labelledby="replay-current">
      <h2 id="replay-current" className="mb-2 text-base font-semibold">
        Current event
      </h2>
      {event === null ? (
        <p className={muted}>None yet: press Play, or move the slider. The run has {formatCount(length)} stored events.</p>
      ) : (
        <div className="flex flex-col gap-1">
          <p className="flex flex-wrap items-baseline gap-x-2 text-sm">
            <span className="font-semibold tabular-nums">seq {event.seq}</span>
            <code className="font-mono">{event.type}</code>
            <span className={muted}>{formatTime(event.ts)}</span>
          </p>
          <p>{describeEvent(event)}</p>
        </div>
      )}
    </section>
  );
}

const BUDGETS: readonly { readonly key: BudgetKey; readonly label: string }[] = [
  { key: 'maxTokens', label: 'Tokens' },
  { key: 'maxToolCalls', label: 'Tool calls' },
  { key: 'maxDelegations', label: 'Delegations' },
  { key: 'maxRemoteCalls', label: 'Remote calls' },
  { key: 'timeoutSeconds', label: 'Time' },
];

function Budgets({ model }: { readonly model: RunModel }) {
  const limits = model.budgets;
  return (
    <section className={card} aria-labelledby="replay-budgets">
      <h2 id="replay-budgets" className="mb-2 text-base font-semibold">
        Budgets used
      </h2>
      {limits === null ? (
        <p className={muted}>Known from the run’s first event.</p>
      ) : (
        <ul className="flex flex-col gap-2">
          {BUDGETS.map(({ key, label }) => {
            const used = model.used[key];
            const limit = limits[key];
            const fraction = share(used, limit);
            const hit = model.budgetHits.some((h) => h.budget === key);
            const text = key === 'timeoutSeconds' ? `${formatDuration(used * 1000)} of ${formatDuration(limit * 1000)}` : `${formatCount(used)} of ${formatCount(limit)}`;
            return (
              <li key={key} className="flex flex-col gap-1">
                <div className="flex justify-between gap-2 text-sm">
                  <span>{label}</span>
                  <span className="tabular-nums">
                    {text}
                    {hit ? <strong className="ml-2 text-red-800 dark:text-red-200">hit</strong> : null}
                  </span>
                </div>
                <div aria-hidden="true" className="h-1.5 overflow-hidden rounded-full bg-slate-200 dark:bg-slate-700">
                  <div className={`h-full ${fraction >= 1 ? 'bg-red-700 dark:bg-red-400' : 'bg-sky-700 dark:bg-sky-400'}`} style={{ width: `${(fraction * 100).toFixed(1)}%` }} />
                </div>
              </li>
            );
          })}
        </ul>
      )}
      {model.waitMs > 0 ? <p className={`mt-2 text-sm ${muted}`}>Time leaves out the {formatDuration(model.waitMs)} people took to decide.</p> : null}
    </section>
  );
}

function Outcome({ model, run, ended, complete }: { readonly model: RunModel; readonly run: Run; readonly ended: boolean; readonly complete: boolean }) {
  const end = model.end;
  if (end === null && !(ended && !complete)) return null;
  const totals = end?.totals ?? run.totals;
  const rows: readonly [string, number | null, 'count' | 'duration'][] = [
    ['Tokens', totals?.tokens ?? null, 'count'],
    ['Tool calls', totals?.toolCalls ?? null, 'count'],
    ['Delegations', totals?.delegations ?? null, 'count'],
    ['Remote calls', totals?.remoteCalls ?? null, 'count'],
    ['Wall time', totals?.wallTimeMs ?? null, 'duration'],
    ['Events dropped', end?.dropped ?? null, 'count'],
  ];
  const error = end?.error ?? run.error;
  return (
    <section className={card} aria-labelledby="replay-outcome">
      <h2 id="replay-outcome" className="mb-2 flex items-center gap-2 text-base font-semibold">
        Outcome <PhaseBadge phase={end?.outcome ?? run.phase} />
      </h2>
      {error == null ? null : (
        <p className="mb-2 text-sm">
          {error.node == null ? '' : <span className="font-mono">{error.node}: </span>}
          {error.message}
        </p>
      )}
      <dl className="grid grid-cols-[1fr_auto] gap-x-4 gap-y-1 text-sm">
        {rows.map(([label, value, unit]) => (
          <div key={label} className="contents">
            <dt>{label}</dt>
            <dd className="text-right tabular-nums">
              <FigureText value={value} unit={unit} />
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function Loops({ model }: { readonly model: RunModel }) {
  if (model.loops.size === 0) return null;
  return (
    <section className={card} aria-labelledby="replay-loops">
      <h2 id="replay-loops" className="mb-2 text-base font-semibold">
        Loops
      </h2>
      <ul className="flex flex-col gap-1 text-sm">
        {[...model.loops.values()].map((loop) => (
          <li key={`${loop.tail}→${loop.head}`} className="flex justify-between gap-2">
            <span className="font-mono">
              {loop.tail} → {loop.head}
            </span>
            <span className="tabular-nums">
              {formatCount(loop.iteration)} of {formatCount(loop.max)}
              {loop.stopped ? ', stopped at its cap' : ''}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

const RECENT = 8;

function RecentEvents({ events }: { readonly events: readonly TraceEvent[] }) {
  const recent = events.slice(-RECENT);
  return (
    <section className={card} aria-labelledby="replay-recent">
      <h2 id="replay-recent" className="mb-2 text-base font-semibold">
        Events so far <span className={`text-sm font-normal ${muted}`}>(the last {RECENT})</span>
      </h2>
      {recent.length === 0 ? (
        <p className={muted}>None yet.</p>
      ) : (
        <ol className="flex flex-col gap-1 text-sm">
          {recent.map((event) => (
            <li key={event.seq} className="flex gap-3">
              <span className="w-12 shrink-0 text-right tabular-nums">{event.seq}</span>
              <code className="w-40 shrink-0 font-mono">{event.type}</code>
              <span className="min-w-0">{describeEvent(event)}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
