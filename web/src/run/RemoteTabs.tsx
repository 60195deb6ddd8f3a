// The run panel's A2A and MCP tabs (rules 12.47–12.51): the run's calls in order, each opening to
// what was sent and what came back (captured text shown as text, never as markup, in boxes the
// keyboard scrolls), then each registry entry of that kind the run uses, read-only, as Compose's
// registry tab shows it. There is no way here to call a tool or fetch a card (7.13): an entry is
// probed again with the kubectl command shown under it. The words come from remote-view.ts.

import { useId, useState, type ReactNode } from 'react';
import type { RegistryItem } from '../api/registry.ts';
import { entryView } from '../compose/registry-view.ts';
import { Entry } from '../registry/RegistryEntry.tsx';
import { focusRing, muted } from '../ui/classes.ts';
import { formatDuration } from '../ui/format.ts';
import { ProblemAlert } from '../ui/Problem.tsx';
import type { A2aCall, Content, McpCallView, RemoteCalls } from './remote-calls.ts';
import { a2aSummary, contentNote, entriesOf, isActing, mcpSummary, replyText, sentText, statesText, transportText } from './remote-view.ts';
import { Tabs } from './Tabs.tsx';
import { useRegistry, type RegistryState } from './useRegistry.ts';

interface Props {
  readonly calls: RemoteCalls;
  /** The entries of this tab's kind the run uses. */
  readonly entries: readonly string[];
  readonly registry: RegistryState;
  readonly namespace: string;
  /** Whether more events may come. */
  readonly live: boolean;
}

function itemsOf(registry: RegistryState): readonly RegistryItem[] {
  return registry.kind === 'ok' ? registry.items : [];
}

/** One call: a button that opens what it sent and got (the disclosure pattern). */
function Call({ summary, marks, children }: { readonly summary: string; readonly marks?: ReactNode; readonly children: ReactNode }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  return (
    <li className="rounded-md border border-slate-300 dark:border-slate-700">
      <button
        type="button"
        aria-expanded={open}
        aria-controls={id}
        className={`flex w-full items-baseline gap-2 rounded-md px-2 py-1.5 text-left text-sm hover:bg-slate-100 dark:hover:bg-slate-800 ${focusRing}`}
        onClick={() => {
          setOpen((o) => !o);
        }}
      >
        <span aria-hidden="true" className="w-3 shrink-0">
          {open ? '▾' : '▸'}
        </span>
        <span className="min-w-0 break-words">{summary}</span>
        {marks}
      </button>
      <div id={id} hidden={!open} className="flex flex-col gap-3 border-t border-slate-300 px-2 py-2 text-sm dark:border-slate-700">
        {children}
      </div>
    </li>
  );
}

function Facts({ children }: { readonly children: ReactNode }) {
  return <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-1">{children}</dl>;
}

function Fact({ term, children }: { readonly term: string; readonly children: ReactNode }) {
  return (
    <>
      <dt className={muted}>{term}</dt>
      <dd className="min-w-0 break-words">{children}</dd>
    </>
  );
}

/** Captured text (untrusted: React writes it as text), scrollable by keyboard; or why there is none. */
function Captured({ label, content }: { readonly label: string; readonly content: Content }) {
  if (content.kind !== 'text') {
    return (
      <p>
        <span className="font-medium">{label}:</span> <span className={muted}>{contentNote(content)}</span>
      </p>
    );
  }
  return (
    <div className="flex flex-col gap-1">
      <span className="font-medium">{label}</span>
      <pre tabIndex={0} aria-label={label} className={`max-h-48 overflow-auto rounded-md border border-slate-300 bg-slate-50 p-2 break-words whitespace-pre-wrap dark:border-slate-700 dark:bg-slate-950 ${focusRing}`}>
        {content.text}
      </pre>
    </div>
  );
}

function CaptureNote({ captured }: { readonly captured: boolean }) {
  return captured ? null : (
    <p className={`text-sm ${muted}`}>
      This run does not capture content (its <code className="font-mono">captureContent</code> is off): each call shows its sizes, states and times, not what was
      sent or came back.
    </p>
  );
}

