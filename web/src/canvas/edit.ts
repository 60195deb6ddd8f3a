// The canvas's edits: pure functions over a document (document.ts), each giving a new document
// or a typed refusal. Nodes and edges are named by their canvas keys. What is refused here is
// only what the canvas itself cannot hold or what the client already knows (rules 12.14–12.16):
// an id another node has, an edge to a node that is not there, an edge a supervisor's child
// cannot take (the panel draws a child's delegation, never an edge: graph/spec.ts), the same
// edge twice (12.67). Whether the graph fits its pattern is the server's validator's to say
// (POST …/validate): none of its rules is repeated here.

import { BUDGET_KEYS, type BudgetKey } from '../api/trace.ts';
import { takeEdgeKey, takeNodeKey, uncarry, type CanvasDocument, type CanvasEdge, type CanvasNode, type Carried, type NodeKind } from './document.ts';

export type EditErrorCode = 'unknown_node' | 'unknown_edge' | 'empty_id' | 'duplicate_id' | 'duplicate_edge' | 'supervisor_child' | 'not_two_routes';

export interface EditError {
  readonly code: EditErrorCode;
  readonly message: string;
}

export type EditResult = { readonly ok: true; readonly doc: CanvasDocument } | { readonly ok: false; readonly error: EditError };

function done(doc: CanvasDocument): EditResult {
  return { ok: true, doc };
}

function refuse(code: EditErrorCode, message: string): { readonly ok: false; readonly error: EditError } {
  return { ok: false, error: { code, message } };
}

const NO_NODE = (key: string): { readonly ok: false; readonly error: EditError } => refuse('unknown_node', `there is no node ${key} on the canvas`);

/** The word a new node's id starts with, by kind (`agent-1`, `router-2`…). */
export const ID_STEMS: Readonly<Record<NodeKind, string>> = {
  LLMAgent: 'agent',
  Router: 'router',
  Parallel: 'parallel',
  Join: 'join',
  Supervisor: 'supervisor',
  HumanApproval: 'review',
  RemoteA2A: 'remote',
  Handoff: 'handoff',
};

/** The labels an edge out of a HumanApproval takes, in the order rule 12.15 gives them. */
export const APPROVAL_LABELS: readonly string[] = ['approved', 'rejected'];

/** The cap a new edge back to an earlier node starts with (rule 12.15). */
export const NEW_LOOP_CAP = 2;

/** `<stem>-<n>` with the smallest n from 1 that no node has. */
export function freeId(doc: CanvasDocument, stem: string): string {
  const taken = new Set(doc.nodes.map((n) => n.id));
  for (let n = 1; ; n++) {
    const id = `${stem}-${n}`;
    if (!taken.has(id)) return id;
  }
}

/** The text and list fields of a node the inspector sets; `null`, `''` or `[]` clears one. */
export interface NodeFields {
  readonly description?: string | null;
  readonly instruction?: string | null;
  readonly model?: string | null;
  readonly prompt?: string | null;
  readonly tools?: readonly string[] | null;
  readonly labels?: readonly string[] | null;
  readonly children?: readonly string[] | null;
}

const TEXT_FIELDS = ['description', 'instruction', 'model', 'prompt'] as const;
const LIST_FIELDS = ['tools', 'children'] as const;

function withFields(node: CanvasNode, fields: NodeFields): CanvasNode {
  let next: CanvasNode = node;
  for (const field of TEXT_FIELDS) {
    const value = fields[field];
    if (value === undefined) continue;
    next = { ...next, [field]: value === '' ? null : value, carried: uncarry(next.carried, field) };
  }
  for (const field of LIST_FIELDS) {
    const value = fields[field];
    if (value === undefined) continue;
    next = { ...next, [field]: value === null || value.length === 0 ? null : [...value], carried: uncarry(next.carried, field) };
  }
  if (fields.labels !== undefined) {
    const labels = fields.labels === null || fields.labels.length === 0 ? null : [...fields.labels];
    // An output object with nothing left in it goes; one with fields of its own stays.
    const output: Carried | null = next.output === null || (labels === null && Object.keys(next.output.rest).length === 0) ? null : uncarry(next.output, 'labels');
    next = { ...next, labels, output, carried: uncarry(next.carried, 'output') };
  }
  return next;
}

/** Adds a node of `kind` after the last one, with a fresh id (`agent-1`…) unless `id` is given. */
export function addNode(doc: CanvasDocument, kind: string, fields: NodeFields & { readonly id?: string } = {}): { readonly doc: CanvasDocument; readonly node: CanvasNode } {
  const [key, nextKey] = takeNodeKey(doc);
  const stem = (ID_STEMS as Readonly<Record<string, string>>)[kind] ?? 'node';
  const id = fields.id !== undefined && fields.id !== '' && !doc.nodes.some((n) => n.id === fields.id) ? fields.id : freeId(doc, stem);
  const blank: CanvasNode = {
    key,
    id,
    kind,
    description: null,
    instruction: null,
    model: null,
    tools: null,
    labels: null,
    children: null,
    prompt: null,
    output: null,
    carried: { order: [], rest: {} },
  };
  const node = withFields(blank, fields);
  return { doc: { ...doc, nodes: [...doc.nodes, node], nextKey }, node };
}

