// Compositions as the canvas saves and opens them (docs/sidecar-api.md "Compositions"), with the
// caller's own token: `GET …/compositions[/{name}]` and `PUT …/compositions/{name}` (validated
// first, then server-side apply as `orrery-console`; a stale `resourceVersion`, a field another
// manager owns or an existing name is a 409 that says which, never an overwrite).

import type { Finding } from './runs.ts';
import { findingsOf, type Result } from './runs.ts';
import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions, type Problem } from './http.ts';

/** A Composition as the cluster holds it. */
export interface StoredComposition {
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string | null;
  /** The newest revision the operator recorded (`status.revision`), once it has. */
  readonly revision: number | null;
  /** `metadata.generation`: the revision this spec is (or is about to be) recorded as, so right after a save too, when `status.revision` still names the one before. */
  readonly generation: number | null;
  readonly created: string;
  readonly description: string;
  readonly spec: Readonly<Record<string, unknown>>;
}

export function parseStored(value: unknown): StoredComposition | null {
  if (!isRecord(value) || !isRecord(value['metadata']) || !isRecord(value['spec'])) return null;
  const meta = value['metadata'];
  const status = isRecord(value['status']) ? value['status'] : {};
  const name = meta['name'];
  if (typeof name !== 'string' || name === '') return null;
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  const revision = status['revision'];
  return {
    namespace: text(meta['namespace']),
    name,
    resourceVersion: typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : null,
    revision: typeof revision === 'number' && Number.isInteger(revision) ? revision : null,
    generation: typeof meta['generation'] === 'number' && Number.isInteger(meta['generation']) ? meta['generation'] : null,
    created: text(meta['creationTimestamp']),
    description: text(value['spec']['description']),
    spec: value['spec'],
  };
}

/** `GET …/compositions`: newest first (12.56). */
export async function listCompositions(token: string, namespace: string, options: ApiOptions = {}): Promise<Result<StoredComposition[]>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'compositions'), {}, options);
  if (!reply.ok) return reply;
  if (!isRecord(reply.body) || !Array.isArray(reply.body['items'])) return { ok: false, problem: shapeProblem(reply.status, 'a list of Compositions') };
  const items = reply.body['items'].map(parseStored).filter((c): c is StoredComposition => c !== null);
  return { ok: true, value: items.sort((a, b) => b.created.localeCompare(a.created) || a.name.localeCompare(b.name)) };
}

export async function getComposition(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<StoredComposition>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'compositions', name), {}, options);
  if (!reply.ok) return reply;
  const stored = parseStored(reply.body);
  return stored === null ? { ok: false, problem: shapeProblem(reply.status, 'a Composition') } : { ok: true, value: stored };
}

export interface SaveRequest {
  readonly spec: Readonly<Record<string, unknown>>;
  /** The version the canvas was read from; without it the save only creates. */
  readonly resourceVersion?: string;
  /** Takes over fields other managers own (after a `field_conflict`, confirmed). */
  readonly force?: boolean;
}

/** A field another manager owns, as the apiserver names it. */
export interface FieldConflict {
  readonly manager: string;
  readonly field: string;
  readonly message: string;
}

export type SaveOutcome =
  | { readonly kind: 'saved'; readonly created: boolean; readonly composition: StoredComposition }
  /** The name is taken (a create) or the object changed since it was read: as it is now. */
  | { readonly kind: 'exists' | 'conflict'; readonly message: string; readonly current: StoredComposition | null }
  | { readonly kind: 'field_conflict'; readonly message: string; readonly conflicts: readonly FieldConflict[] }
  | { readonly kind: 'invalid'; readonly message: string; readonly findings: readonly Finding[] }
  | { readonly kind: 'refused'; readonly problem: Problem };

function conflictsOf(value: unknown): FieldConflict[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((c) => ({
    manager: typeof c['manager'] === 'string' ? c['manager'] : 'another manager',
    field: typeof c['field'] === 'string' ? c['field'] : '',
    message: typeof c['message'] === 'string' ? c['message'] : '',
  }));
}

/** The outcome of a save's reply. */
export function saveOutcome(reply: Awaited<ReturnType<typeof callApi>>): SaveOutcome {
  if (reply.ok) {
    const composition = parseStored(reply.body);
    return composition === null ? { kind: 'refused', problem: shapeProblem(reply.status, 'a Composition') } : { kind: 'saved', created: reply.status === 201, composition };
  }
  const { problem } = reply;
  const details = problem.details ?? {};
  if (problem.status === 409 && (problem.code === 'exists' || problem.code === 'conflict')) return { kind: problem.code, message: problem.message, current: parseStored(details['current']) };
  if (problem.status === 409 && problem.code === 'field_conflict') return { kind: 'field_conflict', message: problem.message, conflicts: conflictsOf(details['conflicts']) };
  if (problem.status === 422 && problem.errors !== undefined) return { kind: 'invalid', message: problem.message, findings: findingsOf(problem.errors) };
  return { kind: 'refused', problem };
}

/** `PUT …/compositions/{name}`. */
export async function saveComposition(token: string, namespace: string, name: string, request: SaveRequest, options: ApiOptions = {}): Promise<SaveOutcome> {
  return saveOutcome(await callApi(token, apiPath('namespaces', namespace, 'compositions', name), { method: 'PUT', body: request }, options));
}
