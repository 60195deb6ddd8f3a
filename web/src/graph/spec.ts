// The graph a run's panel draws, read from the Composition spec the run ran (`GET …/composition`,
// `crds/src/composition.rs`): its nodes (`id`, `kind`, `model`, `instruction`, `tools`,
// `prompt`, a Supervisor's `children`, `output.labels`) and its edges (`from`, `to`, the label
// `when` that takes a routed edge, `maxIterations` on the back edge that closes a loop). A
// Supervisor's children have no edges: the panel draws one "delegates" edge from the supervisor
// to each child. Read leniently: a field of the wrong type is left out, never thrown on.

import { isRecord, isStringArray } from '../api/http.ts';

export interface SpecNode {
  readonly id: string;
  readonly kind: string;
  readonly model: string | null;
  readonly instruction: string | null;
  readonly description: string | null;
  readonly prompt: string | null;
  readonly tools: readonly string[];
  readonly children: readonly string[];
  readonly labels: readonly string[];
}

export type EdgeKind = 'forward' | 'back' | 'delegation';

export interface SpecEdge {
  /** Unique within the graph: `from→to`, with `#2`, `#3`… for a second edge between the same nodes. */
  readonly id: string;
  readonly from: string;
  readonly to: string;
  /** The label that takes this edge (a router's, an approval's `approved`/`rejected`). */
  readonly when: string | null;
  /** On a back edge: how many times per entry of the loop it may be taken. */
  readonly maxIterations: number | null;
  readonly screen: boolean;
  readonly kind: EdgeKind;
}

export interface GraphSpec {
  readonly pattern: string;
  readonly description: string | null;
  readonly nodes: readonly SpecNode[];
  readonly edges: readonly SpecEdge[];
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The key the run model counts an edge under (`RunModel.edgesTaken`). */
export function edgeKey(from: string, to: string): string {
  return `${from}→${to}`;
}

/** The graph of a Composition spec, or null when it is not one (no node list). */
export function parseSpec(spec: unknown): GraphSpec | null {
  if (!isRecord(spec) || !Array.isArray(spec['nodes'])) return null;
  const nodes: SpecNode[] = [];
  const seen = new Set<string>();
  for (const raw of spec['nodes']) {
    if (!isRecord(raw)) continue;
    const id = text(raw['id']);
    if (id === null || seen.has(id)) continue;
    seen.add(id);
    const output = isRecord(raw['output']) ? raw['output'] : {};
    nodes.push({
      id,
      kind: text(raw['kind']) ?? 'LLMAgent',
      model: text(raw['model']),
      instruction: text(raw['instruction']),
      description: text(raw['description']),
      prompt: text(raw['prompt']),
      tools: isStringArray(raw['tools']) ? raw['tools'] : [],
      children: isStringArray(raw['children']) ? raw['children'] : [],
      labels: isStringArray(output['labels']) ? output['labels'] : [],
    });
  }
  const edges: SpecEdge[] = [];
  const ids = new Map<string, number>();
  const add = (edge: Omit<SpecEdge, 'id'>): void => {
    const key = edgeKey(edge.from, edge.to);
    const n = (ids.get(key) ?? 0) + 1;
    ids.set(key, n);
    edges.push({ ...edge, id: n === 1 ? key : `${key}#${n}` });
  };
  for (const raw of Array.isArray(spec['edges']) ? spec['edges'] : []) {
    if (!isRecord(raw)) continue;
    const from = text(raw['from']);
    const to = text(raw['to']);
    if (from === null || to === null || !seen.has(from) || !seen.has(to)) continue;
    const max = raw['maxIterations'];
    const maxIterations = typeof max === 'number' && Number.isFinite(max) ? max : null;
    add({ from, to, when: text(raw['when']), maxIterations, screen: raw['screen'] === true, kind: maxIterations === null ? 'forward' : 'back' });
  }
  for (const node of nodes) {
    for (const child of node.children) {
      if (seen.has(child)) add({ from: node.id, to: child, when: `n_${child}`, maxIterations: null, screen: false, kind: 'delegation' });
    }
  }
  return { pattern: text(spec['pattern']) ?? '', description: text(spec['description']), nodes, edges };
}

/**
 * The nodes in a canonical order that does not depend on the order the spec lists them in:
 * a topological order of the graph without its back edges (Kahn's, ties broken by id), then any
 * node a cycle without a back edge left out, by id. The layout is fed in this order, so one
 * spec always gives one layout, and ELK's model-order cycle breaking reverses exactly the back
 * edges.
 */
export function canonicalOrder(graph: GraphSpec): string[] {
  const ids = graph.nodes.map((n) => n.id).sort(compare);
  const indegree = new Map<string, number>(ids.map((id) => [id, 0]));
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const edge of graph.edges) {
    if (edge.kind === 'back') continue;
    indegree.set(edge.to, (indegree.get(edge.to) ?? 0) + 1);
    out.get(edge.from)?.push(edge.to);
  }
  const ready = ids.filter((id) => indegree.get(id) === 0);
  const order: string[] = [];
  const placed = new Set<string>();
  while (ready.length > 0) {
    ready.sort(compare);
    const id = ready.shift();
    if (id === undefined) break;
    order.push(id);
    placed.add(id);
    for (const to of out.get(id) ?? []) {
      const left = (indegree.get(to) ?? 0) - 1;
      indegree.set(to, left);
      if (left === 0) ready.push(to);
    }
  }
  for (const id of ids) if (!placed.has(id)) order.push(id);
  return order;
}

