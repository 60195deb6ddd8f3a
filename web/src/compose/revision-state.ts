// Which revision the canvas shows, and what Save and Run do with it (rules 12.53, 12.56, 12.58):
// the link an open or a save makes, the Save button's label ("Restore" while an older revision
// is shown unchanged), the line beside the title, the banners, and whether a run goes by
// reference (name and revision, so it is filed under the Composition) or inline.

import type { StoredComposition } from '../api/compositions.ts';
import type { Revision } from '../api/revisions.ts';
import type { CompositionLink } from '../canvas/store.ts';

/**
 * The revision a Composition's current spec is: its generation (the operator records revision
 * N at generation N), else what its status records. Right after a save the status still names
 * the revision before, so the generation is the one to trust.
 */
export function currentRevision(c: Pick<StoredComposition, 'generation' | 'revision'>): number | null {
  return c.generation ?? c.revision;
}

/**
 * The link of a canvas that shows `c` as it is, or its revision `opened`: an older revision is
 * linked with the Composition's current `resourceVersion` (so Save writes it over the current
 * one, and a change made meanwhile is still a conflict) and marked with the newest revision.
 */
export function linkTo(c: StoredComposition, namespace: string, opened: Revision | null = null): CompositionLink {
  const current = currentRevision(c);
  const base = { namespace: c.namespace || namespace, name: c.name, resourceVersion: c.resourceVersion };
  if (opened === null || (current !== null && opened.revision >= current)) return { ...base, revision: current };
  return { ...base, revision: opened.revision, newest: current };
}

/**
 * The `resourceVersion` to save again with, when a 409 `conflict` only says that the object was
 * written since the canvas read it without its spec changing: the operator writes the status
 * right after every save (its validity, its revision), which gives the object a new
 * `resourceVersion` but keeps its generation. When the Composition's generation is still the
 * one the canvas was read at (its newest when an older revision is shown), the spec is the one
 * the canvas started from and nobody's change would be overwritten. Null for any other conflict:
 * a new generation is someone's change, shown to the person (12.54).
 */
export function statusOnlyConflict(link: CompositionLink | null, current: StoredComposition | null): string | null {
  if (link === null || current?.name !== link.name || current.resourceVersion === null) return null;
  const base = showsOlderRevision(link) ? link.newest : link.revision;
  if (base === null || current.generation === null || current.generation !== base) return null;
  return current.resourceVersion === link.resourceVersion ? null : current.resourceVersion;
}

/** Whether the canvas shows an older revision than its Composition's newest. */
export function showsOlderRevision(link: CompositionLink | null): link is CompositionLink & { readonly newest: number | null } {
  return link?.newest !== undefined;
}

/** The Save button's label: "Restore" while an older revision is shown as it was saved (12.56). */
export function saveLabel(link: CompositionLink | null, dirty: boolean): 'Save' | 'Restore' {
  return showsOlderRevision(link) && !dirty ? 'Restore' : 'Save';
}

/** The line beside the canvas's title when it shows an older revision, else null. */
export function revisionNote(link: CompositionLink | null, dirty: boolean): string | null {
  if (!showsOlderRevision(link) || link.revision === null) return null;
  const of = link.newest === null ? `revision ${link.revision}, older than the current one` : `revision ${link.revision} of ${link.newest}`;
  return dirty ? `edited from ${of} — Save makes it the newest` : `${of} — Save restores it as the newest`;
}

/** What the banner says once `c` (or its revision `opened`) is on the canvas. */
export function openedSaid(c: StoredComposition, opened: Revision | null = null): string {
  const current = currentRevision(c);
  const link = linkTo(c, '', opened);
  if (!showsOlderRevision(link) || link.revision === null) return `Opened ${c.name}${current === null ? '' : `, revision ${current}`}.`;
  const newest = link.newest === null ? 'a newer one' : `revision ${link.newest}`;
  return `Opened revision ${link.revision} of ${c.name}. The cluster keeps ${newest} as the newest until you restore this one with Save.`;
}

/** What the banner says after a save of the canvas that was linked as `before`. */
export function savedSaid(c: StoredComposition, created: boolean, before: CompositionLink | null): string {
  const revision = currentRevision(c);
  const as = revision === null ? '' : ` as revision ${revision}`;
  if (!created && showsOlderRevision(before) && before.name === c.name && before.revision !== null) return `Restored revision ${before.revision} of ${c.name}${as}: it is the newest now.`;
  return `${created ? 'Created' : 'Saved'} ${c.name}${revision === null ? '; the operator records its revision next.' : `, revision ${revision}.`}`;
}

/** How a run of the canvas starts, and the sentence that says so. */
export type RunPlan =
  | { readonly kind: 'ref'; readonly name: string; readonly revision: number | null; readonly said: string }
  | { readonly kind: 'inline'; readonly said: string };

/**
 * By reference when the canvas is a saved revision of a Composition in this namespace with no
 * edits since it was opened or saved (12.58), so the run is filed under that name and revision
 * (an older revision opened runs as that revision); otherwise inline, as the canvas holds it.
 */
export function runPlan(link: CompositionLink | null, dirty: boolean, namespace: string): RunPlan {
  if (link === null) return { kind: 'inline', said: 'Runs the canvas as it is (not saved as a Composition), inline; the server checks it first.' };
  if (dirty) return { kind: 'inline', said: `Runs the canvas as it is (unsaved edits), inline, so the run is not filed under ${link.name}. Save first to run it by reference.` };
  if (link.namespace !== namespace) return { kind: 'inline', said: `Runs the canvas as it is, inline: it is saved as ${link.name} in ${link.namespace}, not in ${namespace}.` };
  const which = link.revision === null ? `${link.name} as saved (its current revision)` : `${link.name} revision ${link.revision} as saved`;
  return { kind: 'ref', name: link.name, revision: link.revision, said: `Runs ${which}, by reference, so the run is filed under it.` };
}
