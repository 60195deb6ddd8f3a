// `POST /api/v1/namespaces/{ns}/import` (docs/sidecar-api.md "Import", rule 12.67): a seed
// composition (the seeds' JSON, `spec_version: 1`) converted by the server exactly as
// `orrery import` does, and validated in the namespace; nothing is stored. The seed is sent as
// its text, so a key given twice is refused with its line, never read as the last one. 422
// `invalid_seed` lists every problem at its path in the seed (`["body", "seed", "nodes", 1,
// "kind"]`), which is found again in the text for its line; 413 is a body over 1 MiB. Every
// reply is read leniently: an odd shape is a problem, never a throw.

import { isNode, LineCounter, parseDocument } from 'yaml';
import { verdictOf, type Verdict } from '../canvas/findings.ts';
import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions, type Problem } from './http.ts';
import { findingsOf } from './runs.ts';

/** What the server's import takes at most (`MAX_IMPORT_BYTES`): the whole body. */
export const MAX_IMPORT_BODY_BYTES = 1024 * 1024;

/** Whether `text` is a seed's JSON (an object with `spec_version` and no `kind`), for the import endpoint rather than the YAML reader; JSON that does not parse but names `spec_version` goes there too, for the server to say where it breaks. */
export function looksLikeSeed(text: string): boolean {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return false;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return /"spec_version"\s*:/.test(trimmed);
  }
  return isRecord(value) && Object.hasOwn(value, 'spec_version') && !Object.hasOwn(value, 'kind');
}

/** One problem of a seed, at its place. */
export interface SeedProblem {
  /** The path in the seed's own keys (`["nodes", 1, "kind"]`); empty: the seed as a whole. */
  readonly path: readonly (string | number)[];
  /** The path as text, `nodes[1].kind`, or `the seed`. */
  readonly where: string;
  /** The line of the text it is on, when the text has that place. */
  readonly line: number | null;
  readonly code: string;
  readonly message: string;
}

export type SeedImport =
  /** Converted: the Composition (nothing stored) and the validator's verdict in the namespace, or null when the reply had none. */
  | { readonly kind: 'imported'; readonly name: string | null; readonly metadata: Readonly<Record<string, unknown>>; readonly spec: Readonly<Record<string, unknown>>; readonly verdict: Verdict | null }
  /** 422: what the server found wrong (`message`), and every problem at its place. */
  | { readonly kind: 'refused'; readonly message: string; readonly problems: readonly SeedProblem[] }
  /** 413: over the server's 1 MiB. */
  | { readonly kind: 'too-large'; readonly message: string }
  | { readonly kind: 'failed'; readonly problem: Problem };

/** `nodes[1].kind` for `["nodes", 1, "kind"]`; `the seed` for none. */
export function pathText(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'the seed';
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

/** The line of the value at `path` in the seed's text (or of the nearest object above it), or null when the text cannot be read. */
export function seedLine(text: string, path: readonly (string | number)[]): number | null {
  const lines = new LineCounter();
  let doc;
  try {
    doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, strict: false, prettyErrors: false });
  } catch {
    return null;
  }
  if (doc.errors.length > 0) return null;
  for (let depth = path.length; depth >= 0; depth--) {
    const node: unknown = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
  }
  return null;
}

/** The path within the seed of a loc under `["body", "seed"]`; null for a loc elsewhere (the body itself). */
function seedPath(loc: readonly (string | number)[]): (string | number)[] | null {
  return loc[0] === 'body' && loc[1] === 'seed' ? loc.slice(2) : null;
}

/** The problems of a refused import, each at its place in `text`. */
export function seedProblems(problem: Problem, text: string): SeedProblem[] {
  const findings = findingsOf(problem.errors);
  const at = (loc: readonly (string | number)[], code: string, message: string): SeedProblem => {
    const path = seedPath(loc) ?? [];
    return { path, where: pathText(path), line: path.length === 0 ? null : seedLine(text, path), code, message };
  };
  return findings.length === 0 ? [at(problem.loc, problem.code, problem.message)] : findings.map((f) => at(f.loc, f.code, f.message));
}

/** A 200's `{composition, validation}`, or null when it is not one. */
export function parseImported(body: unknown): Extract<SeedImport, { kind: 'imported' }> | null {
  if (!isRecord(body) || !isRecord(body['composition'])) return null;
  const composition = body['composition'];
  const spec = composition['spec'];
  if (!isRecord(spec)) return null;
  const metadata = isRecord(composition['metadata']) ? composition['metadata'] : {};
  const name = metadata['name'];
  return { kind: 'imported', name: typeof name === 'string' && name !== '' ? name : null, metadata, spec, verdict: verdictOf(body['validation']) };
}

/** Imports the seed `text` in `namespace`, named `name` instead of the seed's own when given. */
export async function importSeed(token: string, namespace: string, text: string, name: string | null, options: ApiOptions = {}): Promise<SeedImport> {
  const body = { seed: text, ...(name === null || name === '' ? {} : { name }) };
  const reply = await callApi(token, apiPath('namespaces', namespace, 'import'), { method: 'POST', body }, options);
  if (!reply.ok) {
    const problem = reply.problem;
    if (problem.status === 413) return { kind: 'too-large', message: problem.message };
    if (problem.status === 422) return { kind: 'refused', message: problem.message, problems: seedProblems(problem, text) };
    return { kind: 'failed', problem };
  }
  return parseImported(reply.body) ?? { kind: 'failed', problem: shapeProblem(reply.status, 'an imported Composition') };
}
