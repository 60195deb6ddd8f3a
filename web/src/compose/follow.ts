// The canvas follows the cluster (issue 24, "Two-way"): while it is linked to a Composition
// (after Open or Save), each change the watch reports (api/composition-watch.ts) is decided
// here, purely, against the canvas as it stands; Following.tsx applies the decision to the
// store and shows what it says.
//
// - A frame of the version the canvas already has (its own save, the version it opened) changes
//   nothing; it also ends a pending offer, as the cluster is back at what the canvas is based on.
// - A new version whose spec is the one the canvas was read from (the operator recording the
//   revision in `status`) only moves the link to it: the next save sends it, nothing else shows.
// - A spec that is what the canvas says already (a save's frame that came before its reply) links
//   the canvas to it, clean, quietly.
// - Without unsaved edits the canvas takes the new spec (one undoable step; nodes and edges keep
//   their keys, so their places, where ids match) and a polite line says who changed it and when.
// - With unsaved edits the canvas is not touched: a banner names who changed it and when, lists
//   what theirs changes from the canvas (canvas/diff.ts), and offers Reload theirs (undoable) or
//   Keep mine. Keep mine moves the link to their version, so the next Save goes over theirs on
//   purpose rather than failing as stale: the person has just seen their change and chosen, and
//   asking again through the conflict panel would only repeat the question. A field another
//   manager owns is still refused by the apiserver (the field-conflict panel), and a change made
//   after the choice brings a new banner.
// - A deletion keeps the canvas's content and name with no version: a banner says so, and Save
//   creates it again under the same name.

import type { CompositionChange, FieldManager } from '../api/composition-watch.ts';
import type { Problem } from '../api/http.ts';
import type { SseStatus } from '../api/sse.ts';
import type { StoreApi } from 'zustand/vanilla';
import { sameSpec, toSpec, type SpecObject, type SpecProblem } from '../canvas/document.ts';
import { describeDiff, diffSpecs } from '../canvas/diff.ts';
import { linkKey, type CanvasState, type CompositionLink } from '../canvas/store.ts';
import { formatTime } from '../ui/format.ts';
import { currentRevision, showsOlderRevision } from './revision-state.ts';

/** The field manager the console saves as (the sidecar's server-side apply). */
export const CONSOLE_MANAGER = 'orrery-console';
/** The operator's field manager: it writes a Composition's status only, never its spec. */
export const OPERATOR_MANAGER = 'orrery-operator';
/** The example Role that grants `compositions watch`. */
export const WATCH_ROLE = 'examples/rbac/studio-user-role.yaml';
/** The most lines of a diff a banner lists. */
export const MAX_DIFF_LINES = 12;

/** Who changed the Composition's spec, as far as its managed fields tell. */
export interface Changer {
  readonly manager: string;
  readonly time: string | null;
}

/** The canvas as a decision needs it. */
export interface CanvasView {
  readonly link: CompositionLink | null;
  readonly dirty: boolean;
  /** What the canvas says now. */
  readonly spec: SpecObject;
  /** The spec of the linked Composition the canvas was read from or last saved as; null when none (a deleted one). */
  readonly baseline: SpecObject | null;
}

export type Decision =
  /** Not about the linked Composition, or nothing new about it. */
  | { readonly kind: 'ignore' }
  /** The version the canvas has: nothing changes, a pending offer is over. */
  | { readonly kind: 'current' }
  /** A new version with the spec the canvas was read from: the link moves to it from version `from`, nothing else. */
  | { readonly kind: 'version'; readonly link: CompositionLink; readonly baseline: SpecObject; readonly from: string | null }
  /** The cluster now says what the canvas says: linked to it, clean. */
  | { readonly kind: 'caught-up'; readonly link: CompositionLink; readonly spec: SpecObject }
  /** No unsaved edits: the canvas takes it. */
  | { readonly kind: 'follow'; readonly link: CompositionLink; readonly spec: SpecObject; readonly by: Changer | null }
  /** Unsaved edits: offer theirs, with what it changes from the canvas. */
  | { readonly kind: 'offer'; readonly link: CompositionLink; readonly spec: SpecObject; readonly by: Changer | null; readonly lines: readonly string[] }
  /** Deleted from the cluster. */
  | { readonly kind: 'deleted'; readonly lastBy: Changer | null; readonly at: string | null };

