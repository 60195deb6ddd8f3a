// The round of each loop, shown on the node the loop returns to (its head): how many times its
// back edge was taken in this entry of the loop, of its cap, from the spec's back edges and the
// run model's `loop.iteration` counts (0 of the cap before the first).

import type { RunModel } from '../run/model.ts';
import type { LoopRound } from './node-card.ts';
import { edgeKey, type GraphSpec } from './spec.ts';

export function loopRoundsOf(graph: GraphSpec, model: RunModel): Map<string, LoopRound> {
  const rounds = new Map<string, LoopRound>();
  for (const edge of graph.edges) {
    if (edge.kind !== 'back' || edge.maxIterations === null || rounds.has(edge.to)) continue;
    const seen = model.loops.get(edgeKey(edge.from, edge.to));
    rounds.set(edge.to, seen === undefined ? { iteration: 0, max: edge.maxIterations, stopped: false } : { iteration: seen.iteration, max: seen.max, stopped: seen.stopped });
  }
  return rounds;
}