/** Removes a node, the edges in and out of it, and its place among any supervisor's children. */
export function removeNode(doc: CanvasDocument, key: string): EditResult {
  const node = doc.nodes.find((n) => n.key === key);
  if (node === undefined) return NO_NODE(key);
  const nodes = doc.nodes
    .filter((n) => n.key !== key)
    .map((n) => (n.children?.includes(node.id) === true ? withFields(n, { children: n.children.filter((c) => c !== node.id) }) : n));
  const edges = doc.edges.filter((e) => e.from !== node.id && e.to !== node.id);
  return done({ ...doc, nodes, edges });
}

/**
 * Gives a node another id, and every place that names it follows: the edges' `from` and `to`
 * and the supervisors' `children` (the only places a spec names a node).
 */
export function renameNode(doc: CanvasDocument, key: string, id: string): EditResult {
  const node = doc.nodes.find((n) => n.key === key);
  if (node === undefined) return NO_NODE(key);
  if (id === '') return refuse('empty_id', 'a node needs an id');
  if (id === node.id) return done(doc);
  if (doc.nodes.some((n) => n.id === id)) return refuse('duplicate_id', `another node is already called ${id}`);
  const old = node.id;
  const nodes = doc.nodes.map((n) => {
    const renamed = n.key === key ? { ...n, id, carried: uncarry(n.carried, 'id') } : n;
    return renamed.children?.includes(old) === true ? withFields(renamed, { children: renamed.children.map((c) => (c === old ? id : c)) }) : renamed;
  });
  const edges = doc.edges.map((e) => (e.from === old || e.to === old ? { ...e, from: e.from === old ? id : e.from, to: e.to === old ? id : e.to } : e));
  return done({ ...doc, nodes, edges });
}

/** Sets a node's text and list fields (`null`, `''` or `[]` clears one). */
export function setNodeFields(doc: CanvasDocument, key: string, fields: NodeFields): EditResult {
  if (!doc.nodes.some((n) => n.key === key)) return NO_NODE(key);
  return done({ ...doc, nodes: doc.nodes.map((n) => (n.key === key ? withFields(n, fields) : n)) });
}

/** The labels a node's edges route on: an approval's approved and rejected, else its `output.labels`. */
export function routeLabels(node: CanvasNode): readonly string[] {
  return node.kind === 'HumanApproval' ? APPROVAL_LABELS : (node.labels ?? []);
}

/** Whether `to` reaches `from` along the forward edges (the ones with no loop cap). */
function reaches(doc: CanvasDocument, start: string, goal: string): boolean {
  const seen = new Set<string>([start]);
  const queue = [start];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    if (id === goal) return true;
    for (const e of doc.edges) {
      if (e.from === id && e.maxIterations === null && !seen.has(e.to)) {
        seen.add(e.to);
        queue.push(e.to);
      }
    }
  }
  return false;
}

export type ConnectResult = { readonly ok: true; readonly doc: CanvasDocument; readonly edge: CanvasEdge } | { readonly ok: false; readonly error: EditError };

export interface ConnectOptions {
  /** The label that takes the edge; by default the source's first label no edge of its takes yet. */
  readonly when?: string | null;
  /** The loop cap; by default 2 on an edge back to an earlier node, none otherwise. */
  readonly maxIterations?: number | null;
}

/**
 * Draws an edge from one node to another (rule 12.14). Out of a node that routes on labels it
 * takes the first label none of its edges takes yet (approved, then rejected, out of a
 * HumanApproval); back to a node that leads to the source it starts as a loop capped at 2
 * (rule 12.15).
 */