function timeOf(m: FieldManager): number {
  const t = m.time === null ? Number.NaN : Date.parse(m.time);
  return Number.isNaN(t) ? Number.NEGATIVE_INFINITY : t;
}

/**
 * Who changed the spec last: the manager whose fields changed last, leaving out the operator
 * (it writes the status, after every change). The console's own manager is named too: a frame
 * of another version than the canvas's is not this canvas's save but another person's (or this
 * person's in another tab), and naming an older manager instead would name the wrong change. On
 * a tie in time another manager goes before the console.
 */
export function changerOf(managers: readonly FieldManager[]): Changer | null {
  let best: FieldManager | null = null;
  for (const m of managers) {
    if (m.manager === OPERATOR_MANAGER) continue;
    if (best === null) {
      best = m;
      continue;
    }
    const a = timeOf(m);
    const b = timeOf(best);
    if (a > b || (a === b && best.manager === CONSOLE_MANAGER && m.manager !== CONSOLE_MANAGER)) best = m;
  }
  return best === null ? null : { manager: best.manager, time: best.time };
}

/**
 * "kubectl-patch at 2026-12-02 10:15:00 UTC", "another console session (orrery-console)",
 * "someone". `plain`: the manager's name as it is (for who changed it last before a deletion,
 * which may well be this canvas's own save).
 */
export function changerText(by: Changer | null, plain = false): string {
  if (by === null) return 'someone';
  const who = by.manager === CONSOLE_MANAGER && !plain ? `another console session (${CONSOLE_MANAGER})` : by.manager;
  return by.time === null ? who : `${who} at ${formatTime(by.time)}`;
}

/** What theirs changes from the canvas, at most `max` lines and a count of the rest. */
export function diffLines(mine: unknown, theirs: unknown, max = MAX_DIFF_LINES): string[] {
  const lines = describeDiff(diffSpecs(mine, theirs));
  if (lines.length === 0) return ['Nothing that the canvas shows: the two differ only in how the spec is written.'];
  if (lines.length <= max) return lines;
  const rest = lines.length - max;
  return [...lines.slice(0, max), `…and ${String(rest)} more ${rest === 1 ? 'change' : 'changes'}.`];
}

/** What the canvas does about one change the watch reported. */
export function decide(change: CompositionChange, view: CanvasView): Decision {
  const link = view.link;
  if (link === null) return { kind: 'ignore' };
  const version = link.resourceVersion ?? null;
  if (change.kind === 'deleted') {
    // Without a version the canvas already holds it as not in the cluster.
    if (version === null) return { kind: 'ignore' };
    return { kind: 'deleted', lastBy: changerOf(change.managers), at: change.deletedAt };
  }
  const c = change.composition;
  if (c.name !== link.name) return { kind: 'ignore' };
  const theirVersion = change.resourceVersion ?? c.resourceVersion;
  if (theirVersion !== null && theirVersion === version) return { kind: 'current' };
  const next: CompositionLink = { namespace: link.namespace, name: link.name, revision: currentRevision(c), resourceVersion: theirVersion };
  if (showsOlderRevision(link)) {
    // An older revision on the canvas (12.56), to be restored: the Composition's newest is what
    // it was read against. A new version at that generation (the operator's status write) only
    // moves the version; a newer spec is offered, never swapped in under the person.
    if (view.baseline !== null && c.generation !== null && c.generation === link.newest) return { kind: 'version', link: { ...link, resourceVersion: theirVersion }, baseline: view.baseline, from: version };
    return { kind: 'offer', link: next, spec: c.spec, by: changerOf(change.managers), lines: diffLines(view.spec, c.spec) };
  }
  if (view.baseline !== null && sameSpec(c.spec, view.baseline)) return { kind: 'version', link: next, baseline: view.baseline, from: version };
  if (sameSpec(c.spec, view.spec)) return { kind: 'caught-up', link: next, spec: c.spec };
  const by = changerOf(change.managers);
  if (!view.dirty) return { kind: 'follow', link: next, spec: c.spec, by };
  return { kind: 'offer', link: next, spec: c.spec, by, lines: diffLines(view.spec, c.spec) };
}