const actingMark = (
  <strong className="shrink-0 rounded border border-amber-700 px-1 text-xs text-amber-900 dark:border-amber-300 dark:text-amber-200">
    <span className="sr-only">, </span>acting
  </strong>
);

function A2aCallDetails({ call, index, acting }: { readonly call: A2aCall; readonly index: number; readonly acting: boolean }) {
  const answers = call.sent.filter((s) => s.kind === 'answer');
  return (
    <>
      <Facts>
        <Fact term="Node">
          <code className="font-mono">{call.nodeId}</code>
        </Fact>
        <Fact term="Remote agent">
          <code className="font-mono">{call.entry}</code>, skill <code className="font-mono">{call.skill}</code>
          {acting ? ' (acting: the run’s owner confirms each call first)' : ''}
        </Fact>
        <Fact term="Call id">
          <code className="font-mono break-all">{call.callId === '' ? '—' : call.callId}</code>
        </Fact>
        <Fact term="Sent">
          {call.sent.length === 0 ? (
            'nothing'
          ) : (
            <ul>
              {call.sent.map((s) => (
                <li key={s.seq}>{sentText(s)}</li>
              ))}
            </ul>
          )}
        </Fact>
        <Fact term="Task states">{statesText(call)}</Fact>
        <Fact term="Reply">{replyText(call)}</Fact>
        {call.verdict === null ? null : <Fact term="Tool call">{call.verdict.status}</Fact>}
        {call.verdict?.error == null ? null : <Fact term="Why">{call.verdict.error}</Fact>}
        {call.durationMs === null || call.outcome === 'not-sent' ? null : <Fact term="Took">{formatDuration(call.durationMs)}</Fact>}
      </Facts>
      {call.sent.map((s) =>
        s.kind === 'request' ? (
          <Captured key={s.seq} label={`Request of call ${index + 1}`} content={s.content} />
        ) : (
          <Captured key={s.seq} label={`Answer ${answers.indexOf(s) + 1} of call ${index + 1}`} content={s.content} />
        ),
      )}
      {call.reply === null ? null : <Captured label={`Reply of call ${index + 1}`} content={call.reply.content} />}
    </>
  );
}

function McpCallDetails({ call, index }: { readonly call: McpCallView; readonly index: number }) {
  return (
    <>
      <Facts>
        <Fact term="Node">
          <code className="font-mono">{call.nodeId}</code>
        </Fact>
        <Fact term="Server">
          <code className="font-mono">{call.entry}</code>, tool <code className="font-mono">{call.tool}</code>
        </Fact>
        <Fact term="Call id">
          <code className="font-mono break-all">{call.callId === '' ? '—' : call.callId}</code>
        </Fact>
        <Fact term="Status">{call.sent ? (call.status ?? 'unknown') : call.verdict?.dryRun === true ? 'answered by the dry-run tool; nothing was sent' : `not sent (${call.verdict?.status ?? 'unknown'})`}</Fact>
        {call.verdict?.error == null ? null : <Fact term="Why">{call.verdict.error}</Fact>}
        {call.durationMs === null ? null : <Fact term="Took">{formatDuration(call.durationMs)}</Fact>}
        {call.resultSize === null ? null : <Fact term="Result size">{call.resultSize === 1 ? '1 byte' : `${call.resultSize.toLocaleString('en')} bytes`}</Fact>}
      </Facts>
      <Captured label={`Arguments of call ${index + 1}`} content={call.arguments} />
      {call.sent ? <Captured label={`Result of call ${index + 1}`} content={call.result} /> : null}
    </>
  );
}

