// The live run panel (issue 23, rules 12.31–12.46): the run's header (phase, composition,
// owner, Cancel), how its events are coming in, approvals waiting, the graph of the spec it ran
// (lazily loaded with ELK and React Flow), budgets filling, budgets spent, the timeline of every
// event, the selected node's details and captured content, and the totals once it ended.
//
// A run that is not the caller's (404) shows nothing but the sidecar's message. A live run is
// followed through the stream; a finished one is read as stored pages. When the stream gives
// up, the run is read: an ended run gives its outcome and totals, a live one keeps Cancel and
// Reconnect, an unreadable one is "outcome unknown" (12.44).

import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { Problem } from '../api/http.ts';
import { cancelRun, getRanSpec, getRun, isTerminal, type RanSpec, type Run } from '../api/runs.ts';
import { href } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { ApprovalCards } from '../approvals/ApprovalCards.tsx';
import { recordOpened, recordPhase } from '../history/recent.ts';
import type { Waiting } from '../approvals/waiting.ts';
import { loopRoundsOf } from '../graph/loops.ts';
import type { LoopRound } from '../graph/node-card.ts';
import { eventGraphKey, graphFromEventKey, parseSpec, type GraphSpec } from '../graph/spec.ts';
import { button, dangerButton, link, muted } from '../ui/classes.ts';
import { formatDuration, formatTime } from '../ui/format.ts';
import { PageHeading } from '../ui/PageHeading.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { BudgetHitCards, Budgets } from './Budgets.tsx';
import { CapturedContent, NodeDetails, NodePicker } from './NodeDetails.tsx';
import { foldRemoteCalls, usedEntries } from './remote-calls.ts';
import { A2aTab, McpTab } from './RemoteTabs.tsx';
import { feedStateLine, livePhase, PHASE_BADGE, PHASE_WORDS, type Tone } from './status.ts';
import { OUTCOME_WORDS } from './summary.ts';
import { Tabs } from './Tabs.tsx';
import { Timeline } from './Timeline.tsx';
import { Totals } from './Totals.tsx';
import { useRegistry } from './useRegistry.ts';
import { useRunFeed, type FeedMode } from './useRunFeed.ts';

const RunGraph = lazy(() => import('../graph/RunGraph.tsx'));

/** How often the spec is asked for again while the run has not started. */
export const SPEC_RETRY_MS = 2000;
/** How often a followed run's status is read while no `run.end` came. */
export const STATUS_POLL_MS = 5000;

type SpecState =
  | { readonly kind: 'loading' }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'ok'; readonly graph: GraphSpec; readonly ran: RanSpec }
  | { readonly kind: 'problem'; readonly problem: Problem };

/** What reading the run after the stream gave up said. */
type AfterStop = { readonly kind: 'ended'; readonly run: Run } | { readonly kind: 'live'; readonly run: Run } | { readonly kind: 'unknown'; readonly problem: Problem };

type Cancel =
  | { readonly step: 'idle' }
  | { readonly step: 'confirm' }
  | { readonly step: 'sending' }
  | { readonly step: 'sent' }
  | { readonly step: 'problem'; readonly problem: Problem };

type Tab = 'timeline' | 'details' | 'content' | 'a2a' | 'mcp';

const TONE: Readonly<Record<Tone, string>> = {
  live: 'border-emerald-700 bg-emerald-50 text-emerald-950 dark:border-emerald-400 dark:bg-emerald-950 dark:text-emerald-50',
  busy: 'border-slate-400 bg-white text-slate-900 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100',
  done: 'border-slate-400 bg-white text-slate-900 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100',
  warning: 'border-amber-700 bg-amber-50 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50',
  error: 'border-red-700 bg-red-50 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50',
};

const TONE_MARK: Readonly<Record<Tone, string>> = { live: '●', busy: '…', done: '✓', warning: '!', error: '✗' };