/** What the page shows about following, besides the stream's state. */
export type FollowNote =
  | { readonly kind: 'updated'; readonly text: string }
  | { readonly kind: 'offer'; readonly by: Changer | null; readonly lines: readonly string[]; readonly link: CompositionLink; readonly spec: SpecObject }
  | { readonly kind: 'deleted'; readonly text: string };

/**
 * A note with what it is about: the Composition, and the version the canvas had when it was
 * made. It is shown only while the canvas is linked to that Composition at that version, so a
 * save, an open or a reload that moves the canvas on makes it go by itself.
 */
export interface HeldNote {
  readonly namespace: string;
  readonly name: string;
  readonly basedOn: string | null;
  readonly note: FollowNote;
}

/** The note after a decision, given the canvas's link after it was applied. */
export function nextNote(held: HeldNote | null, decision: Decision, after: CompositionLink | null): HeldNote | null {
  if (after === null) return null;
  const hold = (note: FollowNote): HeldNote => ({ namespace: after.namespace, name: after.name, basedOn: after.resourceVersion ?? null, note });
  switch (decision.kind) {
    case 'ignore':
      return held;
    case 'current':
      return held?.note.kind === 'offer' ? null : held;
    case 'version':
      // The same spec at a newer version: an offer is over; a note shown at the version before
      // (who changed it) moves on with the version; one no longer shown stays hidden.
      return held === null || held.note.kind === 'offer' || held.basedOn !== decision.from ? null : hold(held.note);
    case 'caught-up':
      return null;
    case 'follow':
      return hold({ kind: 'updated', text: `${after.name} was changed in the cluster by ${changerText(decision.by)}; the canvas shows it now (Undo brings back what it had).` });
    case 'offer':
      return hold({ kind: 'offer', by: decision.by, lines: decision.lines, link: decision.link, spec: decision.spec });
    case 'deleted': {
      const when = decision.at === null ? '' : ` at ${formatTime(decision.at)}`;
      const last = decision.lastBy === null ? '' : ` It was last changed by ${changerText(decision.lastBy, true)}; the cluster does not record who deletes.`;
      return hold({ kind: 'deleted', text: `${after.name} was deleted from the cluster${when}.${last} The canvas keeps it: Save creates it again under the same name.` });
    }
  }
}

/** The held note, when it is still about the canvas as it is linked now. */
export function shownNote(held: HeldNote | null, link: CompositionLink | null): FollowNote | null {
  if (held === null || link === null) return null;
  if (held.namespace !== link.namespace || held.name !== link.name || held.basedOn !== (link.resourceVersion ?? null)) return null;
  return held.note;
}

/** The note when the canvas cannot hold the spec the cluster has (it keeps what it has). */
export function unreadableNote(link: CompositionLink, by: Changer | null, problems: readonly SpecProblem[]): HeldNote {
  return {
    namespace: link.namespace,
    name: link.name,
    basedOn: link.resourceVersion ?? null,
    note: { kind: 'updated', text: `${link.name} was changed in the cluster by ${changerText(by)}, but the canvas cannot show that spec (${problems.map((p) => p.message).join('; ')}); it keeps what it has.` },
  };
}

/** The canvas as `decide` sees it. */
export function viewOf(state: CanvasState): CanvasView {
  const baseline = state.link === null ? null : (state.saved[linkKey(state.link)] ?? null);
  return { link: state.link, dirty: state.dirty, spec: toSpec(state.doc), baseline };
}

/** A decision taken, and what the note becomes (a function of the note held, for React's state setter, which must not have effects of its own). */
export interface Taken {
  readonly decision: Decision;
  readonly note: (held: HeldNote | null) => HeldNote | null;
}

