// The canvas's document: a Composition spec (`crds/src/composition.rs`) as the canvas edits it.
// What the canvas edits is typed (the pattern, the description, the budgets, each node's id,
// kind, text fields, tools, labels and children, each edge's ends, `when`, loop cap and
// screen); everything else (a field this console does not know, a value of the wrong type) is
// carried through as it was, at its place among the keys, so spec → document → spec gives back
// the same spec, key order included. Positions are not part of it: layout is computed, never
// saved. Each node and edge has a `key` of the canvas's own, never saved, that stays the same
// through a rename or a reorder (what React Flow, the findings and the selection hold on to).
//
// Read strictly only where the canvas needs it: `nodes` and `edges` are lists, each node an
// object with a non-empty string `id` (unique: ids are what edges and children name) and a
// string `kind`, each edge an object with string `from` and `to`. Everything else the server's
// validator judges (POST …/validate): no rule of its is repeated here.

import { isRecord, isStringArray } from '../api/http.ts';
import { BUDGET_KEYS, type BudgetKey } from '../api/trace.ts';

/** The node kinds a spec names (`NodeKind` in composition.rs); a document keeps any other word too. */
export type NodeKind = 'LLMAgent' | 'Router' | 'Parallel' | 'Join' | 'Supervisor' | 'HumanApproval' | 'RemoteA2A' | 'Handoff';

export const NODE_KINDS: readonly NodeKind[] = ['LLMAgent', 'Router', 'Parallel', 'Join', 'Supervisor', 'HumanApproval', 'RemoteA2A', 'Handoff'];

/** A spec as plain JSON-like data: what `toSpec` gives and the API sends. */
export type SpecObject = Readonly<Record<string, unknown>>;

/** An object's keys in the order the spec listed them, and the values the canvas does not read, as they were. */
export interface Carried {
  readonly order: readonly string[];
  readonly rest: Readonly<Record<string, unknown>>;
}

export interface CanvasNode {
  /** The canvas's own identity for this node (never saved). */
  readonly key: string;
  readonly id: string;
  readonly kind: string;
  readonly description: string | null;
  readonly instruction: string | null;
  readonly model: string | null;
  readonly tools: readonly string[] | null;
  /** `output.labels`. */
  readonly labels: readonly string[] | null;
  readonly children: readonly string[] | null;
  readonly prompt: string | null;
  /** The `output` object's own keys, when the spec had one. */
  readonly output: Carried | null;
  readonly carried: Carried;
}

export interface CanvasEdge {
  /** The canvas's own identity for this edge (never saved). */
  readonly key: string;
  readonly from: string;
  readonly to: string;
  readonly when: string | null;
  readonly maxIterations: number | null;
  /** Null when the spec leaves `screen` out (an explicit `false` is kept as written). */
  readonly screen: boolean | null;
  readonly carried: Carried;
}

export interface CanvasBudgets {
  readonly values: Readonly<Partial<Record<BudgetKey, number>>>;
  /** The `budgets` object's own keys, when the spec had one. */
  readonly carried: Carried | null;
}

export interface CanvasDocument {
  readonly pattern: string | null;
  readonly description: string | null;
  readonly budgets: CanvasBudgets;
  readonly nodes: readonly CanvasNode[];
  readonly edges: readonly CanvasEdge[];
  readonly carried: Carried;
  /** The number the next node's or edge's key takes. */
  readonly nextKey: number;
}

/** Where in the spec something is wrong (`["nodes", 1, "id"]`), and what. */
export interface SpecProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

export type ReadResult = { readonly ok: true; readonly doc: CanvasDocument } | { readonly ok: false; readonly problems: readonly SpecProblem[] };

const NOTHING: Carried = { order: [], rest: {} };

/** The canvas with nothing on it. */
export function emptyDocument(): CanvasDocument {
  return { pattern: null, description: null, budgets: { values: {}, carried: null }, nodes: [], edges: [], carried: NOTHING, nextKey: 1 };
}

/** Reads an object's fields: each typed reader takes its key out of what is carried. */
class FieldReader {
  private readonly typed = new Set<string>();
  constructor(private readonly raw: Readonly<Record<string, unknown>>) {}

  text(key: string): string | null {
    const value = this.raw[key];
    return typeof value === 'string' ? this.take(key, value) : null;
  }

  list(key: string): readonly string[] | null {
    const value = this.raw[key];
    return isStringArray(value) ? this.take(key, value) : null;
  }