export function RunPage({ namespace, name, waiting }: { readonly namespace: string; readonly name: string; readonly waiting: Waiting }) {
  const { token, api, expire } = useSession();
  const [run, setRun] = useState<Run | null>(null);
  const [runProblem, setRunProblem] = useState<Problem | null>(null);
  const [mode, setMode] = useState<FeedMode | null>(null);
  const [spec, setSpec] = useState<SpecState>({ kind: 'loading' });
  const [specTry, setSpecTry] = useState(0);
  const [afterStop, setAfterStop] = useState<AfterStop | null>(null);
  const [cancel, setCancel] = useState<Cancel>({ step: 'idle' });
  const [selected, setSelected] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab>('timeline');
  const started = useRef(false);
  // The run ended (its status, its events or the read after its stream stopped say so).
  const endedBefore = useRef(false);

  // The run, once (and again after the stream ends, for its final status).
  const readRun = useCallback(
    (signal?: AbortSignal) =>
      getRun(token, namespace, name, { ...api, ...(signal === undefined ? {} : { signal }) }).then((result) => {
        if (signal?.aborted === true) return result;
        if (result.ok) {
          setRun(result.value);
          setRunProblem(null);
          setMode((m) => m ?? (isTerminal(result.value.phase) ? 'pages' : 'stream'));
        } else if (result.problem.status === 401) {
          expire(result.problem);
        }
        return result;
      }),
    [token, namespace, name, api, expire],
  );

  useEffect(() => {
    const abort = new AbortController();
    void readRun(abort.signal).then((result) => {
      if (!abort.signal.aborted && !result.ok && result.problem.status !== 401) setRunProblem(result.problem);
    });
    return () => {
      abort.abort();
    };
  }, [readRun]);

  const specGraph = spec.kind === 'ok' ? spec.graph : null;
  const feed = useRunFeed({ namespace, name, token, api, mode, spec: specGraph, expire });
  const { model } = feed.run;
  useEffect(() => {
    started.current = run?.composition != null || feed.run.model.start !== null;
    endedBefore.current = isTerminal(run?.phase ?? null) || feed.run.model.end !== null || afterStop?.kind === 'ended';
  });

  // The spec the run ran; while it has not started (404), asked again every 2 s.
  useEffect(() => {
    if (runProblem !== null) return undefined;
    const abort = new AbortController();
    let timer: number | undefined;
    void getRanSpec(token, namespace, name, { ...api, signal: abort.signal }).then((result) => {
      if (abort.signal.aborted) return;
      if (result.ok) {
        const graph = parseSpec(result.value.spec);
        setSpec(
          graph === null
            ? { kind: 'problem', problem: { status: 200, code: 'reply', message: 'the spec the run ran has no list of nodes', loc: [], retryAfterSeconds: null } }
            : { kind: 'ok', graph, ran: result.value },
        );
      } else if (result.problem.status === 401) {
        expire(result.problem);
      } else if (result.problem.status === 404 && !started.current && endedBefore.current) {
        // Refused or cancelled before it started: it ran no spec, and never will.
        setSpec({ kind: 'problem', problem: { ...result.problem, message: 'the run ended before it started, so it ran no spec and there is no graph to draw' } });
      } else if (result.problem.status === 404 && !started.current) {
        setSpec({ kind: 'waiting' });
        timer = window.setTimeout(() => {
          setSpecTry((n) => n + 1);
        }, SPEC_RETRY_MS);
      } else {
        setSpec({ kind: 'problem', problem: result.problem });
      }
    });
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [token, namespace, name, api, expire, specTry, runProblem]);

  // A run can end with no run.end (cancelled or refused before it started, its pod deleted),
  // and then its stream has nothing more to say: while it is followed, its status is read every
  // few seconds, and once two reads in a row say it ended, the page takes its end from there.
  const following = mode === 'stream' && model.end === null && afterStop === null;
  const endedReads = useRef(0);
  useEffect(() => {
    if (!following) return undefined;
    endedReads.current = 0;
    const abort = new AbortController();
    const timer = window.setInterval(() => {
      void getRun(token, namespace, name, { ...api, signal: abort.signal }).then((result) => {
        if (abort.signal.aborted || !result.ok) return;
        endedReads.current = isTerminal(result.value.phase) ? endedReads.current + 1 : 0;
        if (endedReads.current >= 2) {
          setRun(result.value);
          setAfterStop({ kind: 'ended', run: result.value });
        }
      });
    }, STATUS_POLL_MS);
    return () => {
      abort.abort();
      window.clearInterval(timer);
    };
  }, [following, token, namespace, name, api]);

  // When the stream stops: gave up → read the run (12.44); ended → read its final status.
  const stopped = feed.state.kind === 'stream' && feed.state.status.state === 'stopped' ? feed.state.status.end : null;
  useEffect(() => {
    if (stopped === null) return undefined;
    const abort = new AbortController();
    if (stopped.reason === 'gave-up') {
      void readRun(abort.signal).then((result) => {
        if (abort.signal.aborted) return;
        if (!result.ok) setAfterStop({ kind: 'unknown', problem: result.problem });
        else setAfterStop({ kind: isTerminal(result.value.phase) ? 'ended' : 'live', run: result.value });
      });
    } else if (stopped.reason === 'ended') {
      void readRun(abort.signal);
    }
    return () => {
      abort.abort();
    };
  }, [stopped, readRun]);

  // The A2A and MCP tabs (12.47–12.51): the calls folded from the events so far (at most one
  // fold a frame, as the page is drawn; a run has at most 2,000 events), the entries the run
  // uses, and the registry, read the first time one of those tabs is shown.
  const remote = foldRemoteCalls(model.events, run?.captureContent ?? false);
  const used = usedEntries(specGraph?.nodes.flatMap((n) => n.tools) ?? [], remote);
  const registry = useRegistry(namespace, tab === 'a2a' || tab === 'mcp');

  // The graph: the spec's; from the events when the spec cannot be read.
  const fallbackKey = eventGraphKey(model.nodes.values(), model.edgesTaken.keys(), model.loops.values());
  const fallback = useMemo(() => graphFromEventKey(fallbackKey), [fallbackKey]);
  const graph = specGraph ?? (spec.kind === 'problem' ? fallback : null);

  const onSelect = useCallback((id: string | null) => {
    setSelected(id);
    if (id !== null) setTab((t) => (t === 'timeline' ? 'details' : t));
  }, []);

  const onDecided = useCallback(() => {
    waiting.refresh();
  }, [waiting]);

  // History's "opened here" list (12.59): this run, and its phase as it changes.
  const phaseNow = afterStop?.kind === 'ended' ? afterStop.run.phase : livePhase(run, model);
  useEffect(() => {
    if (run !== null) recordOpened(run);
  }, [run]);
  useEffect(() => {
    if (phaseNow !== null) recordPhase({ namespace, name }, phaseNow);
  }, [namespace, name, phaseNow]);

  // A 404 (from the run, its stream or its pages) means the run is not the caller's: show no details at all.
  const gone =
    runProblem ??
    (stopped?.reason === 'refused' && stopped.problem.status === 404 ? stopped.problem : null) ??
    (feed.state.kind === 'pages' && feed.state.problem?.status === 404 ? feed.state.problem : null);
  if (gone !== null) {
    return (
      <section className="flex flex-col gap-4">
        <PageHeading>
          Run {namespace}/{name}
        </PageHeading>
        <ProblemAlert doing="Reading the run" problem={gone} />
        {gone === runProblem && gone.status !== 404 ? (
          // Not a refusal of the run itself (a 503, the network): reading it again may work.
          <p>
            <button
              type="button"
              className={button}
              onClick={() => {
                void readRun().then((result) => {
                  if (!result.ok && result.problem.status !== 401) setRunProblem(result.problem);
                });
              }}
            >
              Read the run again
            </button>
          </p>
        ) : null}
        <p>
          <a className={link} href={href({ page: 'runs', namespace, query: new URLSearchParams() })}>
            Back to the runs in {namespace}
          </a>
        </p>
      </section>
    );
  }

  const phase = phaseNow;
  const ended = isTerminal(phase);
  const pending = model.pendingApprovals();
  const line = feedStateLine(feed.state, model.events.length);
  const giveUp = stopped?.reason === 'gave-up';
  const selectedView = selected === null ? null : (model.nodes.get(selected) ?? null);
  const selectedSpec = selected === null ? null : (graph?.nodes.find((n) => n.id === selected) ?? null);
  const rounds = graph === null ? new Map<string, LoopRound>() : loopRoundsOf(graph, model);
  const pickable = graph?.nodes ?? [...model.nodes.values()];
  const limits = model.budgets ?? run?.budgets ?? null;
  const composition = spec.kind === 'ok' ? spec.ran : run?.composition ?? (run?.compositionRef === null || run === null ? null : run.compositionRef);
  const captured = model.start?.captureContent ?? run?.captureContent ?? false;
  const totalsFromRun = model.end === null && afterStop?.kind === 'ended' ? afterStop.run.totals : null;

  return (
    <section
      className="flex flex-col gap-4"
      aria-labelledby="run-heading"
      // Where the page stands, for the benchmark (tests/bench/src/bin/bench_console.rs): the
      // last event applied, the stream's state, whether run.end arrived.
      data-run-last-seq={model.lastSeq}
      data-run-stream={feed.state.kind === 'stream' ? feed.state.status.state : feed.state.kind}
      data-run-ended={model.end !== null}
    >
      <header className="flex flex-wrap items-start justify-between gap-4">
        <div className="flex min-w-0 flex-col gap-1">
          <p className={`text-sm ${muted}`}>
            <a className={link} href={href({ page: 'runs', namespace, query: new URLSearchParams() })}>
              Runs in {namespace}
            </a>{' '}
            / run
          </p>
          <div className="flex flex-wrap items-center gap-3">
            <PageHeading id="run-heading">{name}</PageHeading>
            {phase === null ? null : (
              <span className={`rounded-full border px-2.5 py-0.5 text-sm font-semibold ${PHASE_BADGE[phase]}`}>
                <span className="sr-only">Phase: </span>
                {PHASE_WORDS[phase]}
              </span>
            )}
          </div>
          <p className={`text-sm ${muted}`}>
            {composition === null ? 'An inline composition' : `Composition ${composition.name}${composition.revision === null ? '' : `, revision ${composition.revision}`}`}
            {spec.kind === 'ok' && spec.graph.pattern !== '' ? ` (${spec.graph.pattern})` : ''}
            {run === null ? '' : ` · owner ${run.owner}`}
            {run?.startTime == null ? '' : ` · started ${formatTime(run.startTime)}`}
          </p>
        </div>
        <div className="flex flex-wrap items-center gap-2">
          {line?.reconnect === true && !ended ? (
            <button
              type="button"
              className={button}
              onClick={() => {
                setAfterStop(null);
                feed.reconnect();
              }}
            >
              Reconnect
            </button>
          ) : null}
          {ended ? (
            <a className={button} href={href({ page: 'replay', namespace, name })}>
              Replay
            </a>
          ) : run === null ? null : (
            <CancelControl
              cancel={cancel}
              onStep={setCancel}
              onConfirm={() => {
                setCancel({ step: 'sending' });
                void cancelRun(token, namespace, name, api).then((result) => {
                  if (result.ok) setCancel({ step: 'sent' });
                  else if (result.problem.status === 401) expire(result.problem);
                  else {
                    setCancel({ step: 'problem', problem: result.problem });
                    // A 409 says the run ended: read it, so the phase and the buttons say so too.
                    if (result.problem.status === 409) void readRun();
                  }
                });
              }}
            />
          )}
        </div>
      </header>

      <CancelMessage cancel={cancel} />

      <div className="flex flex-wrap items-start gap-2">
        {line === null ? (
          <p role="status" className={muted}>
            Reading the run…
          </p>
        ) : (
          <p role="status" className={`inline-flex items-center gap-2 rounded-md border px-3 py-1.5 text-sm ${TONE[line.tone]}`}>
            <span aria-hidden="true">{TONE_MARK[line.tone]}</span>
            {line.text}
          </p>
        )}
        {pending.length > 0 ? (
          <p role="status" className="inline-flex items-center rounded-md border border-amber-700 bg-amber-100 px-3 py-1.5 text-sm font-semibold text-amber-950 dark:border-amber-300 dark:bg-amber-900 dark:text-amber-50">
            {pending.length === 1 ? '1 approval waits' : `${pending.length} approvals wait`} for a decision
          </p>
        ) : null}
      </div>

      <Outcome model={model} afterStop={afterStop} run={run} pagesIncomplete={feed.state.kind === 'pages' && !feed.state.reading && !feed.state.complete} giveUp={giveUp} />

      {/* Mounted while the run has approvals at all, so a decision made here keeps its outcome
          (and the focus) when the run's approval.decided arrives before the sidecar's answer. */}
      {model.approvals.size > 0 && run !== null ? (
        <ApprovalCards namespace={namespace} name={name} uid={run.uid} pending={pending} onDecided={onDecided} headed />
      ) : null}

      <BudgetHitCards hits={model.budgetHits} onShowNode={onSelect} />

      <section aria-labelledby="graph-heading" className="flex flex-col gap-2">
        <h2 id="graph-heading" className="sr-only">
          Graph
        </h2>
        <SpecNotice spec={spec} hasFallback={graph !== null} />
        {graph === null ? null : (
          <Suspense
            fallback={
              <p role="status" className={muted}>
                Loading the graph…
              </p>
            }
          >
            <RunGraph graph={graph} title={composition?.name ?? name} run={feed.run} selected={selected} onSelect={onSelect} />
          </Suspense>
        )}
        {graph === null ? null : <Legend />}
      </section>

      <div className="grid grid-cols-1 gap-6 lg:grid-cols-[minmax(0,1fr)_20rem]">
        <Tabs<Tab>
          label="About the run"
          selected={tab}
          onSelect={setTab}
          tabs={[
            { id: 'timeline', label: 'Timeline', panel: <Timeline events={model.events} count={model.events.length} selectedNode={selected} live={!ended} /> },
            {
              id: 'details',
              label: selected === null ? 'Node details' : `Node details: ${selected}`,
              panel: (
                <div className="flex flex-col gap-3">
                  <NodePicker nodes={pickable} selected={selected} onSelect={onSelect} />
                  <NodeDetails spec={selectedSpec} view={selectedView} loop={selected === null ? null : (rounds.get(selected) ?? null)} events={model.events} />
                </div>
              ),
            },
            {
              id: 'content',
              label: 'Content',
              panel: (
                <div className="flex flex-col gap-3">
                  <NodePicker nodes={pickable} selected={selected} onSelect={onSelect} />
                  <CapturedContent captured={captured} runInput={model.start?.input ?? run?.input ?? null} runOutput={model.end?.output ?? null} node={selectedView} />
                </div>
              ),
            },
            { id: 'a2a', label: `A2A (${remote.a2a.length})`, panel: <A2aTab calls={remote} entries={used.a2a} registry={registry} namespace={namespace} live={!ended} /> },
            { id: 'mcp', label: `MCP (${remote.mcp.length})`, panel: <McpTab calls={remote} entries={used.mcp} registry={registry} namespace={namespace} live={!ended} /> },
          ]}
        />
        <aside className="flex flex-col gap-6" aria-label="Budgets and totals">
          <Budgets limits={limits} used={model.used} waitMs={model.waitMs} hits={model.budgetHits} started={model.start !== null} />
          <Totals totals={model.end?.totals ?? totalsFromRun} dropped={model.end?.dropped ?? null} source={model.end === null ? 'run' : 'events'} />
        </aside>
      </div>
    </section>
  );
}

function CancelControl({ cancel, onStep, onConfirm }: { readonly cancel: Cancel; readonly onStep: (c: Cancel) => void; readonly onConfirm: () => void }) {
  if (cancel.step === 'confirm' || cancel.step === 'sending') {
    return (
      <div role="group" aria-label="Cancel the run?" className="flex flex-wrap items-center gap-2 rounded-md border border-red-700 p-2 dark:border-red-400">
        <span className="text-sm">Cancel this run? Its nodes stop and it ends Cancelled.</span>
        <button type="button" className={dangerButton} disabled={cancel.step === 'sending'} onClick={onConfirm} autoFocus>
          {cancel.step === 'sending' ? 'Cancelling…' : 'Yes, cancel the run'}
        </button>
        <button
          type="button"
          className={button}
          disabled={cancel.step === 'sending'}
          onClick={() => {
            onStep({ step: 'idle' });
          }}
        >
          Keep it running
        </button>
      </div>
    );
  }
  return (
    <button
      type="button"
      className={dangerButton}
      disabled={cancel.step === 'sent'}
      onClick={() => {
        onStep({ step: 'confirm' });
      }}
    >
      {cancel.step === 'sent' ? 'Cancel asked' : 'Cancel run…'}
    </button>
  );
}

/** What came of Cancel: asked (202), or what happened instead (a 409: the run had ended). */
function CancelMessage({ cancel }: { readonly cancel: Cancel }) {
  if (cancel.step === 'sent') {
    return (
      <p role="status" className="rounded-md border border-slate-400 p-2 text-sm dark:border-slate-600">
        Cancel asked: the run stops at its next step and ends Cancelled; its last events follow here.
      </p>
    );
  }
  if (cancel.step !== 'problem') return null;
  const problem = cancel.problem;
  if (problem.status === 409) {
    return (
      <div role="alert" className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50">
        <strong>Nothing to cancel (409):</strong> {problem.message}
      </div>
    );
  }
  return <ProblemAlert doing="Cancelling the run" problem={problem} />;
}

function SpecNotice({ spec, hasFallback }: { readonly spec: SpecState; readonly hasFallback: boolean }) {
  const instead = hasFallback ? ' The graph below is drawn from the events instead: only nodes entered and edges taken.' : '';
  switch (spec.kind) {
    case 'loading':
      return (
        <p role="status" className={muted}>
          Reading the spec the run ran…
        </p>
      );
    case 'waiting':
      return (
        <p role="status" className={muted}>
          The run has not started yet: its graph appears when it does (asked again every 2 s).
        </p>
      );
    case 'ok':
      return null;
    case 'problem': {
      const p = spec.problem;
      const what =
        p.status === 403
          ? `The cluster refuses you the spec this run ran (403): ${p.message}`
          : p.status === 409
            ? `The spec found is not the one this run ran (409: its digest differs from the one the run recorded): ${p.message}`
            : `The spec this run ran cannot be read (${p.status}): ${p.message}`;
      return (
        <div role="alert" className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50">
          {what}
          {instead}
        </div>
      );
    }
  }
}

function Legend() {
  return (
    <p className={`text-xs ${muted}`}>
      Bold edges were taken, <span className="font-mono">2×</span> is how often; moving dashes lead into the node running now; a loop&apos;s edge goes
      around, with its cap (<span className="font-mono">max 2</span>) and the round on the node it returns to (<span className="font-mono">loop 1/2</span>);
      dotted edges are a supervisor&apos;s delegations. Tab to a node and press Enter for its details.
    </p>
  );
}

interface OutcomeProps {
  readonly model: ReturnType<typeof useRunFeed>['run']['model'];
  readonly afterStop: AfterStop | null;
  readonly run: Run | null;
  readonly pagesIncomplete: boolean;
  readonly giveUp: boolean;
}

/** The outcome banner: from `run.end`; from the run's status when the events stopped short; or "outcome unknown". */
function Outcome({ model, afterStop, run, pagesIncomplete, giveUp }: OutcomeProps) {
  const end = model.end;
  if (end !== null) {
    const good = end.outcome === 'Succeeded';
    return (
      <div role="status" className={`rounded-lg border-2 p-3 ${good ? 'border-emerald-700 bg-emerald-50 text-emerald-950 dark:border-emerald-400 dark:bg-emerald-950 dark:text-emerald-50' : end.outcome === 'Cancelled' ? 'border-slate-500 bg-slate-100 text-slate-900 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-50' : 'border-red-700 bg-red-50 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50'}`}>
        <p className="font-semibold">
          <span aria-hidden="true">{good ? '✓ ' : '■ '}</span>
          The run ended: {OUTCOME_WORDS[end.outcome]}
          {end.totals.wallTimeMs === undefined ? '' : ` after ${formatDuration(end.totals.wallTimeMs)}`}.
        </p>
        {end.error == null ? null : (
          <p className="text-sm">
            {end.error.node == null ? '' : `At node ${end.error.node}: `}
            {end.error.message}
          </p>
        )}
      </div>
    );
  }
  if (afterStop?.kind === 'unknown') {
    return (
      <div role="alert" className="rounded-lg border-2 border-red-700 bg-red-50 p-3 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50">
        <p className="font-semibold">Outcome unknown.</p>
        <p className="text-sm">
          The stream gave up and the run could not be read ({afterStop.problem.status === 0 ? 'no answer' : afterStop.problem.status}): {afterStop.problem.message}
        </p>
      </div>
    );
  }
  const fromRun = afterStop?.kind === 'ended' ? afterStop.run : pagesIncomplete && run !== null && isTerminal(run.phase) ? run : null;
  if (fromRun?.phase != null && isTerminal(fromRun.phase)) {
    return (
      <div role="status" className="rounded-lg border-2 border-slate-500 bg-slate-100 p-3 text-slate-900 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-50">
        <p className="font-semibold">The run ended: {PHASE_WORDS[fromRun.phase]} (from the run&apos;s status: its events stop before its last one).</p>
        {fromRun.error === null ? null : (
          <p className="text-sm">
            {fromRun.error.node === null ? '' : `At node ${fromRun.error.node}: `}
            {fromRun.error.message}
          </p>
        )}
      </div>
    );
  }
  if (giveUp && afterStop?.kind === 'live') {
    return (
      <div role="status" className="rounded-lg border-2 border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50">
        <p className="font-semibold">The run is still going, but its events stopped coming.</p>
        <p className="text-sm">Reconnect to follow it again, or cancel it.</p>
      </div>
    );
  }
  return null;
}
