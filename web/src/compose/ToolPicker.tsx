// A node's tools, picked from the registry (rules 12.17, 4.52; the logic is tool-picker.ts). The
// tools on the node, each with Remove and, when the registry no longer offers it or the server
// would refuse it, its flag; then every MCP tool and A2A skill of the namespace's registry with
// Add: acting skills marked, and what cannot be added shown but off, its reason as the button's
// description, so a keyboard or screen reader user hears it too.

import { useEffect, useId, useRef, useState } from 'react';
import type { PlacedFinding } from '../canvas/findings.ts';
import { button, input, muted } from '../ui/classes.ts';
import { addRefusal, nodeTools, type PickableTool, type PickerEntry } from './tool-picker.ts';

interface Props {
  readonly nodeId: string;
  /** The node's kind calls tools (LLMAgent, Supervisor); else its tools (from an import) can only be removed. */
  readonly takesTools: boolean;
  readonly kind: string;
  readonly tools: readonly string[];
  /** The registry's tools, or null when it has not been read. */
  readonly choices: readonly PickerEntry[] | null;
  /** Why the registry could not be read, if it could not. */
  readonly registryProblem: string | null;
  readonly help: string | null;
  /** The server's findings on the node's `tools`. */
  readonly problems: readonly PlacedFinding[];
  readonly readOnly: boolean;
  readonly onChange: (tools: readonly string[]) => void;
}

const badge = 'rounded border border-amber-700 px-1 text-xs font-semibold text-amber-900 dark:border-amber-300 dark:text-amber-100';
const flagText = 'text-sm text-red-800 dark:text-red-200';

function ActsBadge() {
  return <span className={badge}>acts</span>;
}

export function ToolPicker({ nodeId, takesTools, kind, tools, choices, registryProblem, help, problems, readOnly, onChange }: Props) {
  const ids = useId();
  const [filter, setFilter] = useState('');
  // After a Remove the focus goes to the Remove button now at that place (or the one before), else the heading, never lost.
  const section = useRef<HTMLElement>(null);
  const refocus = useRef<number | null>(null);
  useEffect(() => {
    const at = refocus.current;
    if (at === null) return;
    refocus.current = null;
    const removes = section.current?.querySelectorAll<HTMLButtonElement>('[data-remove-tool]') ?? [];
    const next = removes[Math.min(at, removes.length - 1)];
    if (next === undefined) section.current?.querySelector<HTMLElement>('h3')?.focus();
    else next.focus();
  });
  const listed = nodeTools(tools, choices ?? []);
  // The server's findings at a tool (`tools[k]`) are said at that tool, in its words, instead of the page's own flag; the rest below the list.
  const at = (i: number): readonly PlacedFinding[] => problems.filter((p) => p.target.kind === 'node' && p.target.path[1] === i);
  const elsewhere = problems.filter((p) => !(p.target.kind === 'node' && typeof p.target.path[1] === 'number' && p.target.path[1] < tools.length));
  const wanted = filter.trim().toLowerCase();
  const shown = (choices ?? [])
    .map((entry) => ({ entry, tools: entry.tools.filter((t) => wanted === '' || t.reference.toLowerCase().includes(wanted)) }))
    .filter((e) => e.tools.length > 0 || (wanted === '' && e.entry.tools.length === 0));
  const add = (tool: PickableTool): void => {
    if (addRefusal(tool, tools) === null) onChange([...tools, tool.reference]);
  };
  return (
    <section ref={section} aria-labelledby={`${ids}-heading`} className="flex flex-col gap-2">
      <h3 id={`${ids}-heading`} tabIndex={-1} className="text-sm font-medium">
        Tools
      </h3>
      {help === null ? null : <p className={`text-xs ${muted}`}>{help}</p>}
      {tools.length === 0 ? <p className={`text-sm ${muted}`}>No tools yet{readOnly ? '.' : ': add them from the registry below.'}</p> : null}
      {takesTools ? null : (
        <p className={flagText}>
          <span aria-hidden="true">✗ </span>A {kind} calls no tools (only LLMAgent and Supervisor nodes do): remove these.
        </p>
      )}
      <ul aria-label={`Tools of ${nodeId}`} className="flex flex-col gap-1">
        {listed.map((tool, i) => (
          <li key={`${tool.reference}-${i}`} className="flex flex-col gap-0.5 rounded border border-slate-300 px-2 py-1 dark:border-slate-600">
            <div className="flex items-center justify-between gap-2">
              <span className="flex min-w-0 items-center gap-1">
                <code className="truncate font-mono text-sm">{tool.reference}</code>
                {tool.offered?.acting === true ? <ActsBadge /> : null}
              </span>
              {readOnly ? null : (
                <button
                  type="button"
                  className={`${button} !px-2 !py-0 text-sm`}
                  aria-label={`Remove ${tool.reference}`}
                  data-remove-tool=""
                  onClick={() => {
                    onChange(tools.filter((_, j) => j !== i));
                    refocus.current = i;
                  }}
                >
                  Remove
                </button>
              )}
            </div>
            {at(i).map((p, j) => (
              <p key={j} className={flagText}>
                <span aria-hidden="true">✗ </span>
                {p.finding.message}
              </p>
            ))}
            {tool.flag === null || choices === null || at(i).length > 0 ? null : (
              <p className={flagText}>
                <span aria-hidden="true">✗ </span>
                {tool.flag}.
              </p>
            )}
            {tool.offered?.acting === true ? <p className={`text-xs ${muted}`}>Acts on the world: each call waits for the run owner&apos;s confirmation.</p> : null}
          </li>
        ))}
      </ul>
      {elsewhere.length === 0 ? null : (
        <ul className={`flex flex-col gap-0.5 ${flagText}`} aria-label={`Problems with the tools of ${nodeId}`}>
          {elsewhere.map((p, i) => (
            <li key={i}>
              <span aria-hidden="true">✗ </span>
              {p.finding.message}
            </li>
          ))}
        </ul>
      )}
      {readOnly || !takesTools ? null : (
        <div className="flex flex-col gap-2">
          <h4 className="text-sm font-medium">Add from the registry</h4>
          {choices === null ? (
            <p className={`text-sm ${muted}`}>{registryProblem ?? 'Reading the registry…'} Tools are picked from it.</p>
          ) : choices.length === 0 ? (
            <p className={`text-sm ${muted}`}>This namespace&apos;s registry has no MCP server or remote agent you may read: ask the platform team to register one (a RegistryEntry with spec.mcp or spec.a2a).</p>
          ) : (
            <>
              <div className="flex flex-col gap-1">
                <label htmlFor={`${ids}-filter`} className="text-xs font-medium">
                  Filter the registry&apos;s tools
                </label>
                <input id={`${ids}-filter`} type="search" className={`${input} !py-1 text-sm`} value={filter} placeholder="search, demo-writer…" onChange={(e) => { setFilter(e.target.value); }} />
              </div>
              {shown.length === 0 ? <p className={`text-sm ${muted}`}>No tool matches {JSON.stringify(filter.trim())}.</p> : null}
              {shown.map(({ entry, tools: entryTools }) => (
                <EntryTools key={entry.name} entry={entry} tools={entryTools} onNode={tools} onAdd={add} />
              ))}
            </>
          )}
        </div>
      )}
    </section>
  );
}

