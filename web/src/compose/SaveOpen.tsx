// Save and open (rules 12.53–12.56): the canvas written as a Composition with the person's own
// rights (`PUT …/compositions/{name}`: validated, then server-side apply as `orrery-console`),
// and a Composition opened from the cluster: the list newest first by last change, filtered,
// each one's revisions to open (an older one is restored by saving it) or compare (Revisions.tsx).
// A save sends the version the canvas was read from: someone else's change in between is a
// conflict, shown with what to do (keep theirs, keep mine, or take over the fields another
// manager owns, confirmed), never an overwrite.

import { useEffect, useId, useState } from 'react';
import { listCompositions, type FieldConflict, type SaveOutcome, type StoredComposition } from '../api/compositions.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import { readLastChanges, type LastChanges, type Revision } from '../api/revisions.ts';
import { locText } from '../canvas/findings.ts';
import { button, dangerButton, input, muted, primaryButton } from '../ui/classes.ts';
import { Dialog } from '../ui/Dialog.tsx';
import { formatTime } from '../ui/format.ts';
import { byLastChange, matchesFilter } from './open-list.ts';
import { currentRevision } from './revision-state.ts';
import { RevisionsPanel } from './Revisions.tsx';

/** A Composition's name: a DNS subdomain (lowercase letters, digits, `-` and `.`, at most 253). */
export function compositionNameProblem(name: string): string | null {
  if (name === '') return 'Type a name.';
  if (name.length > 253) return 'A name has at most 253 characters.';
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) return `"${name}" is not a name Kubernetes takes: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.`;
  return null;
}

export function NameDialog({ open, title, initial, onSave, onClose }: { readonly open: boolean; readonly title: string; readonly initial: string; readonly onSave: (name: string) => void; readonly onClose: () => void }) {
  const ids = useId();
  const [name, setName] = useState(initial);
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <Dialog open={open} title={title} onClose={onClose}>
      <form
        className="flex flex-col gap-2"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          const trimmed = name.trim();
          const wrong = compositionNameProblem(trimmed);
          setProblem(wrong);
          if (wrong === null) onSave(trimmed);
        }}
      >
        <label htmlFor={`${ids}-name`} className="text-sm font-medium">
          Name of the new Composition
        </label>
        <input
          id={`${ids}-name`}
          className={`${input} font-mono`}
          value={name}
          aria-invalid={problem === null ? undefined : true}
          aria-describedby={problem === null ? undefined : `${ids}-problem`}
          onChange={(e) => {
            setName(e.target.value);
          }}
        />
        {problem === null ? null : (
          <p id={`${ids}-problem`} role="alert" className="text-sm text-red-800 dark:text-red-200">
            {problem}
          </p>
        )}
        <div>
          <button type="submit" className={primaryButton}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** What a save that did not happen says, and what can be done about it. */
export type SaveTrouble = Exclude<SaveOutcome, { readonly kind: 'saved' }>;

function managersOf(conflicts: readonly FieldConflict[]): string {
  return [...new Set(conflicts.map((c) => c.manager))].join(', ') || 'another manager';
}