/** Whether a decision brings something to say (the page's older news, an open or a save, is then out of date). */
export function isNews(decision: Decision): boolean {
  return decision.kind === 'follow' || decision.kind === 'offer' || decision.kind === 'deleted';
}

/** Decides a change and applies it to the canvas at once. */
export function takeChange(store: StoreApi<CanvasState>, change: CompositionChange): Taken {
  const state = store.getState();
  const decision = decide(change, viewOf(state));
  switch (decision.kind) {
    case 'version':
      state.markSaved(decision.link, decision.baseline);
      break;
    case 'caught-up':
      state.markSaved(decision.link, decision.spec);
      break;
    case 'follow': {
      const problems = state.takeFromServer(decision.spec, decision.link);
      const link = state.link;
      if (problems !== null && link !== null) return { decision, note: () => unreadableNote(link, decision.by, problems) };
      break;
    }
    case 'deleted':
      state.markDeleted();
      break;
    case 'ignore':
    case 'current':
    case 'offer':
      break;
  }
  const after = store.getState().link;
  return { decision, note: (held) => nextNote(held, decision, after) };
}

/** Reload theirs: the offered version on the canvas as one undoable step. */
export function reloadTheirs(store: StoreApi<CanvasState>, offer: Extract<FollowNote, { kind: 'offer' }>): HeldNote {
  const problems = store.getState().takeFromServer(offer.spec, offer.link);
  return problems === null ? reloadedNote(offer) : unreadableNote(offer.link, offer.by, problems);
}

/** Keep mine: the canvas stays; its link moves to their version, so the next save goes over it (see the top of this file). */
export function keepMine(store: StoreApi<CanvasState>, offer: Extract<FollowNote, { kind: 'offer' }>): HeldNote {
  store.getState().markSaved(offer.link, offer.spec);
  return keptNote(offer);
}

/** The note after the person chose Reload theirs: the canvas now at their version. */
export function reloadedNote(offer: Extract<FollowNote, { kind: 'offer' }>): HeldNote {
  const { link } = offer;
  return {
    namespace: link.namespace,
    name: link.name,
    basedOn: link.resourceVersion ?? null,
    note: { kind: 'updated', text: `Reloaded ${link.name} as ${changerText(offer.by)} left it (Undo brings your edits back).` },
  };
}

/** The note after the person chose Keep mine. */
export function keptNote(offer: Extract<FollowNote, { kind: 'offer' }>): HeldNote {
  const { link } = offer;
  return {
    namespace: link.namespace,
    name: link.name,
    basedOn: link.resourceVersion ?? null,
    note: { kind: 'updated', text: `Kept your canvas. Your next save of ${link.name} replaces the version ${changerText(offer.by)} made.` },
  };
}

/** Why following stopped, in the person's words, or null while it goes on (or was closed). */
export function watchLine(status: SseStatus | null, name: string): { readonly text: string; readonly problem: Problem | null } | null {
  if (status?.state !== 'stopped') return null;
  const end = status.end;
  const lead = `Not following changes to ${name}`;
  switch (end.reason) {
    case 'ended':
    case 'closed':
    case 'unauthenticated':
      return null;
    case 'forbidden':
      return {
        text: `${lead}: your Role does not let you watch Compositions in this namespace. Ask for "compositions watch" (the example Role ${WATCH_ROLE} grants it), then Retry. The cluster said: ${end.problem.message}`,
        problem: end.problem,
      };
    case 'too-many-streams':
      return {
        text: `${lead}: you already have as many live streams open as one person may (four, unless the install says otherwise), such as runs followed in other tabs. Close one, then Retry.${end.problem.retryAfterSeconds === null ? '' : ` The sidecar suggests waiting ${String(end.problem.retryAfterSeconds)} s.`}`,
        problem: end.problem,
      };
    case 'gave-up':
      return { text: `${lead}: after several tries, ${end.problem.message}. Retry once the sidecar can be reached.`, problem: end.problem };
    case 'refused':
      return { text: `${lead} (${String(end.problem.status)}): ${end.problem.message}`, problem: end.problem };
  }
}
