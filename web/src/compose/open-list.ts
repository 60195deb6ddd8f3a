// The Open dialog's logic (rule 12.56): the Compositions newest first by their last change (the
// time their current revision was recorded, else when they were made), the filter, and the two
// revisions compared (always older to newer, as canvas/diff.ts describes them).

import type { StoredComposition } from '../api/compositions.ts';
import type { Revision } from '../api/revisions.ts';
import { describeDiff, diffSpecs } from '../canvas/diff.ts';

/** When `c` last changed: its current revision's time when known, else when it was made. */
export function lastChange(c: Pick<StoredComposition, 'name' | 'created'>, times: ReadonlyMap<string, string>): string {
  return times.get(c.name) ?? c.created;
}

function instant(rfc3339: string): number {
  const t = Date.parse(rfc3339);
  return Number.isNaN(t) ? Number.NEGATIVE_INFINITY : t;
}

/** Newest first by last change; a time that cannot be read goes last; then by name. */
export function byLastChange<T extends Pick<StoredComposition, 'name' | 'created'>>(items: readonly T[], times: ReadonlyMap<string, string>): T[] {
  return [...items].sort((a, b) => {
    const ta = instant(lastChange(a, times));
    const tb = instant(lastChange(b, times));
    if (ta !== tb) return tb > ta ? 1 : -1;
    return a.name.localeCompare(b.name);
  });
}

/** Whether `c` matches the filter: in its name, or its description whatever the case. */
export function matchesFilter(c: Pick<StoredComposition, 'name' | 'description'>, filter: string): boolean {
  const wanted = filter.trim().toLowerCase();
  return wanted === '' || c.name.includes(wanted) || c.description.toLowerCase().includes(wanted);
}

/** The pair compared when the revisions first show: the one before the newest, and the newest. */
export function defaultPair(revisions: readonly Revision[]): readonly [number, number] | null {
  const [newest, before] = revisions;
  return newest === undefined || before === undefined ? null : [before.revision, newest.revision];
}

export type Comparison =
  | { readonly kind: 'same-pick'; readonly revision: number }
  | { readonly kind: 'missing'; readonly revision: number }
  | { readonly kind: 'diff'; readonly older: Revision; readonly newer: Revision; readonly lines: readonly string[] };

/** Revisions `a` and `b` of `revisions` compared, older to newer whichever was picked first. */
export function compareRevisions(revisions: readonly Revision[], a: number, b: number): Comparison {
  if (a === b) return { kind: 'same-pick', revision: a };
  const first = revisions.find((r) => r.revision === a);
  if (first === undefined) return { kind: 'missing', revision: a };
  const second = revisions.find((r) => r.revision === b);
  if (second === undefined) return { kind: 'missing', revision: b };
  const [older, newer] = first.revision < second.revision ? [first, second] : [second, first];
  return { kind: 'diff', older, newer, lines: describeDiff(diffSpecs(older.spec, newer.spec)) };
}