export function SaveTroublePanel({
  trouble,
  name,
  onKeepTheirs,
  onKeepMine,
  onTakeOver,
  onDismiss,
}: {
  readonly trouble: SaveTrouble;
  readonly name: string;
  readonly onKeepTheirs: (current: StoredComposition) => void;
  readonly onKeepMine: (current: StoredComposition) => void;
  readonly onTakeOver: () => void;
  readonly onDismiss: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const frame = 'flex flex-col gap-2 rounded-md border border-red-700 bg-red-50 px-3 py-2 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50';
  const dismiss = (
    <button type="button" className={button} onClick={onDismiss}>
      Dismiss
    </button>
  );
  switch (trouble.kind) {
    case 'conflict': {
      const current = trouble.current;
      return (
        <section role="alert" aria-label="Not saved: changed in the cluster" className={frame}>
          <p>
            Not saved: {name} changed in the cluster since the canvas read it. Keep theirs to load the cluster's version (your edits go, Undo cannot bring them
            back), or keep yours to save over theirs on purpose.
          </p>
          <div className="flex flex-wrap gap-2">
            {current === null ? null : (
              <>
                <button type="button" className={button} onClick={() => { onKeepTheirs(current); }}>
                  Keep theirs
                </button>
                <button type="button" className={dangerButton} onClick={() => { onKeepMine(current); }}>
                  Keep mine (save over theirs)
                </button>
              </>
            )}
            {dismiss}
          </div>
        </section>
      );
    }
    case 'field_conflict':
      return (
        <section role="alert" aria-label="Not saved: fields another manager owns" className={frame}>
          <p>
            Not saved: {managersOf(trouble.conflicts)} manages fields of {name} that the canvas changes:
          </p>
          <ul className="list-disc pl-5 text-sm">
            {trouble.conflicts.map((c, i) => (
              <li key={i}>
                <code className="font-mono">{c.field}</code> ({c.manager})
              </li>
            ))}
          </ul>
          <p className="text-sm">If {managersOf(trouble.conflicts)} applies again (a GitOps sync), it will take them back.</p>
          <div className="flex flex-wrap gap-2">
            {confirming ? (
              <button type="button" className={dangerButton} onClick={onTakeOver}>
                Yes, take these fields over from {managersOf(trouble.conflicts)}
              </button>
            ) : (
              <button
                type="button"
                className={dangerButton}
                onClick={() => {
                  setConfirming(true);
                }}
              >
                Take over…
              </button>
            )}
            {dismiss}
          </div>
        </section>
      );
    case 'exists':
      return (
        <section role="alert" aria-label="Not saved: the name is taken" className={frame}>
          <p>Not saved: a Composition called {name} exists already. Save under another name, or open it.</p>
          <div>{dismiss}</div>
        </section>
      );
    case 'invalid':
      return (
        <section role="alert" aria-label="Not saved: invalid" className={frame}>
          <p>Not saved: the server's validator refuses it ({trouble.message}).</p>
          <ul className="list-disc pl-5 text-sm">
            {trouble.findings.map((f, i) => (
              <li key={i}>
                <code className="font-mono">{locText(f.loc)}</code>: {f.message}
              </li>
            ))}
          </ul>
          <div>{dismiss}</div>
        </section>
      );
    case 'refused':
      return (
        <section role="alert" aria-label="Not saved" className={frame}>
          <p>
            Not saved ({trouble.problem.status}): {trouble.problem.message}
            {trouble.problem.status === 403 ? ' Saving needs compositions create and patch in this namespace (examples/rbac/composition-editor-role.yaml).' : ''}
          </p>
          <div>{dismiss}</div>
        </section>
      );
  }
}

