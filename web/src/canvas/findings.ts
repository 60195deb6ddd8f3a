// The validator's findings placed on the canvas (rules 12.27, 12.28). Each finding of
// `POST …/validate` (its `errors` and `warnings`), of a 422 that starts a run with an inline
// composition, or of a Composition's status carries a `loc`: the JSON path of what it is about,
// `["spec", "nodes", 1, "tools", 0]` (docs/sidecar-api.md, `crds/src/validate/report.rs`). A 422
// that is not a spec at all names its field under `["body", "spec", …]`. Each is placed on a node
// (its index read as the node's key in the document that was validated), an edge, a field of
// either, the budgets or the composition, errors apart from warnings. A placed finding holds on to
// the key, so it follows a rename or a reorder, and it stands until the part it is about changes
// (`standingFindings`), when only a new validation can say.

import { isRecord, type Problem } from '../api/http.ts';
import { findingsOf, type Finding } from '../api/runs.ts';
import { budgetsSpec, canonicalJson, edgeSpec, nodeSpec, toSpec, type CanvasDocument } from './document.ts';

export type Loc = readonly (string | number)[];

export type FindingTarget =
  /** A node (by key), or one of its fields: `field` is the spec's key (`tools`, `output`), `path` the rest of the loc within the node. */
  | { readonly kind: 'node'; readonly node: string; readonly id: string; readonly field: string | null; readonly path: Loc }
  /** An edge (by key), or one of its fields (`when`, `maxIterations`, `from`…). */
  | { readonly kind: 'edge'; readonly edge: string; readonly from: string; readonly to: string; readonly field: string | null }
  /** The budgets, or one budget. */
  | { readonly kind: 'budgets'; readonly budget: string | null }
  /** The composition as a whole (`field` null), or one of its own fields (`pattern`, `nodes`…). */
  | { readonly kind: 'composition'; readonly field: string | null };

export interface PlacedFinding {
  readonly finding: Finding;
  readonly target: FindingTarget;
  /** The part of the spec it is about, as validated (canonical JSON). */
  readonly part: string;
}

export interface PlacedFindings {
  readonly errors: readonly PlacedFinding[];
  readonly warnings: readonly PlacedFinding[];
}

export interface Verdict {
  readonly valid: boolean;
  readonly errors: readonly Finding[];
  readonly warnings: readonly Finding[];
}

/** `POST …/validate`'s reply (`{valid, errors, warnings}`), or null when it is not one. */
export function verdictOf(body: unknown): Verdict | null {
  if (!isRecord(body) || typeof body['valid'] !== 'boolean' || !Array.isArray(body['errors'])) return null;
  return { valid: body['valid'], errors: findingsOf(body['errors']), warnings: findingsOf(body['warnings']) };
}

/** A loc as the validator writes it as text: `spec.nodes[1].tools[0]`. */
export function locText(loc: Loc): string {
  return loc.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

/** A 422's problem (the body is not a spec: `["body", "spec", "nodes", 0, "kind"]`) as a finding. */
export function findingOfProblem(problem: Problem): Finding {
  return { loc: problem.loc, field: locText(problem.loc), code: problem.code, message: problem.message };
}

/**
 * The loc within the spec: without the request's `body` and the `spec` (or a run's inline
 * `composition`) that holds it; null for a loc outside the spec (`["body", "input"]`).
 */
export function specPath(loc: Loc): Loc | null {
  const rest = loc[0] === 'body' ? loc.slice(1) : loc;
  return rest[0] === 'spec' || rest[0] === 'composition' ? rest.slice(1) : null;
}

/** What a loc is about in `doc` (the document that was validated). */
export function targetOf(doc: CanvasDocument, loc: Loc): FindingTarget {
  const path = specPath(loc);
  if (path === null) return { kind: 'composition', field: null };
  const [head, index, field, ...more] = path;
  if (head === undefined) return { kind: 'composition', field: null };
  const name = typeof field === 'string' ? field : null;
  if (head === 'nodes' && typeof index === 'number') {
    const node = doc.nodes[index];
    if (node !== undefined) return { kind: 'node', node: node.key, id: node.id, field: name, path: name === null ? [] : [name, ...more] };
  }
  if (head === 'edges' && typeof index === 'number') {
    const edge = doc.edges[index];
    if (edge !== undefined) return { kind: 'edge', edge: edge.key, from: edge.from, to: edge.to, field: name };
  }
  if (head === 'budgets') return { kind: 'budgets', budget: typeof index === 'string' ? index : null };
  return { kind: 'composition', field: String(head) };
}

function pick(value: Readonly<Record<string, unknown>> | null, field: string | null): unknown {
  return field === null || value === null ? value : value[field];
}

/** The part of `doc` a target is about, as canonical JSON; null once it is gone. */
export function partOf(doc: CanvasDocument, target: FindingTarget): string | null {
  switch (target.kind) {
    case 'node': {
      const node = doc.nodes.find((n) => n.key === target.node);
      return node === undefined ? null : canonicalJson(pick(nodeSpec(node), target.field));
    }
    case 'edge': {
      const edge = doc.edges.find((e) => e.key === target.edge);
      return edge === undefined ? null : canonicalJson(pick(edgeSpec(edge), target.field));
    }
    case 'budgets':
      return canonicalJson(pick(budgetsSpec(doc.budgets), target.budget) ?? null);
    case 'composition':
      return canonicalJson(target.field === null ? toSpec(doc) : (toSpec(doc)[target.field] ?? null));
  }
}

function place(doc: CanvasDocument, findings: readonly Finding[]): PlacedFinding[] {
  return findings.map((finding) => {
    const target = targetOf(doc, finding.loc);
    return { finding, target, part: partOf(doc, target) ?? 'null' };
  });
}

/** Each finding of a verdict on what it is about in `doc`, the document that was validated. */
export function placeFindings(doc: CanvasDocument, verdict: Pick<Verdict, 'errors' | 'warnings'>): PlacedFindings {
  return { errors: place(doc, verdict.errors), warnings: place(doc, verdict.warnings) };
}

/** The findings that still stand in `doc`: what each is about is still there, unchanged (rule 12.28). */
export function standingFindings(placed: PlacedFindings, doc: CanvasDocument): PlacedFindings {
  const stands = (p: PlacedFinding): boolean => partOf(doc, p.target) === p.part;
  return { errors: placed.errors.filter(stands), warnings: placed.warnings.filter(stands) };
}

/** The findings on one node (on it or on one of its fields), errors then warnings. */
export function findingsOnNode(placed: PlacedFindings, key: string): PlacedFindings {
  const on = (p: PlacedFinding): boolean => p.target.kind === 'node' && p.target.node === key;
  return { errors: placed.errors.filter(on), warnings: placed.warnings.filter(on) };
}

/** The findings on one edge (on it or on one of its fields). */
export function findingsOnEdge(placed: PlacedFindings, key: string): PlacedFindings {
  const on = (p: PlacedFinding): boolean => p.target.kind === 'edge' && p.target.edge === key;
  return { errors: placed.errors.filter(on), warnings: placed.warnings.filter(on) };
}
