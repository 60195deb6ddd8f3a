// A Composition's revisions (docs/sidecar-api.md, `GET …/compositions/{name}/revisions[/{n}]`):
// the immutable specs the operator records, one per generation (the newest 50 kept), read with
// the caller's own token; their Role needs `controllerrevisions get` and `list`. Each is
// `{revision, created, digest, spec}`, the list newest first. Read leniently: an item the
// console cannot read is left out, never thrown on, and the list is put newest first here too.

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions, type Problem } from './http.ts';
import type { Result } from './runs.ts';

export interface Revision {
  /** The revision's number: the Composition's generation it was recorded at (1, 2, …). */
  readonly revision: number;
  /** When it was recorded (RFC 3339), or empty when the reply did not say. */
  readonly created: string;
  /** SHA-256 of the spec's canonical JSON (what a run records of what it ran), or empty. */
  readonly digest: string;
  readonly spec: Readonly<Record<string, unknown>>;
}

export function parseRevision(value: unknown): Revision | null {
  if (!isRecord(value) || !isRecord(value['spec'])) return null;
  const revision = value['revision'];
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) return null;
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  return { revision, created: text(value['created']), digest: text(value['digest']), spec: value['spec'] };
}

/** Newest first, each number once (the first of a repeated one kept). */
export function newestFirst(revisions: readonly Revision[]): Revision[] {
  const seen = new Set<number>();
  return [...revisions]
    .sort((a, b) => b.revision - a.revision)
    .filter((r) => {
      if (seen.has(r.revision)) return false;
      seen.add(r.revision);
      return true;
    });
}

export function parseRevisions(body: unknown): Revision[] | null {
  if (!isRecord(body) || !Array.isArray(body['items'])) return null;
  return newestFirst(body['items'].map(parseRevision).filter((r): r is Revision => r !== null));
}

/** `GET …/compositions/{name}/revisions`: the kept revisions, newest first. */
export async function listRevisions(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<Revision[]>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'compositions', name, 'revisions'), {}, options);
  if (!reply.ok) return reply;
  const items = parseRevisions(reply.body);
  return items === null ? { ok: false, problem: shapeProblem(reply.status, 'a list of revisions') } : { ok: true, value: items };
}

/** `GET …/compositions/{name}/revisions/{n}`: one revision. */
export async function getRevision(token: string, namespace: string, name: string, revision: number, options: ApiOptions = {}): Promise<Result<Revision>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'compositions', name, 'revisions', String(revision)), {}, options);
  if (!reply.ok) return reply;
  const one = parseRevision(reply.body);
  return one === null ? { ok: false, problem: shapeProblem(reply.status, 'a revision') } : { ok: true, value: one };
}

/** The digest as a list shows it: its first 12 characters (the whole one goes in a tooltip). */
export function shortDigest(digest: string): string {
  return digest.length <= 12 ? digest : digest.slice(0, 12);
}

/** What the person reads when the revisions of `name` could not be read, and what to do. */
export function revisionsProblemText(name: string, problem: Problem): string {
  switch (problem.status) {
    case 403:
      // The sidecar's message names the rule (`controllerrevisions get` and `list`).
      return `You may not read the revisions of ${name} (403): ${problem.message}`;
    case 404:
      return `${name} or that revision is no longer there (404): ${problem.message}. Close this and open the list again.`;
    case 409:
      return `A revision of ${name} does not hold the spec the Composition recorded, so it is not shown (409): ${problem.message}`;
    default:
      return `The revisions of ${name} could not be read (${problem.status}): ${problem.message}`;
  }
}

/** Each Composition's last change: when its newest recorded revision was made. */
export interface LastChanges {
  /** By Composition name: the RFC 3339 time its revision `n` was recorded. */
  readonly times: ReadonlyMap<string, string>;
  /** The first refusal met (a 403 names the rule), or null when every time was read. */
  readonly problem: Problem | null;
}

/**
 * When each Composition last changed: the time its current revision was recorded
 * (`GET …/revisions/{n}` for each, at most `concurrency` at once). A Composition without a
 * revision yet, or whose revision cannot be read, has no time: the caller falls back on when it
 * was made. Never throws; an abort stops asking.
 */
export async function readLastChanges(
  token: string,
  namespace: string,
  compositions: readonly { readonly name: string; readonly revision: number | null }[],
  options: ApiOptions = {},
  concurrency = 4,
): Promise<LastChanges> {
  const times = new Map<string, string>();
  let problem: Problem | null = null;
  const queue = compositions.filter((c): c is { readonly name: string; readonly revision: number } => c.revision !== null);
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      if (options.signal?.aborted === true) return;
      const reply = await getRevision(token, namespace, next.name, next.revision, options);
      if (reply.ok) {
        if (reply.value.created !== '') times.set(next.name, reply.value.created);
      } else {
        problem ??= reply.problem;
        // Every read is refused alike when the Role lacks the rule: stop asking.
        if (reply.problem.status === 401 || reply.problem.status === 403) queue.length = 0;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  return { times, problem };
}
