// The selected node's details (what the spec says it is, what it did in this run, its events)
// and the content it saw (its input and answer, when the run captures content). The selection
// is shared with the graph: Enter on a node there, or the node list here, picks it.

import { useId, type ReactNode } from 'react';
import type { TraceEvent } from '../api/trace.ts';
import type { SpecNode } from '../graph/spec.ts';
import { loopText, STATE_WORDS, type LoopRound } from '../graph/node-card.ts';
import { focusRing, input, muted } from '../ui/classes.ts';
import { formatCount, formatDuration } from '../ui/format.ts';
import type { NodeView } from './model.ts';
import { BUDGET_NAMES, eventNode, summarize } from './summary.ts';

/** The most of a node's events listed in its details (the timeline has them all). */
const NODE_EVENTS_SHOWN = 30;

interface PickerProps {
  readonly nodes: readonly { readonly id: string; readonly kind: string }[];
  readonly selected: string | null;
  readonly onSelect: (id: string | null) => void;
}

export function NodePicker({ nodes, selected, onSelect }: PickerProps) {
  const id = useId();
  return (
    <div className="flex items-center gap-2">
      <label htmlFor={id} className="font-medium">
        Node
      </label>
      <select
        id={id}
        className={input}
        value={selected ?? ''}
        onChange={(event) => {
          onSelect(event.target.value === '' ? null : event.target.value);
        }}
      >
        <option value="">Choose a node…</option>
        {nodes.map((n) => (
          <option key={n.id} value={n.id}>
            {n.id} ({n.kind})
          </option>
        ))}
      </select>
    </div>
  );
}

function Row({ term, children }: { readonly term: string; readonly children: ReactNode }) {
  return (
    <>
      <dt className="font-medium">{term}</dt>
      <dd className="min-w-0 break-words">{children}</dd>
    </>
  );
}

interface DetailsProps {
  readonly spec: SpecNode | null;
  readonly view: NodeView | null;
  readonly loop: LoopRound | null;
  /** All the run's events (the node's are picked out). */
  readonly events: readonly TraceEvent[];
}

export function NodeDetails({ spec, view, loop, events }: DetailsProps) {
  if (view === null && spec === null) return <p className={muted}>Choose a node above, or in the graph (click it, or Tab to it and press Enter), to see its details.</p>;
  const id = view?.id ?? spec?.id ?? '';
  const own = events.filter((e) => eventNode(e) === id);
  const recent = own.slice(-NODE_EVENTS_SHOWN);
  return (
    <div className="flex flex-col gap-4">
      <dl className="grid grid-cols-[10rem_1fr] gap-x-4 gap-y-1 text-sm">
        <Row term="Kind">{view?.kind ?? spec?.kind}</Row>
        {view === null ? null : (
          <>
            <Row term="State">{STATE_WORDS[view.state]}</Row>
            <Row term="Entered">{view.entries === 1 ? 'once' : `${formatCount(view.entries)} times`}</Row>
            <Row term="Tokens">{formatCount(view.tokens)}</Row>
            <Row term="Model calls">{formatCount(view.modelCalls)}</Row>
            <Row term="Time in the node">{formatDuration(view.durationMs)}</Row>
            <Row term="Tool calls">{formatCount(view.calls)}</Row>
            {view.label === null ? null : <Row term="Last label">{view.label}</Row>}
            {view.error === null ? null : <Row term="Error">{view.error}</Row>}
            {view.budgetHit === null ? null : <Row term="Budget spent here">{BUDGET_NAMES[view.budgetHit]}</Row>}
          </>
        )}
        {loop === null ? null : <Row term="Loop it heads">{loopText(loop)}</Row>}
        {(view?.model ?? spec?.model ?? null) === null ? null : <Row term="Model">{view?.model ?? spec?.model}</Row>}
        {spec?.description == null ? null : <Row term="Description">{spec.description}</Row>}
        {spec?.prompt == null ? null : <Row term="Asks the reviewer">{spec.prompt}</Row>}
        {spec === null || spec.tools.length === 0 ? null : (
          <Row term="Tools">
            <ul>
              {spec.tools.map((t) => (
                <li key={t} className="font-mono">
                  {t}
                </li>
              ))}
            </ul>
          </Row>
        )}
        {spec === null || spec.children.length === 0 ? null : <Row term="Delegates to">{spec.children.join(', ')}</Row>}
        {spec === null || spec.labels.length === 0 ? null : <Row term="Answers with a label">{spec.labels.join(', ')}</Row>}
      </dl>
      {spec?.instruction == null ? null : (
        <details className="text-sm">
          <summary className={`cursor-pointer font-medium ${focusRing}`}>Instruction</summary>
          <p className="mt-1 whitespace-pre-wrap">{spec.instruction}</p>
        </details>
      )}
      <div className="flex flex-col gap-1">
        <h3 className="font-semibold">Its events</h3>
        {own.length === 0 ? (
          <p className={`text-sm ${muted}`}>None yet.</p>
        ) : (
          <>
            {own.length > recent.length ? <p className={`text-sm ${muted}`}>The last {recent.length} of {own.length}; the timeline has them all.</p> : null}
            <ol className="flex flex-col text-sm">
              {recent.map((e) => (
                <li key={e.seq} className="flex gap-3">
                  <span className="w-12 shrink-0 text-right font-mono tabular-nums">{e.seq}</span>
                  <span className="w-36 shrink-0 font-mono">{e.type}</span>
                  <span className="min-w-0 break-words">{summarize(e)}</span>
                </li>
              ))}
            </ol>
          </>
        )}
      </div>
    </div>
  );
}

function Text({ label, text }: { readonly label: string; readonly text: string }) {
  return (
    <div className="flex flex-col gap-1">
      <h3 className="font-semibold">{label}</h3>
      <pre tabIndex={0} aria-label={label} className={`max-h-48 overflow-auto rounded-md border border-slate-300 bg-slate-50 p-2 text-sm whitespace-pre-wrap dark:border-slate-700 dark:bg-slate-950 ${focusRing}`}>
        {text === '' ? '(empty)' : text}
      </pre>
    </div>
  );
}

interface ContentProps {
  /** Whether the run captures content (`run.start`, else the run's spec). */
  readonly captured: boolean;
  readonly runInput: string | null;
  readonly runOutput: string | null;
  readonly node: NodeView | null;
}

export function CapturedContent({ captured, runInput, runOutput, node }: ContentProps) {
  return (
    <div className="flex flex-col gap-4">
      {captured ? null : (
        <p className={muted}>
          This run does not capture content (its <code className="font-mono">captureContent</code> is off), so the nodes' inputs and answers were not
          kept. Start a run with content capture on to see them here.
        </p>
      )}
      {runInput === null ? null : <Text label="The run's input" text={runInput} />}
      {captured ? (
        node === null ? (
          <p className={muted}>Choose a node above, or in the graph, to see its input and answer.</p>
        ) : (
          <>
            {node.input === null ? <p className={muted}>No input of {node.id} was captured{node.entries === 0 ? ' (it has not run)' : ''}.</p> : <Text label={`Input of ${node.id} (its last entry)`} text={node.input} />}
            {node.answer === null ? <p className={muted}>No answer of {node.id} was captured{node.entries === 0 ? ' (it has not run)' : ''}.</p> : <Text label={`Answer of ${node.id} (its last entry)`} text={node.answer} />}
          </>
        )
      ) : null}
      {runOutput === null ? null : <Text label="The run's output" text={runOutput} />}
    </div>
  );
}
