// Two runs side by side (rule 12.61): their totals and each node's tokens, latency, entries and
// calls, with B − A. Per-node figures come from each run's events (through a `RunModel`); totals
// from `run.end` when the events have it, else from the run's status. A node only one run
// entered is marked; a figure one side cannot give is null, and so is its difference.

import type { Run } from '../api/runs.ts';
import type { RunModel } from '../run/model.ts';

export type Figure = number | null;

export type Unit = 'count' | 'duration';

export interface TotalRow {
  readonly key: 'tokens' | 'toolCalls' | 'delegations' | 'remoteCalls' | 'wallTimeMs' | 'events' | 'dropped';
  readonly label: string;
  readonly unit: Unit;
  readonly a: Figure;
  readonly b: Figure;
  /** B − A, when both are known. */
  readonly delta: Figure;
}

export interface NodeFigures {
  readonly tokens: number;
  /** Time spent in the node over all its entries. */
  readonly durationMs: number;
  readonly entries: number;
  readonly calls: number;
}

export interface NodeRow {
  readonly id: string;
  readonly kind: string;
  /** Null when that run never entered the node (or its events could not be read). */
  readonly a: NodeFigures | null;
  readonly b: NodeFigures | null;
  /** Which run alone entered it, when only one did and both runs' events were read. */
  readonly only: 'a' | 'b' | null;
}

/** One side: the run (when it could be read) and the model of its events (when they could). */
export interface Side {
  readonly run: Run | null;
  readonly model: RunModel | null;
}

export function delta(a: Figure, b: Figure): Figure {
  return a === null || b === null ? null : b - a;
}

type TotalKey = TotalRow['key'];

function figureOf(side: Side, key: TotalKey): Figure {
  const end = side.model?.end ?? null;
  const status = side.run?.totals ?? null;
  switch (key) {
    case 'events':
      return side.model !== null ? side.model.events.length : (side.run?.eventCount ?? null);
    case 'dropped':
      return end?.dropped ?? null;
    default:
      return end?.totals[key] ?? status?.[key] ?? null;
  }
}

const TOTALS: readonly { readonly key: TotalKey; readonly label: string; readonly unit: Unit }[] = [
  { key: 'tokens', label: 'Tokens', unit: 'count' },
  { key: 'toolCalls', label: 'Tool calls', unit: 'count' },
  { key: 'delegations', label: 'Delegations', unit: 'count' },
  { key: 'remoteCalls', label: 'Remote calls', unit: 'count' },
  { key: 'wallTimeMs', label: 'Wall time', unit: 'duration' },
  { key: 'events', label: 'Events', unit: 'count' },
  { key: 'dropped', label: 'Events dropped', unit: 'count' },
];

export function totalRows(a: Side, b: Side): TotalRow[] {
  return TOTALS.map(({ key, label, unit }) => {
    const fa = figureOf(a, key);
    const fb = figureOf(b, key);
    return { key, label, unit, a: fa, b: fb, delta: delta(fa, fb) };
  });
}

function entered(model: RunModel | null): Map<string, { readonly kind: string; readonly figures: NodeFigures }> {
  const out = new Map<string, { readonly kind: string; readonly figures: NodeFigures }>();
  if (model === null) return out;
  for (const node of model.nodes.values()) {
    if (node.entries === 0) continue;
    out.set(node.id, { kind: node.kind, figures: { tokens: node.tokens, durationMs: node.durationMs, entries: node.entries, calls: node.calls } });
  }
  return out;
}

/** Each node either run entered: A's in the order A entered them, then those only B entered. */
export function nodeRows(a: Side, b: Side): NodeRow[] {
  const na = entered(a.model);
  const nb = entered(b.model);
  const bothRead = a.model !== null && b.model !== null;
  const ids = [...na.keys(), ...[...nb.keys()].filter((id) => !na.has(id))];
  return ids.map((id) => {
    const ea = na.get(id);
    const eb = nb.get(id);
    const only = !bothRead ? null : ea === undefined ? 'b' : eb === undefined ? 'a' : null;
    const kind = ea !== undefined && ea.kind !== '' ? ea.kind : (eb?.kind ?? '');
    return { id, kind, a: ea?.figures ?? null, b: eb?.figures ?? null, only };
  });
}

/** What a run ran: the Composition's name, revision and digest (from its status, else its reference). */
export function ranOf(run: Run): { readonly name: string | null; readonly revision: number | null; readonly digest: string | null } {
  if (run.composition !== null) return { name: run.composition.name || null, revision: run.composition.revision, digest: run.composition.digest || null };
  if (run.compositionRef !== null) return { name: run.compositionRef.name || null, revision: run.compositionRef.revision, digest: null };
  return { name: null, revision: null, digest: null };
}

/** Why the two runs' figures may not be like for like (empty when they ran the same spec). */
export function compareWarnings(a: Run, b: Run): string[] {
  const ra = ranOf(a);
  const rb = ranOf(b);
  const name = (n: string | null) => (n === null ? 'an inline composition' : `“${n}”`);
  if (ra.name !== rb.name) {
    return [`A ran ${name(ra.name)} and B ran ${name(rb.name)}: different compositions, so the nodes and figures need not match.`];
  }
  if (ra.revision !== rb.revision) {
    const rev = (r: number | null) => (r === null ? 'an unknown revision' : `revision ${r}`);
    return [`A ran ${rev(ra.revision)} of ${name(ra.name)} and B ran ${rev(rb.revision)}: the spec may have changed between them.`];
  }
  if (ra.digest !== null && rb.digest !== null && ra.digest !== rb.digest) {
    return [`A and B ran ${name(ra.name)} with different specs (their digests differ).`];
  }
  return [];
}