function EntryTools({ entry, tools, onNode, onAdd }: { readonly entry: PickerEntry; readonly tools: readonly PickableTool[]; readonly onNode: readonly string[]; readonly onAdd: (tool: PickableTool) => void }) {
  const ids = useId();
  const what = entry.source === 'mcp' ? 'MCP server' : 'remote agent';
  const stateId = entry.stateNote === null ? undefined : `${ids}-state`;
  return (
    <div role="group" aria-labelledby={`${ids}-name`} className="flex flex-col gap-1 rounded border border-slate-300 p-2 dark:border-slate-600">
      <p id={`${ids}-name`} className="text-sm">
        <code className="font-mono font-semibold">{entry.name}</code> <span className={muted}>({what})</span>
      </p>
      {entry.stateNote === null ? null : (
        <p id={stateId} className="text-xs text-amber-900 dark:text-amber-100">
          <span aria-hidden="true">! </span>
          {entry.name} is {entry.stateNote}.
        </p>
      )}
      {tools.length === 0 ? <p className={`text-xs ${muted}`}>It offers no {entry.source === 'mcp' ? 'tools' : 'skills'} yet.</p> : null}
      <ul className="flex flex-col gap-1">
        {tools.map((tool, index) => {
          const why = addRefusal(tool, onNode);
          const whyId = `${ids}-${index}-why`;
          const actsId = `${ids}-${index}-acts`;
          const describedBy = [why === null ? null : whyId, tool.acting ? actsId : null, why === null ? (stateId ?? null) : null].filter((x) => x !== null).join(' ');
          const onIt = why === 'already on this node';
          return (
            <li key={tool.reference} className="flex flex-col gap-0.5">
              <div className="flex items-center justify-between gap-2">
                <span className={`flex min-w-0 items-center gap-1 ${why === null || onIt ? '' : muted}`}>
                  <code className="truncate font-mono text-xs">{tool.name}</code>
                  {tool.acting ? <ActsBadge /> : null}
                </span>
                <button
                  type="button"
                  className={`${button} !px-2 !py-0 text-sm ${why === null ? '' : 'cursor-not-allowed opacity-60'}`}
                  aria-label={`Add ${tool.reference}`}
                  aria-disabled={why === null ? undefined : 'true'}
                  aria-describedby={describedBy === '' ? undefined : describedBy}
                  onClick={() => {
                    onAdd(tool);
                  }}
                >
                  {onIt ? 'Added' : 'Add'}
                </button>
              </div>
              {tool.acting ? (
                <p id={actsId} className={`text-xs ${muted}`}>
                  Acts on the world: each call waits for the run owner&apos;s confirmation.
                </p>
              ) : null}
              {why === null || onIt ? null : (
                <p id={whyId} className={`text-xs ${muted}`}>
                  Cannot be added: {why}.
                </p>
              )}
              {onIt ? (
                <p id={whyId} className="sr-only">
                  Already on this node.
                </p>
              ) : null}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
