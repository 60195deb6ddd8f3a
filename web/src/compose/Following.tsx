// The canvas following its Composition in the cluster (issue 24, "Two-way"; what is decided is
// follow.ts's): one watch (api/composition-watch.ts) while the canvas is linked, at most one
// stream open (a person has four in all, and runs need them); it ends when the page goes or the
// link changes to another Composition or to none (a template, an import, New, signing out).
// While a save is on its way, changes wait for its reply, so the save's own frame is known as
// the canvas's own version.

import { useCallback, useEffect, useRef, useState } from 'react';
import { useStore } from 'zustand';
import type { StoreApi } from 'zustand/vanilla';
import { watchComposition, type CompositionChange } from '../api/composition-watch.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import type { SseStatus } from '../api/sse.ts';
import type { CanvasState } from '../canvas/store.ts';
import { button, muted } from '../ui/classes.ts';
import { changerText, isNews, keepMine, reloadTheirs, shownNote, takeChange, watchLine, type FollowNote, type HeldNote } from './follow.ts';

export interface Follow {
  /** The linked Composition's name, when there is one. */
  readonly name: string | null;
  /** What to say about the last change, while it is still about the canvas as it is. */
  readonly note: FollowNote | null;
  /** Why following stopped, when it did. */
  readonly stopped: { readonly text: string } | null;
  readonly retry: () => void;
  /** Takes the offered version (undoable). */
  readonly reload: () => void;
  /** Keeps the canvas; the next save goes over the offered version. */
  readonly keep: () => void;
  readonly dismiss: () => void;
}

export interface FollowOptions {
  readonly store: StoreApi<CanvasState>;
  readonly token: string;
  readonly api: ApiOptions;
  readonly expire: (problem: Pick<Problem, 'message'>) => void;
  /** A save is on its way. */
  readonly saving: boolean;
  /** Something changed in the cluster that the page shows (its own older news is out of date). */
  readonly onNews?: () => void;
}

export function useFollow({ store, token, api, expire, saving, onNews }: FollowOptions): Follow {
  const link = useStore(store, (s: CanvasState) => s.link);
  const namespace = link?.namespace ?? null;
  const name = link?.name ?? null;
  const [held, setHeld] = useState<HeldNote | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [status, setStatus] = useState<{ readonly watch: string; readonly status: SseStatus } | null>(null);
  const savingNow = useRef(saving);
  const waiting = useRef<CompositionChange | null>(null);
  const news = useRef(onNews);
  useEffect(() => {
    news.current = onNews;
  });

  const handle = useCallback(
    (change: CompositionChange) => {
      const taken = takeChange(store, change);
      setHeld(taken.note);
      if (isNews(taken.decision)) news.current?.();
    },
    [store],
  );

  const watchId = namespace === null || name === null ? null : `${namespace}/${name}#${String(attempt)}`;
  useEffect(() => {
    if (namespace === null || name === null || watchId === null) return undefined;
    const watch = watchComposition({
      namespace,
      name,
      token,
      ...(api.base === undefined ? {} : { base: api.base }),
      ...(api.fetch === undefined ? {} : { fetch: api.fetch }),
      onChange: (change) => {
        // The newest change is the whole story (each carries the object as it is).
        if (savingNow.current) waiting.current = change;
        else handle(change);
      },
      onStatus: (s) => {
        if (s.state === 'stopped' && s.end.reason === 'closed') return;
        if (s.state === 'stopped' && s.end.reason === 'unauthenticated') expire(s.end.problem);
        setStatus({ watch: watchId, status: s });
      },
    });
    return () => {
      waiting.current = null;
      watch.close();
    };
  }, [namespace, name, watchId, token, api, expire, handle]);

  // A change that came while a save was on its way is decided once the save has answered.
  useEffect(() => {
    savingNow.current = saving;
    if (saving) return;
    const change = waiting.current;
    waiting.current = null;
    if (change !== null) handle(change);
  }, [saving, handle]);

  const note = shownNote(held, link);
  const line = status?.watch === watchId && name !== null ? watchLine(status.status, name) : null;
  return {
    name,
    note,
    stopped: line,
    retry: () => {
      setAttempt((n) => n + 1);
    },
    reload: () => {
      if (note?.kind === 'offer') setHeld(reloadTheirs(store, note));
    },
    keep: () => {
      if (note?.kind === 'offer') setHeld(keepMine(store, note));
    },
    dismiss: () => {
      setHeld(null);
    },
  };
}

const notice = 'flex flex-col gap-2 rounded-md border border-amber-700 bg-amber-50 px-3 py-2 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50';

/** What following has to say: a change offered, a deletion, who changed it, or why it stopped. */
export function Following({ follow }: { readonly follow: Follow }) {
  const { note, stopped, name } = follow;
  return (
    <>
      {note?.kind === 'offer' ? (
        <section role="alert" aria-label="Changed in the cluster" className={notice}>
          <p>
            {name} was changed in the cluster by {changerText(note.by)}, and you have unsaved changes. What their version changes from your canvas:
          </p>
          <ul aria-label="What their version changes" className="list-disc pl-5 text-sm">
            {note.lines.map((line, i) => (
              <li key={i}>{line}</li>
            ))}
          </ul>
          <p className="text-sm">Reload theirs puts their version on the canvas (Undo brings your edits back). Keep mine leaves your canvas as it is; your next save replaces their version.</p>
          <div className="flex flex-wrap gap-2">
            <button type="button" className={button} onClick={follow.reload}>
              Reload theirs
            </button>
            <button type="button" className={button} onClick={follow.keep}>
              Keep mine
            </button>
          </div>
        </section>
      ) : null}
      {note?.kind === 'deleted' ? (
        <section role="alert" aria-label="Deleted from the cluster" className={notice}>
          <p>{note.text}</p>
          <div>
            <button type="button" className={button} onClick={follow.dismiss}>
              Dismiss
            </button>
          </div>
        </section>
      ) : null}
      {note?.kind === 'updated' ? (
        <p role="status" className={`text-sm ${muted}`}>
          {note.text}
        </p>
      ) : null}
      {stopped === null ? null : (
        <p className={`flex flex-wrap items-center gap-2 text-sm ${muted}`}>
          <span role="status">{stopped.text}</span>
          <button type="button" className={button} aria-label="Retry following changes" onClick={follow.retry}>
            Retry
          </button>
        </p>
      )}
    </>
  );
}