/** Code-point order, the same in every locale. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A graph from what the events told, for a run whose spec cannot be read: nodes in the order first entered, edges as taken. */
export function graphFromEvents(nodes: readonly { readonly id: string; readonly kind: string }[], taken: Iterable<string>, loops: Iterable<{ readonly head: string; readonly tail: string; readonly max: number }>): GraphSpec {
  const loopMax = new Map<string, number>();
  for (const loop of loops) loopMax.set(edgeKey(loop.tail, loop.head), loop.max);
  const known = new Set(nodes.map((n) => n.id));
  const edges: SpecEdge[] = [];
  for (const key of taken) {
    const [from, to] = key.split('→');
    if (from === undefined || to === undefined || !known.has(from) || !known.has(to)) continue;
    const max = loopMax.get(key) ?? null;
    edges.push({ id: key, from, to, when: null, maxIterations: max, screen: false, kind: max === null ? 'forward' : 'back' });
  }
  return {
    pattern: '',
    description: null,
    nodes: nodes.map((n) => ({ id: n.id, kind: n.kind, model: null, instruction: null, description: null, prompt: null, tools: [], children: [], labels: [] })),
    edges,
  };
}

/**
 * What a graph drawn from the events is made of, as one string (`id:kind` of each node, each
 * edge taken, each loop `tail>head:max`): it changes only when that graph would, so the graph
 * (and its layout) is made again only then, not at every event.
 */
export function eventGraphKey(nodes: Iterable<{ readonly id: string; readonly kind: string }>, taken: Iterable<string>, loops: Iterable<{ readonly head: string; readonly tail: string; readonly max: number }>): string {
  const n = [...nodes].map((x) => `${x.id}:${x.kind}`).join(',');
  const e = [...taken].join(',');
  const l = [...loops].map((x) => `${x.tail}>${x.head}:${x.max}`).join(',');
  return `${n}|${e}|${l}`;
}

/** The graph an `eventGraphKey` names (null for no node). */
export function graphFromEventKey(key: string): GraphSpec | null {
  const [n = '', e = '', l = ''] = key.split('|');
  if (n === '') return null;
  const nodes = n.split(',').map((x) => {
    const [id = '', kind = ''] = x.split(':');
    return { id, kind };
  });
  const loops = l === '' ? [] : l.split(',').map((x) => {
    const [ends = '', max = '0'] = x.split(':');
    const [tail = '', head = ''] = ends.split('>');
    return { tail, head, max: Number(max) };
  });
  return graphFromEvents(nodes, e === '' ? [] : e.split(','), loops);
}
