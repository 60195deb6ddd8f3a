// A spec read from the cluster in place of the one on the canvas keeps the canvas's own keys
// where it can: a node of the same id keeps its key, and so does an edge between the same two
// nodes (the first such edge the first's, the second the second's, as diff.ts names them).
// Positions, the selection and the findings hold on to keys, so a change made elsewhere moves
// nothing that it did not touch. The rest take new keys, counted on from the canvas's.

import { edgeKey } from '../graph/spec.ts';
import { takeEdgeKey, takeNodeKey, type CanvasDocument, type CanvasEdge } from './document.ts';

function edgeNames(edges: readonly CanvasEdge[]): string[] {
  const counts = new Map<string, number>();
  return edges.map((e) => {
    const base = edgeKey(e.from, e.to);
    const n = (counts.get(base) ?? 0) + 1;
    counts.set(base, n);
    return n === 1 ? base : `${base}#${String(n)}`;
  });
}

/** `next` with `previous`'s keys for the nodes and edges they share. */
export function keepKeys(previous: CanvasDocument, next: CanvasDocument): CanvasDocument {
  let counter: CanvasDocument = { ...next, nextKey: Math.max(previous.nextKey, 1) };
  const fresh = (take: (doc: CanvasDocument) => [string, number]): string => {
    const [key, after] = take(counter);
    counter = { ...counter, nextKey: after };
    return key;
  };
  const nodeKeys = new Map(previous.nodes.map((n) => [n.id, n.key]));
  const nodes = next.nodes.map((n) => ({ ...n, key: nodeKeys.get(n.id) ?? fresh(takeNodeKey) }));
  const oldEdges = new Map(edgeNames(previous.edges).map((name, i) => [name, previous.edges[i]?.key]));
  const names = edgeNames(next.edges);
  const edges = next.edges.map((e, i) => ({ ...e, key: oldEdges.get(names[i] ?? '') ?? fresh(takeEdgeKey) }));
  return { ...next, nodes, edges, nextKey: counter.nextKey };
}
