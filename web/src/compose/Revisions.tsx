// A Composition's revisions in the Open dialog (rule 12.56): newest first, each with its number,
// when it was recorded and its digest, each one openable (an older one is restored by saving it),
// and any two compared (canvas/diff.ts, older to newer). The mark beside the canvas's title while
// it shows an older revision. The logic is in open-list.ts and revision-state.ts.

import { useEffect, useId, useState } from 'react';
import type { StoredComposition } from '../api/compositions.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import { listRevisions, revisionsProblemText, shortDigest, type Revision } from '../api/revisions.ts';
import type { CompositionLink } from '../canvas/store.ts';
import { button, dangerButton, focusRing, input, muted } from '../ui/classes.ts';
import { formatTime } from '../ui/format.ts';
import { compareRevisions, defaultPair } from './open-list.ts';
import { currentRevision, revisionNote } from './revision-state.ts';

/** Beside the canvas's title: "revision 3 of 5 — Save restores it as the newest", when it shows an older revision. */
export function RevisionMark({ link, dirty }: { readonly link: CompositionLink | null; readonly dirty: boolean }) {
  const note = revisionNote(link, dirty);
  if (note === null) return null;
  return <span className="rounded-md border border-amber-700 bg-amber-50 px-2 py-0.5 text-sm text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50">{note}</span>;
}

interface Props {
  readonly token: string;
  readonly api: ApiOptions;
  readonly namespace: string;
  readonly composition: StoredComposition;
  /** Whether the canvas has unsaved changes (opening then asks first). */
  readonly dirty: boolean;
  readonly expire: (problem: Problem) => void;
  /** Opens `revision` of the Composition; null: the latest, as the Composition holds it. */
  readonly onOpen: (revision: Revision | null) => void;
  readonly id: string;
}

export function RevisionsPanel({ token, api, namespace, composition, dirty, expire, onOpen, id }: Props) {
  const ids = useId();
  const { name } = composition;
  const [revisions, setRevisions] = useState<readonly Revision[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [pair, setPair] = useState<readonly [number, number] | null>(null);
  const [confirming, setConfirming] = useState<number | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    void listRevisions(token, namespace, name, { ...api, signal: abort.signal }).then((reply) => {
      if (abort.signal.aborted) return;
      if (reply.ok) {
        setRevisions(reply.value);
        setPair(defaultPair(reply.value));
        setProblem(null);
      } else if (reply.problem.status === 401) expire(reply.problem);
      else setProblem(revisionsProblemText(name, reply.problem));
    });
    return () => {
      abort.abort();
    };
  }, [token, namespace, name, api, expire]);
  const current = currentRevision(composition);
  const latest = (r: Revision): boolean => current === null ? r === revisions?.[0] : r.revision >= current;
  const compared = pair === null || revisions === null ? null : compareRevisions(revisions, pair[0], pair[1]);
  const picker = (which: 0 | 1, label: string) => (
    <label className="flex items-center gap-2 text-sm">
      {label}
      <select
        className={input}
        value={pair?.[which] ?? ''}
        onChange={(e) => {
          const picked = Number(e.target.value);
          setPair((p) => (p === null ? p : which === 0 ? [picked, p[1]] : [p[0], picked]));
        }}
      >
        {(revisions ?? []).map((r) => (
          <option key={r.revision} value={r.revision}>
            {r.revision}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section id={id} aria-labelledby={`${ids}-heading`} className="mt-2 flex flex-col gap-2 border-t border-slate-300 pt-2 dark:border-slate-600">
      <h3 id={`${ids}-heading`} className="font-semibold">
        Revisions of {name}, newest first
      </h3>
      {revisions === null && problem === null ? (
        <p role="status" className={`text-sm ${muted}`}>
          Reading the revisions…
        </p>
      ) : null}
      {problem === null ? null : (
        <p role="alert" className="text-sm text-red-800 dark:text-red-200">
          {problem}
        </p>
      )}
      {revisions !== null && revisions.length === 0 ? <p className={`text-sm ${muted}`}>The operator has recorded no revision of {name} yet: open it as it is.</p> : null}
      {revisions === null || revisions.length === 0 ? null : (
        <>
          <p className={`text-sm ${muted}`}>Opening an older revision puts it on the canvas; Restore (Save) then makes it the newest. The operator keeps the newest 50.</p>
          <table className="w-full text-left text-sm">
            <thead>
              <tr className="border-b border-slate-300 dark:border-slate-600">
                <th scope="col" className="py-1 pr-3">Revision</th>
                <th scope="col" className="py-1 pr-3">Recorded</th>
                <th scope="col" className="py-1 pr-3">Digest</th>
                <th scope="col" className="py-1">
                  <span className="sr-only">Open</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {revisions.map((r) => (
                <tr key={r.revision} className="border-b border-slate-200 dark:border-slate-700">
                  <th scope="row" className="py-1 pr-3 font-normal">
                    {r.revision}
                    {latest(r) ? ' (latest)' : ''}
                  </th>
                  <td className="py-1 pr-3">{r.created === '' ? '–' : formatTime(r.created)}</td>
                  <td className="py-1 pr-3">
                    <code className="font-mono" title={r.digest}>
                      {r.digest === '' ? '–' : shortDigest(r.digest)}
                    </code>
                  </td>
                  <td className="py-1">
                    {dirty && confirming === r.revision ? (
                      <button type="button" className={dangerButton} onClick={() => { onOpen(latest(r) ? null : r); }}>
                        Discard my unsaved changes and open revision {r.revision}
                      </button>
                    ) : (
                      <button
                        type="button"
                        className={button}
                        aria-label={latest(r) ? `Open revision ${r.revision} of ${name} (latest)` : `Open revision ${r.revision} of ${name}`}
                        onClick={() => {
                          if (dirty) setConfirming(r.revision);
                          else onOpen(latest(r) ? null : r);
                        }}
                      >
                        Open
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {revisions.length < 2 || pair === null ? (
            <p className={`text-sm ${muted}`}>Only one revision is kept, so there is nothing to compare yet.</p>
          ) : (
            <fieldset className="flex flex-col gap-2">
              <legend className="text-sm font-medium">Compare two revisions</legend>
              <div className="flex flex-wrap items-center gap-3">
                {picker(0, 'Compare revision')}
                {picker(1, 'with revision')}
              </div>
              {compared === null ? null : compared.kind === 'same-pick' ? (
                <p className={`text-sm ${muted}`}>Pick two different revisions: both pickers name revision {compared.revision}.</p>
              ) : compared.kind === 'missing' ? (
                <p className={`text-sm ${muted}`}>Revision {compared.revision} is no longer kept: pick another.</p>
              ) : (
                <div role="region" aria-labelledby={`${ids}-diff`} tabIndex={0} className={`max-h-64 overflow-auto rounded-md border border-slate-300 p-2 dark:border-slate-600 ${focusRing}`}>
                  <h4 id={`${ids}-diff`} className="text-sm font-semibold">
                    Changes from revision {compared.older.revision} to revision {compared.newer.revision}
                  </h4>
                  {compared.lines.length === 0 ? (
                    <p className="text-sm">
                      Revisions {compared.older.revision} and {compared.newer.revision} hold the same spec.
                    </p>
                  ) : (
                    <ul className="list-disc pl-5 font-mono text-sm">
                      {compared.lines.map((line, i) => (
                        <li key={i}>{line}</li>
                      ))}
                    </ul>
                  )}
                </div>
              )}
            </fieldset>
          )}
        </>
      )}
    </section>
  );
}
