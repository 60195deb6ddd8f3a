// What changed between two Composition specs, by structure: nodes added, removed and changed by
// id (with the fields that changed), edges added, removed and changed (an edge is its two ends,
// the second between the same two nodes `from→to#2`, as graph/spec.ts names them), a change in
// the order of either, and the composition's other fields (each budget on its own). For
// revisions and the "changed in the cluster" banner. Read leniently: any two values give a diff.

import { isRecord } from '../api/http.ts';
import { edgeKey } from '../graph/spec.ts';
import { canonicalJson } from './document.ts';

/** A field that changed: `undefined` on the side that does not have it. */
export interface FieldChange {
  /** The field's path, `instruction`, `output.labels`, `budgets.maxTokens`. */
  readonly path: string;
  readonly before: unknown;
  readonly after: unknown;
}

export interface NodeChange {
  readonly id: string;
  readonly changes: readonly FieldChange[];
}

export interface EdgeRef {
  /** `from→to`, `from→to#2` for the second between the same two nodes. */
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly when: string | null;
}

export interface EdgeChange extends EdgeRef {
  readonly changes: readonly FieldChange[];
}

export interface SpecDiff {
  /** The composition's own fields (pattern, description, each budget, any other). */
  readonly fields: readonly FieldChange[];
  readonly nodesAdded: readonly string[];
  readonly nodesRemoved: readonly string[];
  readonly nodesChanged: readonly NodeChange[];
  /** The nodes both specs have are listed in another order. */
  readonly nodesReordered: boolean;
  readonly edgesAdded: readonly EdgeRef[];
  readonly edgesRemoved: readonly EdgeRef[];
  readonly edgesChanged: readonly EdgeChange[];
  /** The edges both specs have are listed in another order (a Join writes its branches in edge order). */
  readonly edgesReordered: boolean;
}

type Rec = Readonly<Record<string, unknown>>;

function keysOf(a: Rec, b: Rec): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])];
}

/** The fields that differ, going into objects both sides have (`output.labels`); lists compare whole. */
function fieldChanges(before: Rec, after: Rec, prefix = '', skip: readonly string[] = []): FieldChange[] {
  const out: FieldChange[] = [];
  for (const key of keysOf(before, after)) {
    if (skip.includes(key)) continue;
    const a = Object.hasOwn(before, key) ? before[key] : undefined;
    const b = Object.hasOwn(after, key) ? after[key] : undefined;
    const path = `${prefix}${key}`;
    if (isRecord(a) && isRecord(b)) out.push(...fieldChanges(a, b, `${path}.`));
    else if (canonicalJson(a) !== canonicalJson(b)) out.push({ path, before: a, after: b });
  }
  return out;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '?';
}

/** Each item by its name (`name(item, i)`, a repeated name `#2`, `#3`…), in list order. */
function named(list: unknown, name: (item: Rec, i: number) => string): Map<string, Rec> {
  const out = new Map<string, Rec>();
  const counts = new Map<string, number>();
  (Array.isArray(list) ? list : []).forEach((item: unknown, i) => {
    const rec = isRecord(item) ? item : {};
    const base = name(rec, i);
    const n = (counts.get(base) ?? 0) + 1;
    counts.set(base, n);
    out.set(n === 1 ? base : `${base}#${n}`, rec);
  });
  return out;
}

function reordered(before: Map<string, Rec>, after: Map<string, Rec>): boolean {
  const a = [...before.keys()].filter((k) => after.has(k));
  const b = [...after.keys()].filter((k) => before.has(k));
  return a.some((k, i) => b[i] !== k);
}

function edgeRef(id: string, edge: Rec): EdgeRef {
  const when = edge['when'];
  return { id, from: text(edge['from']), to: text(edge['to']), when: typeof when === 'string' ? when : null };
}