/** The registry entries of one kind the run uses, read-only (12.49–12.51). */
function Entries({ heading, none, names, registry, namespace, mcp }: { readonly heading: string; readonly none: string; readonly names: readonly string[]; readonly registry: RegistryState; readonly namespace: string; readonly mcp: boolean }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className="flex flex-col gap-2">
      <h3 id={id} className="font-semibold">
        {heading}
      </h3>
      {names.length === 0 ? (
        <p className={muted}>{none}</p>
      ) : (
        <>
          <p className={`text-sm ${muted}`}>
            As the registry of {namespace} is now (the run used it as it was when it started). Read-only: entries are edited as resources, and probed again with
            the command shown under each.
          </p>
          {registry.kind === 'problem' ? <ProblemAlert doing="Reading the registry" problem={registry.problem} /> : null}
          {registry.kind === 'loading' || registry.kind === 'idle' ? (
            <p role="status" className={muted}>
              Reading the registry…
            </p>
          ) : null}
          {registry.kind === 'ok'
            ? entriesOf(names, registry.items).map(({ name, item }) =>
                item === null ? (
                  <p key={name} className="rounded-md border border-slate-300 px-2 py-1.5 text-sm dark:border-slate-600">
                    <code className="font-mono font-semibold">{name}</code> is not in the registry of {namespace}, or you may not read it.
                  </p>
                ) : (
                  <Entry key={name} view={entryView(item, namespace)} transport={mcp ? transportText(item) : null} />
                ),
              )
            : null}
        </>
      )}
    </section>
  );
}

export function A2aTab({ calls, entries, registry, namespace, live }: Props) {
  const id = useId();
  const items = itemsOf(registry);
  return (
    <div className="flex flex-col gap-6">
      <section aria-labelledby={id} className="flex flex-col gap-2">
        <h3 id={id} className="font-semibold">
          Calls to remote agents
        </h3>
        <CaptureNote captured={calls.captured} />
        {calls.a2a.length === 0 ? (
          <p className={muted}>{live ? 'No remote agent has been called yet.' : 'This run called no remote agent.'}</p>
        ) : (
          <ol aria-labelledby={id} className="flex flex-col gap-2">
            {calls.a2a.map((call, i) => {
              const acting = isActing(items, call.entry);
              return (
                <Call key={call.key} summary={a2aSummary(call, i)} marks={acting ? actingMark : null}>
                  <A2aCallDetails call={call} index={i} acting={acting} />
                </Call>
              );
            })}
          </ol>
        )}
      </section>
      <Entries heading="Remote agents this run uses" none="This run’s composition names no remote agent." names={entries} registry={registry} namespace={namespace} mcp={false} />
    </div>
  );
}

export function McpTab({ calls, entries, registry, namespace, live }: Props) {
  const id = useId();
  return (
    <div className="flex flex-col gap-6">
      <section aria-labelledby={id} className="flex flex-col gap-2">
        <h3 id={id} className="font-semibold">
          Calls to MCP tools
        </h3>
        <CaptureNote captured={calls.captured} />
        <p className={`text-sm ${muted}`}>Each call is listed when it returns.</p>
        {calls.mcp.length === 0 ? (
          <p className={muted}>{live ? 'No MCP tool has returned yet.' : 'This run called no MCP tool.'}</p>
        ) : (
          <ol aria-labelledby={id} className="flex flex-col gap-2">
            {calls.mcp.map((call, i) => (
              <Call key={call.key} summary={mcpSummary(call, i)}>
                <McpCallDetails call={call} index={i} />
              </Call>
            ))}
          </ol>
        )}
      </section>
      <Entries heading="MCP servers this run uses" none="This run’s composition names no MCP server." names={entries} registry={registry} namespace={namespace} mcp />
    </div>
  );
}

/**
 * The A2A and MCP tabs on their own, for a page without the run panel's tabs (replay). The
 * registry is read once, when the run uses any entry.
 */
export function RemoteCallTabs({ calls, used, namespace, live }: { readonly calls: RemoteCalls; readonly used: { readonly a2a: readonly string[]; readonly mcp: readonly string[] }; readonly namespace: string; readonly live: boolean }) {
  const [tab, setTab] = useState<'a2a' | 'mcp'>('a2a');
  const registry = useRegistry(namespace, used.a2a.length + used.mcp.length > 0);
  return (
    <Tabs<'a2a' | 'mcp'>
      label="Remote calls"
      selected={tab}
      onSelect={setTab}
      tabs={[
        { id: 'a2a', label: `A2A (${calls.a2a.length})`, panel: <A2aTab calls={calls} entries={used.a2a} registry={registry} namespace={namespace} live={live} /> },
        { id: 'mcp', label: `MCP (${calls.mcp.length})`, panel: <McpTab calls={calls} entries={used.mcp} registry={registry} namespace={namespace} live={live} /> },
      ]}
    />
  );
}
