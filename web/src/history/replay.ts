// A finished run rebuilt from its stored events: the nodes of the spec it ran (so nodes never
// entered show as skipped), then each event applied in order. Seeking rebuilds from the start,
// so applying must be cheap: 2,000 events (the most a run stores) take a few milliseconds.
// `replayInstant` is the hook the replay benchmark times.

import { isRecord } from '../api/http.ts';
import type { TraceEvent } from '../api/trace.ts';
import { RunModel } from '../run/model.ts';

export interface SpecNode {
  readonly id: string;
  readonly kind: string;
}

/** The nodes of a Composition spec (`spec.nodes[].id`, `.kind`), in order; none when it has none. */
export function specNodesOf(spec: unknown): SpecNode[] {
  if (!isRecord(spec) || !Array.isArray(spec['nodes'])) return [];
  const out: SpecNode[] = [];
  for (const node of spec['nodes']) {
    if (!isRecord(node)) continue;
    const { id, kind } = node;
    if (typeof id === 'string' && id !== '') out.push({ id, kind: typeof kind === 'string' ? kind : '' });
  }
  return out;
}

/** The model after the first `position` events (all of them by default). */
export function modelAt(events: readonly TraceEvent[], specNodes: readonly SpecNode[], position = events.length): RunModel {
  const model = new RunModel(specNodes);
  const end = Math.max(0, Math.min(position, events.length));
  for (let i = 0; i < end; i += 1) {
    const event = events[i];
    if (event !== undefined) model.apply(event);
  }
  return model;
}

/** The run as it ended: every event applied at once. */
export function replayInstant(events: readonly TraceEvent[], specNodes: readonly SpecNode[]): RunModel {
  return modelAt(events, specNodes);
}

/** Moves `model` (standing at `from` events) to `to`: forwards by applying the rest, backwards by rebuilding. */
export function moveModel(model: RunModel, events: readonly TraceEvent[], specNodes: readonly SpecNode[], from: number, to: number): RunModel {
  if (to < from) return modelAt(events, specNodes, to);
  for (let i = from; i < Math.min(to, events.length); i += 1) {
    const event = events[i];
    if (event !== undefined) model.apply(event);
  }
  return model;
}