export function diffSpecs(before: unknown, after: unknown): SpecDiff {
  const a = isRecord(before) ? before : {};
  const b = isRecord(after) ? after : {};
  const nodesA = named(a['nodes'], (n, i) => (typeof n['id'] === 'string' ? n['id'] : `#${i}`));
  const nodesB = named(b['nodes'], (n, i) => (typeof n['id'] === 'string' ? n['id'] : `#${i}`));
  const edgesA = named(a['edges'], (e) => edgeKey(text(e['from']), text(e['to'])));
  const edgesB = named(b['edges'], (e) => edgeKey(text(e['from']), text(e['to'])));
  const nodesChanged: NodeChange[] = [];
  for (const [id, node] of nodesB) {
    const old = nodesA.get(id);
    if (old === undefined) continue;
    const changes = fieldChanges(old, node);
    if (changes.length > 0) nodesChanged.push({ id, changes });
  }
  const edgesChanged: EdgeChange[] = [];
  for (const [id, edge] of edgesB) {
    const old = edgesA.get(id);
    if (old === undefined) continue;
    const changes = fieldChanges(old, edge);
    if (changes.length > 0) edgesChanged.push({ ...edgeRef(id, edge), changes });
  }
  return {
    fields: fieldChanges(a, b, '', ['nodes', 'edges']),
    nodesAdded: [...nodesB.keys()].filter((id) => !nodesA.has(id)),
    nodesRemoved: [...nodesA.keys()].filter((id) => !nodesB.has(id)),
    nodesChanged,
    nodesReordered: reordered(nodesA, nodesB),
    edgesAdded: [...edgesB].filter(([id]) => !edgesA.has(id)).map(([id, e]) => edgeRef(id, e)),
    edgesRemoved: [...edgesA].filter(([id]) => !edgesB.has(id)).map(([id, e]) => edgeRef(id, e)),
    edgesChanged,
    edgesReordered: reordered(edgesA, edgesB),
  };
}

export function isEmptyDiff(diff: SpecDiff): boolean {
  return (
    diff.fields.length === 0 &&
    diff.nodesAdded.length === 0 &&
    diff.nodesRemoved.length === 0 &&
    diff.nodesChanged.length === 0 &&
    !diff.nodesReordered &&
    diff.edgesAdded.length === 0 &&
    diff.edgesRemoved.length === 0 &&
    diff.edgesChanged.length === 0 &&
    !diff.edgesReordered
  );
}

/** A value as a line shows it: JSON, cut to `max` characters. */
export function shortValue(value: unknown, max = 40): string {
  const json = JSON.stringify(value);
  return json.length <= max ? json : `${json.slice(0, max - 1)}…`;
}

function changeText(change: FieldChange): string {
  if (change.before === undefined) return `${change.path} set to ${shortValue(change.after)}`;
  if (change.after === undefined) return `${change.path} removed (was ${shortValue(change.before)})`;
  return `${change.path}: ${shortValue(change.before)} → ${shortValue(change.after)}`;
}

function edgeText(edge: EdgeRef): string {
  return `${edge.from} → ${edge.to}${edge.when === null ? '' : ` (${edge.when})`}`;
}

/** The diff as lines a person reads, composition first, then nodes, then edges. */
export function describeDiff(diff: SpecDiff): string[] {
  return [
    ...diff.fields.map(changeText),
    ...diff.nodesAdded.map((id) => `node ${id} added`),
    ...diff.nodesRemoved.map((id) => `node ${id} removed`),
    ...diff.nodesChanged.flatMap((n) => n.changes.map((c) => `node ${n.id}: ${changeText(c)}`)),
    ...(diff.nodesReordered ? ['nodes reordered'] : []),
    ...diff.edgesAdded.map((e) => `edge ${edgeText(e)} added`),
    ...diff.edgesRemoved.map((e) => `edge ${edgeText(e)} removed`),
    ...diff.edgesChanged.flatMap((e) => e.changes.map((c) => `edge ${edgeText(e)}: ${changeText(c)}`)),
    ...(diff.edgesReordered ? ['edges reordered'] : []),
  ];
}