  number(key: string): number | null {
    const value = this.raw[key];
    return typeof value === 'number' && Number.isFinite(value) ? this.take(key, value) : null;
  }

  flag(key: string): boolean | null {
    const value = this.raw[key];
    return typeof value === 'boolean' ? this.take(key, value) : null;
  }

  record(key: string): Readonly<Record<string, unknown>> | null {
    const value = this.raw[key];
    return isRecord(value) ? this.take(key, value) : null;
  }

  /** Marks `key` as read (typed by the caller). */
  take<T>(key: string, value: T): T {
    this.typed.add(key);
    return value;
  }

  carried(): Carried {
    const order = Object.keys(this.raw);
    return { order, rest: Object.fromEntries(order.filter((k) => !this.typed.has(k)).map((k) => [k, this.raw[k]])) };
  }
}

/**
 * An object from what is carried and the typed fields (`null` or `undefined` for one left out):
 * the keys in the order the spec had them, then any typed field it did not have, in the order
 * given. A typed field left out gives way to a carried value of the same key.
 */
export function assemble(carried: Carried, fields: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const typed = new Map<string, unknown>(fields.map(([k, v]) => [k, v ?? undefined]));
  const entries: [string, unknown][] = [];
  const done = new Set<string>();
  const put = (key: string): void => {
    if (done.has(key)) return;
    done.add(key);
    const value = typed.get(key);
    if (value !== undefined) entries.push([key, value]);
    else if (Object.hasOwn(carried.rest, key)) entries.push([key, carried.rest[key]]);
  };
  for (const key of carried.order) put(key);
  for (const [key] of fields) put(key);
  for (const key of Object.keys(carried.rest)) put(key);
  // fromEntries makes own properties, so a key such as `__proto__` stays a plain key.
  return Object.fromEntries(entries);
}

/** What is carried, without `key` (once the canvas has set it typed, or cleared it). */
export function uncarry(carried: Carried, ...keys: string[]): Carried {
  if (!keys.some((k) => Object.hasOwn(carried.rest, k))) return carried;
  return { order: carried.order, rest: Object.fromEntries(Object.entries(carried.rest).filter(([k]) => !keys.includes(k))) };
}

function nodeKey(n: number): string {
  return `n${n}`;
}

function edgeKeyOf(n: number): string {
  return `e${n}`;
}

/** A document's next node key, and the document counting it. */
export function takeNodeKey(doc: CanvasDocument): [string, number] {
  return [nodeKey(doc.nextKey), doc.nextKey + 1];
}

/** A document's next edge key, and the document counting it. */
export function takeEdgeKey(doc: CanvasDocument): [string, number] {
  return [edgeKeyOf(doc.nextKey), doc.nextKey + 1];
}