export function OpenDialog({
  open,
  token,
  api,
  namespace,
  dirty,
  expire,
  onOpen,
  onClose,
}: {
  readonly open: boolean;
  readonly token: string;
  readonly api: ApiOptions;
  readonly namespace: string;
  readonly dirty: boolean;
  readonly expire: (problem: Problem) => void;
  /** Opens the Composition as it is, or its revision `revision` (12.56). */
  readonly onOpen: (composition: StoredComposition, revision: Revision | null) => void;
  readonly onClose: () => void;
}) {
  const ids = useId();
  const [items, setItems] = useState<readonly StoredComposition[] | null>(null);
  const [changes, setChanges] = useState<LastChanges | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  const [confirming, setConfirming] = useState<string | null>(null);
  const [expanded, setExpanded] = useState<string | null>(null);
  useEffect(() => {
    if (!open || namespace === '') return undefined;
    const abort = new AbortController();
    const stopped = (): boolean => abort.signal.aborted;
    void listCompositions(token, namespace, api).then(async (reply) => {
      if (stopped()) return;
      if (!reply.ok) {
        if (reply.problem.status === 401) expire(reply.problem);
        else setProblem(`The Compositions could not be listed (${reply.problem.status}): ${reply.problem.message}`);
        return;
      }
      setProblem(null);
      // Newest first by the last change: when each one's current revision was recorded.
      const read = await readLastChanges(token, namespace, reply.value, { ...api, signal: abort.signal });
      if (stopped()) return;
      if (read.problem?.status === 401) {
        expire(read.problem);
        return;
      }
      setItems(reply.value);
      setChanges(read);
    });
    return () => {
      abort.abort();
    };
  }, [open, token, namespace, api, expire]);
  const times = changes?.times ?? new Map<string, string>();
  const shown = byLastChange(items ?? [], times).filter((c) => matchesFilter(c, filter));
  return (
    <Dialog open={open} title={`Open a Composition of ${namespace || 'a namespace'}`} onClose={onClose}>
      {namespace === '' ? <p role="alert">Choose a namespace on the Runs page first.</p> : null}
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-filter`} className="text-sm font-medium">
          Filter by name or description
        </label>
        <input
          id={`${ids}-filter`}
          className={input}
          value={filter}
          onChange={(e) => {
            setFilter(e.target.value);
          }}
        />
      </div>
      {problem === null ? null : (
        <p role="alert" className="text-red-800 dark:text-red-200">
          {problem}
        </p>
      )}
      {items === null && problem === null && namespace !== '' ? (
        <p role="status" className={muted}>
          Listing…
        </p>
      ) : null}
      {changes?.problem == null || changes.problem.status === 404 ? null : (
        <p className={`text-sm ${muted}`}>
          {changes.times.size === 0 ? 'The list is in the order the Compositions were made: when each last changed could not be read' : 'Some are placed by when they were made: when they last changed could not be read'} ({changes.problem.status}: {changes.problem.message}).
        </p>
      )}
      {items !== null && shown.length === 0 ? <p className={muted}>{items.length === 0 ? 'No Compositions you may read here.' : 'None matches the filter.'}</p> : null}
      <ul aria-label="Compositions, newest first" className="flex flex-col gap-1">
        {shown.map((c) => {
          const revision = currentRevision(c);
          const changed = times.get(c.name);
          const panel = `${ids}-revisions-${c.name}`;
          return (
            <li key={c.name} className="rounded border border-slate-300 px-2 py-1 dark:border-slate-600">
              <div className="flex flex-wrap items-center justify-between gap-2">
                <span className="flex min-w-0 flex-col">
                  <span>
                    <code className="font-mono font-semibold">{c.name}</code>
                    <span className={`text-sm ${muted}`}>
                      {' '}
                      {revision === null ? 'no revision yet' : `revision ${revision}`}
                      {changed === undefined ? '' : `, changed ${formatTime(changed)}`}
                      {c.created === '' ? '' : `, made ${formatTime(c.created)}`}
                    </span>
                  </span>
                  <span className="text-sm">{c.description}</span>
                </span>
                <span className="flex flex-wrap gap-2">
                  <button
                    type="button"
                    className={`${button} aria-expanded:bg-slate-200 dark:aria-expanded:bg-slate-700`}
                    aria-expanded={expanded === c.name}
                    aria-controls={expanded === c.name ? panel : undefined}
                    aria-label={`Revisions of ${c.name}`}
                    onClick={() => {
                      setExpanded((e) => (e === c.name ? null : c.name));
                    }}
                  >
                    Revisions
                  </button>
                  {dirty && confirming === c.name ? (
                    <button type="button" className={dangerButton} onClick={() => { onOpen(c, null); }}>
                      Discard my unsaved changes and open {c.name}
                    </button>
                  ) : (
                    <button
                      type="button"
                      className={button}
                      aria-label={`Open ${c.name}`}
                      onClick={() => {
                        if (dirty) setConfirming(c.name);
                        else onOpen(c, null);
                      }}
                    >
                      Open
                    </button>
                  )}
                </span>
              </div>
              {expanded === c.name ? (
                <RevisionsPanel
                  id={panel}
                  token={token}
                  api={api}
                  namespace={namespace}
                  composition={c}
                  dirty={dirty}
                  expire={expire}
                  onOpen={(r) => {
                    onOpen(c, r);
                  }}
                />
              ) : null}
            </li>
          );
        })}
      </ul>
    </Dialog>
  );
}
