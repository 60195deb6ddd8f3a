// One RegistryEntry, read-only, as a disclosure (rules 12.49–12.52): its readiness, kind,
// endpoint, network, condition and last error; an A2A entry's card digest and how it was pinned,
// the card's skills allowed and acting (4.52); an MCP entry's tools, allowed and read-only; what a
// changed probe found with the accept-pins command, and the reprobe command. Shared by Compose's
// registry tab and the run panel's A2A and MCP tabs (moved here from compose/RegistryPanel.tsx).

import type { RegistryItem } from '../api/registry.ts';
import type { EntryView } from '../compose/registry-view.ts';
import { focusRing, muted } from '../ui/classes.ts';

const KIND_WORDS: Readonly<Record<RegistryItem['kind'], string>> = { mcp: 'MCP server', a2a: 'A2A agent', model: 'Model', unknown: 'Unknown kind' };

function Readiness({ view }: { readonly view: EntryView }) {
  if (view.ready === null) return <span className={muted}>not probed yet</span>;
  return view.ready ? (
    <span className="text-emerald-800 dark:text-emerald-300">
      <span aria-hidden="true">✓ </span>Ready{view.reason === null ? '' : ` (${view.reason})`}
    </span>
  ) : (
    <span className="text-red-800 dark:text-red-200">
      <span aria-hidden="true">✗ </span>Not ready{view.reason === null ? '' : ` (${view.reason})`}
    </span>
  );
}

function Command({ label, command }: { readonly label: string; readonly command: string }) {
  return (
    <div className="flex flex-col gap-0.5">
      <span className="text-sm">{label}</span>
      <code tabIndex={0} className={`block rounded bg-slate-100 p-1.5 font-mono text-xs break-all whitespace-pre-wrap dark:bg-slate-950 ${focusRing}`}>
        {command}
      </code>
    </div>
  );
}

/**
 * `transport`: an MCP entry's transport, in words, shown beside its endpoint when given (12.51).
 * `heading`: the level of the pin change's heading, one below the heading the entries sit under.
 */
export function Entry({ view, transport = null, heading = 4 }: { readonly view: EntryView; readonly transport?: string | null; readonly heading?: 3 | 4 }) {
  const Heading = heading === 3 ? 'h3' : 'h4';
  return (
    <details className="rounded-md border border-slate-300 dark:border-slate-600" open={view.pinChange !== null}>
      <summary className={`flex cursor-pointer flex-wrap items-baseline gap-x-2 px-2 py-1.5 ${focusRing}`}>
        <code className="font-mono font-semibold">{view.name}</code>
        <span className={`text-sm ${muted}`}>{KIND_WORDS[view.kind]}</span>
        <span className="text-sm">
          <Readiness view={view} />
        </span>
      </summary>
      <div className="flex flex-col gap-2 border-t border-slate-300 px-2 py-2 text-sm dark:border-slate-600">
        <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-1">
          <dt className={muted}>Endpoint</dt>
          <dd className="font-mono break-all">{view.endpoint ?? '—'}</dd>
          {transport === null ? null : (
            <>
              <dt className={muted}>Transport</dt>
              <dd>{transport}</dd>
            </>
          )}
          <dt className={muted}>Network</dt>
          <dd>{view.privateNetwork ? 'private (on the deployment’s allowlist)' : 'public'}</dd>
          {view.message === null ? null : (
            <>
              <dt className={muted}>Condition</dt>
              <dd>{view.message}</dd>
            </>
          )}
          {view.lastError === null ? null : (
            <>
              <dt className={muted}>Last error</dt>
              <dd className="text-red-800 dark:text-red-200">{view.lastError}</dd>
            </>
          )}
          {view.kind === 'a2a' ? (
            <>
              <dt className={muted}>Card digest</dt>
              <dd className="font-mono break-all">
                {view.cardDigest ?? 'not pinned yet'} <span className={`font-sans ${muted}`}>({view.pinnedBy === 'entry' ? 'pinned by the entry' : 'pinned on first use'})</span>
              </dd>
            </>
          ) : null}
        </dl>
        {view.skills.length === 0 ? null : (
          <table className="text-left [&_td]:py-0.5 [&_td]:pr-3 [&_th]:pr-3">
            <caption className="text-left font-medium">Skills of the card</caption>
            <thead>
              <tr>
                <th scope="col">Skill</th>
                <th scope="col">Allowed</th>
                <th scope="col">Acts</th>
              </tr>
            </thead>
            <tbody>
              {view.skills.map((s) => (
                <tr key={s.name}>
                  <td className="font-mono">{s.name}</td>
                  <td>{s.allowed ? 'yes' : 'no'}</td>
                  <td>{s.acting ? <strong className="text-amber-900 dark:text-amber-200">acting</strong> : 'read-only'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {view.tools.length === 0 ? null : (
          <table className="text-left [&_td]:py-0.5 [&_td]:pr-3 [&_th]:pr-3">
            <caption className="text-left font-medium">Tools</caption>
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Allowed</th>
                <th scope="col">Read-only</th>
              </tr>
            </thead>
            <tbody>
              {view.tools.map((t) => (
                <tr key={t.name}>
                  <td className="font-mono">{t.name}</td>
                  <td>{t.allowed ? 'yes' : 'no'}</td>
                  <td>
                    {t.readOnly ? 'yes' : <strong className="text-amber-900 dark:text-amber-200">no: acts</strong>}
                    {t.hint === null ? '' : `, the server hints ${t.hint ? 'read-only' : 'acting'}`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {view.pinChange === null ? null : (
          <section aria-label={`What changed at ${view.name}`} className="flex flex-col gap-1 rounded border border-amber-700 p-2 dark:border-amber-300">
            <Heading className="font-semibold">The last probe found other pins than the pinned ones</Heading>
            <ul className="list-disc pl-5">
              {view.pinChange.cardDigest === null ? null : (
                <li>
                  The card’s digest: <code className="font-mono break-all">{view.pinChange.cardDigest.from ?? 'none'}</code> → <code className="font-mono break-all">{view.pinChange.cardDigest.to}</code>
                </li>
              )}
              {view.pinChange.skillsAdded.length === 0 ? null : <li>Skills added: {view.pinChange.skillsAdded.join(', ')}</li>}
              {view.pinChange.skillsRemoved.length === 0 ? null : <li>Skills removed: {view.pinChange.skillsRemoved.join(', ')}</li>}
              {view.pinChange.toolsAdded.length === 0 ? null : <li>Tools added: {view.pinChange.toolsAdded.join(', ')}</li>}
              {view.pinChange.toolsRemoved.length === 0 ? null : <li>Tools removed: {view.pinChange.toolsRemoved.join(', ')}</li>}
              {view.pinChange.toolsChanged.map((t) => (
                <li key={t.name}>
                  <code className="font-mono">{t.name}</code>: its {t.parts.join(', ')} changed
                </li>
              ))}
            </ul>
            <Command label="Accept exactly these pins (someone who may annotate the entry):" command={view.pinChange.acceptCommand} />
          </section>
        )}
        <Command label="Probe it again now:" command={view.reprobeCommand} />
      </div>
    </details>
  );
}