/** A Composition spec as a canvas document, or every reason the canvas cannot hold it. */
export function fromSpec(spec: unknown): ReadResult {
  if (!isRecord(spec)) return { ok: false, problems: [{ path: [], message: 'the spec is not an object' }] };
  const problems: SpecProblem[] = [];
  const top = new FieldReader(spec);
  const pattern = top.text('pattern');
  const description = top.text('description');
  let next = 1;

  const rawBudgets = top.record('budgets');
  const values: Partial<Record<BudgetKey, number>> = {};
  let budgetsCarried: Carried | null = null;
  if (rawBudgets !== null) {
    const reader = new FieldReader(rawBudgets);
    for (const key of BUDGET_KEYS) {
      const n = reader.number(key);
      if (n !== null) values[key] = n;
    }
    budgetsCarried = reader.carried();
  }

  const nodes: CanvasNode[] = [];
  const rawNodes = spec['nodes'];
  if (rawNodes !== undefined && !Array.isArray(rawNodes)) problems.push({ path: ['nodes'], message: 'nodes is not a list' });
  const seen = new Map<string, number>();
  if (Array.isArray(rawNodes)) {
    top.take('nodes', rawNodes);
    rawNodes.forEach((raw: unknown, i) => {
      if (!isRecord(raw)) {
        problems.push({ path: ['nodes', i], message: `node ${i} is not an object` });
        return;
      }
      const r = new FieldReader(raw);
      const id = r.text('id');
      const kind = r.text('kind');
      if (id === null || id === '') problems.push({ path: ['nodes', i, 'id'], message: `node ${i} has no id` });
      else if (seen.has(id)) problems.push({ path: ['nodes', i, 'id'], message: `node ${i}'s id '${id}' is already node ${seen.get(id) ?? 0}'s` });
      else seen.set(id, i);
      if (kind === null) problems.push({ path: ['nodes', i, 'kind'], message: `node ${i} has no kind` });
      const rawOutput = r.record('output');
      let labels: readonly string[] | null = null;
      let output: Carried | null = null;
      if (rawOutput !== null) {
        const o = new FieldReader(rawOutput);
        labels = o.list('labels');
        output = o.carried();
      }
      nodes.push({
        key: nodeKey(next++),
        id: id ?? '',
        kind: kind ?? '',
        description: r.text('description'),
        instruction: r.text('instruction'),
        model: r.text('model'),
        tools: r.list('tools'),
        labels,
        children: r.list('children'),
        prompt: r.text('prompt'),
        output,
        carried: r.carried(),
      });
    });
  }

  const edges: CanvasEdge[] = [];
  const rawEdges = spec['edges'];
  if (rawEdges !== undefined && !Array.isArray(rawEdges)) problems.push({ path: ['edges'], message: 'edges is not a list' });
  if (Array.isArray(rawEdges)) {
    top.take('edges', rawEdges);
    rawEdges.forEach((raw: unknown, j) => {
      if (!isRecord(raw)) {
        problems.push({ path: ['edges', j], message: `edge ${j} is not an object` });
        return;
      }
      const r = new FieldReader(raw);
      const from = r.text('from');
      const to = r.text('to');
      if (from === null) problems.push({ path: ['edges', j, 'from'], message: `edge ${j} has no from` });
      if (to === null) problems.push({ path: ['edges', j, 'to'], message: `edge ${j} has no to` });
      edges.push({
        key: edgeKeyOf(next++),
        from: from ?? '',
        to: to ?? '',
        when: r.text('when'),
        maxIterations: r.number('maxIterations'),
        screen: r.flag('screen'),
        carried: r.carried(),
      });
    });
  }

  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, doc: { pattern, description, budgets: { values, carried: budgetsCarried }, nodes, edges, carried: top.carried(), nextKey: next } };
}

/** A node as the spec writes it. */
export function nodeSpec(node: CanvasNode): Record<string, unknown> {
  const output = node.output !== null || node.labels !== null ? assemble(node.output ?? NOTHING, [['labels', node.labels]]) : null;
  return assemble(node.carried, [
    ['id', node.id],
    ['kind', node.kind],
    ['description', node.description],
    ['instruction', node.instruction],
    ['tools', node.tools],
    ['model', node.model],
    ['output', output],
    ['children', node.children],
    ['prompt', node.prompt],
  ]);
}

/** An edge as the spec writes it. */
export function edgeSpec(edge: CanvasEdge): Record<string, unknown> {
  return assemble(edge.carried, [
    ['from', edge.from],
    ['to', edge.to],
    ['when', edge.when],
    ['maxIterations', edge.maxIterations],
    ['screen', edge.screen],
  ]);
}

/** The spec's `budgets`, or null when it has none. */
export function budgetsSpec(budgets: CanvasBudgets): Record<string, unknown> | null {
  const set = BUDGET_KEYS.filter((k) => budgets.values[k] !== undefined);
  if (budgets.carried === null && set.length === 0) return null;
  return assemble(budgets.carried ?? NOTHING, BUDGET_KEYS.map((k) => [k, budgets.values[k]]));
}

/** The document as a Composition spec: the spec it was read from, with the canvas's edits. */
export function toSpec(doc: CanvasDocument): Record<string, unknown> {
  const listed = (key: string, items: readonly unknown[]): readonly unknown[] | null => (items.length > 0 || doc.carried.order.includes(key) ? items : null);
  return assemble(doc.carried, [
    ['description', doc.description],
    ['pattern', doc.pattern],
    ['budgets', budgetsSpec(doc.budgets)],
    ['nodes', listed('nodes', doc.nodes.map(nodeSpec))],
    ['edges', listed('edges', doc.edges.map(edgeSpec))],
  ]);
}

/** JSON with every object's keys sorted: equal for two values that mean the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (isRecord(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v));
}

/** Whether two specs say the same (key order aside). */
export function sameSpec(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function nodeByKey(doc: CanvasDocument, key: string): CanvasNode | undefined {
  return doc.nodes.find((n) => n.key === key);
}

export function nodeById(doc: CanvasDocument, id: string): CanvasNode | undefined {
  return doc.nodes.find((n) => n.id === id);
}

export function edgeByKey(doc: CanvasDocument, key: string): CanvasEdge | undefined {
  return doc.edges.find((e) => e.key === key);
}