export function connect(doc: CanvasDocument, fromKey: string, toKey: string, options: ConnectOptions = {}): ConnectResult {
  const from = doc.nodes.find((n) => n.key === fromKey);
  const to = doc.nodes.find((n) => n.key === toKey);
  if (from === undefined) return NO_NODE(fromKey);
  if (to === undefined) return NO_NODE(toKey);
  for (const node of [from, to]) {
    const parent = doc.nodes.find((n) => n.children?.includes(node.id) === true);
    if (parent !== undefined) return refuse('supervisor_child', `${node.id} is ${parent.id}'s child: ${parent.id} calls it as the tool n_${node.id}, and a child takes no edges`);
  }
  const out = doc.edges.filter((e) => e.from === from.id);
  const when = options.when !== undefined ? options.when : (routeLabels(from).find((l) => !out.some((e) => e.when === l)) ?? null);
  if (out.some((e) => sameRoute(e, { from: from.id, to: to.id, when }))) {
    return refuse('duplicate_edge', `there is already an edge from ${from.id} to ${to.id}${when === null ? '' : ` when ${when}`}`);
  }
  const maxIterations = options.maxIterations !== undefined ? options.maxIterations : reaches(doc, to.id, from.id) ? NEW_LOOP_CAP : null;
  const [key, nextKey] = takeEdgeKey(doc);
  const edge: CanvasEdge = { key, from: from.id, to: to.id, when, maxIterations, screen: null, carried: { order: [], rest: {} } };
  return { ok: true, doc: { ...doc, edges: [...doc.edges, edge], nextKey }, edge };
}

type Route = Pick<CanvasEdge, 'from' | 'to' | 'when'>;

/** Whether two edges are the same edge listed twice: the same ends and the same label (rule 12.67). */
export function sameRoute(a: Route, b: Route): boolean {
  return a.from === b.from && a.to === b.to && a.when === b.when;
}

/** The edges that repeat an edge listed before them. */
export function repeatedEdges(doc: CanvasDocument): CanvasEdge[] {
  return doc.edges.filter((e, j) => doc.edges.slice(0, j).some((earlier) => sameRoute(earlier, e)));
}

export function removeEdge(doc: CanvasDocument, key: string): EditResult {
  if (!doc.edges.some((e) => e.key === key)) return refuse('unknown_edge', `there is no edge ${key} on the canvas`);
  return done({ ...doc, edges: doc.edges.filter((e) => e.key !== key) });
}

/** What the inspector sets on an edge; `null` clears a field. */
export interface EdgeFields {
  readonly when?: string | null;
  readonly maxIterations?: number | null;
  readonly screen?: boolean | null;
}

/** Sets an edge's `when`, loop cap or screen (`null` or `''` clears one; `screen: false` leaves it out). */
export function setEdgeFields(doc: CanvasDocument, key: string, fields: EdgeFields): EditResult {
  const edge = doc.edges.find((e) => e.key === key);
  if (edge === undefined) return refuse('unknown_edge', `there is no edge ${key} on the canvas`);
  let next: CanvasEdge = edge;
  if (fields.when !== undefined) next = { ...next, when: fields.when === '' ? null : fields.when, carried: uncarry(next.carried, 'when') };
  if (fields.maxIterations !== undefined) next = { ...next, maxIterations: fields.maxIterations, carried: uncarry(next.carried, 'maxIterations') };
  if (fields.screen !== undefined) next = { ...next, screen: fields.screen === true ? true : null, carried: uncarry(next.carried, 'screen') };
  return done({ ...doc, edges: doc.edges.map((e) => (e.key === key ? next : e)) });
}

/** Swaps the labels of a node's two routed edges (rule 12.15: an approval's approved and rejected). */
export function swapRoutes(doc: CanvasDocument, key: string): EditResult {
  const node = doc.nodes.find((n) => n.key === key);
  if (node === undefined) return NO_NODE(key);
  const routed = doc.edges.filter((e) => e.from === node.id && e.when !== null);
  const [a, b] = routed;
  if (routed.length !== 2 || a === undefined || b === undefined) return refuse('not_two_routes', `${node.id} has ${routed.length} routed edges; swapping needs exactly two`);
  return done({ ...doc, edges: doc.edges.map((e) => (e.key === a.key ? { ...e, when: b.when } : e.key === b.key ? { ...e, when: a.when } : e)) });
}

/** Sets or clears (`null`) budgets; the others stay as they are. */
export function setBudgets(doc: CanvasDocument, budgets: Readonly<Partial<Record<BudgetKey, number | null>>>): CanvasDocument {
  const values: Partial<Record<BudgetKey, number>> = {};
  let carried = doc.budgets.carried;
  for (const key of BUDGET_KEYS) {
    const value = budgets[key] === undefined ? doc.budgets.values[key] : budgets[key];
    if (value !== undefined && value !== null) values[key] = value;
    if (budgets[key] !== undefined && carried !== null) carried = uncarry(carried, key);
  }
  return { ...doc, budgets: { values, carried } };
}

/** Sets the composition's pattern or description (`null` or `''` clears one). */
export function setComposition(doc: CanvasDocument, fields: { readonly pattern?: string | null; readonly description?: string | null }): CanvasDocument {
  let next = doc;
  if (fields.pattern !== undefined) next = { ...next, pattern: fields.pattern === '' ? null : fields.pattern, carried: uncarry(next.carried, 'pattern') };
  if (fields.description !== undefined) next = { ...next, description: fields.description === '' ? null : fields.description, carried: uncarry(next.carried, 'description') };
  return next;
}
