// The canvas's state: the document with undo and redo (history.ts), the Composition it is linked
// to (the one Save writes a new revision of), and whether it has changes that Composition's last
// saved spec does not. A template, an import or a run's spec loads unlinked and undoably
// (rules 12.25, 12.57: Undo restores the canvas and its link); opening a Composition replaces
// the document and forgets the history; a change made to it elsewhere, once taken, is one
// undoable step (compose/follow.ts decides when). A zustand store without React, so tests drive it as is
// and a page reads it with `useStore`.

import { createStore, type StoreApi } from 'zustand/vanilla';
import { emptyDocument, fromSpec, sameSpec, toSpec, type CanvasDocument, type SpecObject, type SpecProblem } from './document.ts';
import type { EditError, EditResult } from './edit.ts';
import { canRedo, canUndo, historyOf, mapHistory, record, redo, undo, type History } from './history.ts';
import { keepKeys } from './rekey.ts';

/** The Composition in the cluster that the canvas saves to. */
export interface CompositionLink {
  readonly namespace: string;
  readonly name: string;
  /** The revision the canvas was read from or last saved as, once known. */
  readonly revision: number | null;
  /** The object's `resourceVersion` when read or saved: the next save sends it, so a change made meanwhile is a conflict, never overwritten. */
  readonly resourceVersion?: string | null;
  /**
   * Set when the canvas shows an older revision than the Composition's newest (opened from its
   * revisions, 12.56): that newest revision (null when it is not recorded yet). A save then
   * restores the older one as the newest, and the link it makes has no `newest`.
   */
  readonly newest?: number | null;
}

export interface CanvasSnapshot {
  readonly doc: CanvasDocument;
  readonly link: CompositionLink | null;
}

/** An edit: one of edit.ts's functions with its arguments, given the document. */
export type Edit = (doc: CanvasDocument) => EditResult | CanvasDocument;

export interface CanvasState {
  readonly history: History<CanvasSnapshot>;
  /** The spec each linked Composition last had in the cluster, by `namespace/name`. */
  readonly saved: Readonly<Record<string, SpecObject>>;
  readonly doc: CanvasDocument;
  readonly link: CompositionLink | null;
  /** Whether the document says something other than its Composition's last saved spec (or, unlinked, other than an empty canvas). */
  readonly dirty: boolean;
  readonly canUndo: boolean;
  readonly canRedo: boolean;
  /** Applies an edit as one undoable step (a run of edits of one `group` is one step); its refusal, if refused. */
  edit(change: Edit, group?: string): EditError | null;
  undo(): void;
  redo(): void;
  /** Puts a template, an import or a run's spec on the canvas, unlinked, undoably. */
  load(doc: CanvasDocument): void;
  /** The canvas follows the cluster: the Composition's spec replaces the document and the history goes. */
  replaceFromServer(spec: unknown, link: CompositionLink): readonly SpecProblem[] | null;
  /** Save wrote `spec` as `link`: the canvas is linked to it (so are the steps of the same Composition) and clean. */
  markSaved(link: CompositionLink, spec: SpecObject): void;
  /**
   * The cluster's newer spec of the linked Composition on the canvas, as one undoable step: the
   * nodes and edges it shares with the canvas keep their keys (so their positions and the
   * selection stay); the canvas, and every step of that Composition, linked to `link`.
   */
  takeFromServer(spec: unknown, link: CompositionLink): readonly SpecProblem[] | null;
  /**
   * The linked Composition was deleted from the cluster: the canvas keeps its content and its
   * name, with no version and no revision (so Save creates it again), and has unsaved changes.
   */
  markDeleted(): void;
}

export function linkKey(link: CompositionLink): string {
  return `${link.namespace}/${link.name}`;
}

function sameComposition(a: CompositionLink | null, b: CompositionLink | null): boolean {
  return a === null || b === null ? a === b : linkKey(a) === linkKey(b);
}

const EMPTY_SPEC = toSpec(emptyDocument());

type Derived = Pick<CanvasState, 'history' | 'saved' | 'doc' | 'link' | 'dirty' | 'canUndo' | 'canRedo'>;

function derive(history: History<CanvasSnapshot>, saved: Readonly<Record<string, SpecObject>>): Derived {
  const { doc, link } = history.present;
  const baseline = link === null ? EMPTY_SPEC : (saved[linkKey(link)] ?? EMPTY_SPEC);
  return { history, saved, doc, link, dirty: !sameSpec(toSpec(doc), baseline), canUndo: canUndo(history), canRedo: canRedo(history) };
}

export interface CanvasStoreOptions {
  /** How many steps undo can go back. */
  readonly cap?: number;
}

export function createCanvasStore(options: CanvasStoreOptions = {}): StoreApi<CanvasState> {
  return createStore<CanvasState>()((set, get) => ({
    ...derive(historyOf({ doc: emptyDocument(), link: null }), {}),

    edit(change, group) {
      const { history, saved } = get();
      const result = change(history.present.doc);
      const ok: EditResult = 'ok' in result ? result : { ok: true, doc: result };
      if (!ok.ok) return ok.error;
      if (ok.doc === history.present.doc) return null;
      set(derive(record(history, { ...history.present, doc: ok.doc }, { group: group ?? null, ...(options.cap === undefined ? {} : { cap: options.cap }) }), saved));
      return null;
    },

    undo() {
      const { history, saved } = get();
      set(derive(undo(history), saved));
    },

    redo() {
      const { history, saved } = get();
      set(derive(redo(history), saved));
    },

    load(doc) {
      const { history, saved } = get();
      set(derive(record(history, { doc, link: null }, options.cap === undefined ? {} : { cap: options.cap }), saved));
    },

    replaceFromServer(spec, link) {
      const read = fromSpec(spec);
      if (!read.ok) return read.problems;
      const { saved } = get();
      set(derive(historyOf({ doc: read.doc, link }), { ...saved, [linkKey(link)]: toSpec(read.doc) }));
      return null;
    },

    markSaved(link, spec) {
      const { history, saved } = get();
      const was = history.present.link;
      const relinked = mapHistory(history, (step) => (sameComposition(step.link, was) ? { ...step, link } : step));
      set(derive(relinked, { ...saved, [linkKey(link)]: spec }));
    },

    takeFromServer(spec, link) {
      const read = fromSpec(spec);
      if (!read.ok) return read.problems;
      const { history, saved } = get();
      const was = history.present.link;
      const relinked = mapHistory(history, (step) => (sameComposition(step.link, was) ? { ...step, link } : step));
      const doc = keepKeys(history.present.doc, read.doc);
      const next = sameSpec(toSpec(doc), toSpec(history.present.doc))
        ? relinked
        : record(relinked, { doc, link }, options.cap === undefined ? {} : { cap: options.cap });
      set(derive(next, { ...saved, [linkKey(link)]: toSpec(read.doc) }));
      return null;
    },

    markDeleted() {
      const { history, saved } = get();
      const was = history.present.link;
      if (was === null) return;
      const gone: CompositionLink = { namespace: was.namespace, name: was.name, revision: null, resourceVersion: null };
      const relinked = mapHistory(history, (step) => (sameComposition(step.link, was) ? { ...step, link: gone } : step));
      set(derive(relinked, Object.fromEntries(Object.entries(saved).filter(([key]) => key !== linkKey(was)))));
    },
  }));
}
