// Export and import as Kubernetes manifests, YAML (rules 12.65, 12.67).
//
// Export: the Composition (`studio.orrery.dev/v1alpha1`) with only what a person applies: its
// name, namespace, labels and annotations (the server's fields, its status and kubectl's
// last-applied copy left out), then the RegistryEntries its nodes name (models and the entries
// of `mcp:`/`a2a:` tools), stripped the same way, one YAML document each. Strings YAML 1.1 would
// read as something else (`yes`, `on`, `0755`) are quoted, so kubectl reads what was written.
//
// Import: a multi-document YAML text. Only Compositions load; every other kind is listed as
// refused (a RegistryEntry with the `kubectl apply -f` to use instead: the registry is edited as
// resources, not on the canvas, rule 12.52), a seed spec with the `orrery import` that converts
// it (a seed's JSON alone goes to the sidecar's import instead: api/import.ts). A YAML error, a
// document that is not an object, a Composition the canvas cannot hold or
// that lists an edge twice (12.67) is a problem at its document and line, and with any problem
// nothing loads. Documents are read as kubectl reads them (YAML 1.1, dates left as text). The
// `yaml` package parses and prints without eval, as the console's CSP requires.

import { isNode, LineCounter, parseAllDocuments, stringify, type Document, type DocumentOptions, type ParseOptions, type SchemaOptions, type Tags } from 'yaml';
import { isRecord, isStringArray } from '../api/http.ts';
import { fromSpec, type CanvasDocument, type SpecObject } from './document.ts';
import { repeatedEdges } from './edit.ts';

export const API_VERSION = 'studio.orrery.dev/v1alpha1';

/** The annotation `kubectl apply` keeps its copy of the object in: never exported. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type Rec = Readonly<Record<string, unknown>>;

function stringMap(value: unknown, without: readonly string[] = []): Record<string, string> | null {
  if (!isRecord(value)) return null;
  const entries = Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string' && !without.includes(e[0]));
  return entries.length === 0 ? null : Object.fromEntries(entries);
}

/** The metadata a manifest keeps: name, namespace, labels and annotations (without kubectl's last-applied copy). */
export function manifestMetadata(metadata: unknown): Record<string, unknown> {
  const meta = isRecord(metadata) ? metadata : {};
  const labels = stringMap(meta['labels']);
  const annotations = stringMap(meta['annotations'], [LAST_APPLIED]);
  return {
    ...(typeof meta['name'] === 'string' ? { name: meta['name'] } : {}),
    ...(typeof meta['namespace'] === 'string' ? { namespace: meta['namespace'] } : {}),
    ...(labels === null ? {} : { labels }),
    ...(annotations === null ? {} : { annotations }),
  };
}

/** An object of `kind` as a manifest: apiVersion, kind, the kept metadata, the spec; never a status. */
export function manifestOf(kind: string, object: Rec): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind, metadata: manifestMetadata(object['metadata']), spec: object['spec'] };
}

/** The name of a RegistryEntry, as an object (`metadata.name`) or as the registry call lists it (`name`). */
function entryName(entry: Rec): string | null {
  const meta = entry['metadata'];
  const name = isRecord(meta) ? meta['name'] : entry['name'];
  return typeof name === 'string' ? name : null;
}

/** The RegistryEntries a spec names, sorted: each node's `model`, and the entry of each `mcp:<entry>.<tool>` or `a2a:<entry>.<skill>`. */
export function entriesUsed(spec: unknown): string[] {
  const names = new Set<string>();
  const nodes = isRecord(spec) && Array.isArray(spec['nodes']) ? spec['nodes'] : [];
  for (const node of nodes) {
    if (!isRecord(node)) continue;
    if (typeof node['model'] === 'string' && node['model'] !== '') names.add(node['model']);
    for (const tool of isStringArray(node['tools']) ? node['tools'] : []) {
      const entry = /^(?:mcp|a2a):([^.]+)\./.exec(tool)?.[1];
      if (entry !== undefined) names.add(entry);
    }
  }
  return [...names].sort();
}

export interface Exported {
  readonly yaml: string;
  /** The RegistryEntries written after the Composition. */
  readonly entries: readonly string[];
  /** Entries the spec names that were not given (not in the registry, or not readable). */
  readonly missing: readonly string[];
}

/** One YAML document, with strings YAML 1.1 would misread quoted. */
function yamlOf(value: unknown): string {
  return stringify(value, { version: '1.1' });
}

/**
 * The Composition (`metadata` and `spec`, as the API returns it or as the canvas holds it) and the
 * RegistryEntries it uses, from `registry` (objects, or the items of `GET …/registry`), as one
 * multi-document YAML text.
 */
export function exportYaml(composition: Rec, registry: readonly unknown[]): Exported {
  const used = entriesUsed(composition['spec']);
  const byName = new Map<string, Rec>();
  for (const entry of registry) {
    if (!isRecord(entry)) continue;
    const name = entryName(entry);
    if (name !== null && !byName.has(name)) byName.set(name, entry);
  }
  const documents = [manifestOf('Composition', composition)];
  const entries: string[] = [];
  for (const name of used) {
    const entry = byName.get(name);
    if (entry === undefined) continue;
    entries.push(name);
    // An item of `GET …/registry` has its name beside its spec, and no metadata.
    documents.push(isRecord(entry['metadata']) ? manifestOf('RegistryEntry', entry) : manifestOf('RegistryEntry', { metadata: { name }, spec: entry['spec'] }));
  }
  return { yaml: documents.map(yamlOf).join('---\n'), entries, missing: used.filter((n) => !byName.has(n)) };
}

export interface LoadedComposition {
  /** 1 for the first document of the text. */
  readonly document: number;
  readonly line: number;
  /** name, namespace, labels and annotations, as `manifestMetadata` keeps them. */
  readonly metadata: Record<string, unknown>;
  readonly spec: SpecObject;
  readonly doc: CanvasDocument;
}

export interface RefusedDocument {
  readonly document: number;
  readonly line: number;
  /** The document's kind (`RegistryEntry`, `Secret`…), or `seed spec`. */
  readonly kind: string;
  readonly name: string | null;
  readonly reason: string;
  /** The command to use instead, when there is one. */
  readonly command: string | null;
}

export interface ImportProblem {
  readonly document: number;
  readonly line: number;
  readonly message: string;
}

export interface ImportResult {
  /** The Compositions, empty whenever there is a problem. */
  readonly loaded: readonly LoadedComposition[];
  readonly refused: readonly RefusedDocument[];
  readonly problems: readonly ImportProblem[];
}

export interface ImportOptions {
  /** The file the text came from, for the commands to use instead (else they read stdin, `-f -`). */
  readonly file?: string;
  /** The namespace the canvas saves to, for a command on a document that names none. */
  readonly namespace?: string;
}

/** Where `value` is not JSON data (a `!!binary`, `.inf`, a set), or null. */
function notJson(value: unknown, path: (string | number)[] = []): (string | number)[] | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const at = notJson(item, [...path, i]);
      if (at !== null) return at;
    }
    return null;
  }
  if (isRecord(value) && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [key, item] of Object.entries(value)) {
      const at = notJson(item, [...path, key]);
      if (at !== null) return at;
    }
    return null;
  }
  return path;
}

/** YAML 1.1 as kubectl reads it, but with dates left as text (they are text in a spec). */
const READ_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: (tags: Tags): Tags => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
};

function quote(word: string): string {
  return /^[\w./:@-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** The Compositions of a multi-document YAML text, what else it holds, and what is wrong in it. */
export function importYaml(text: string, options: ImportOptions = {}): ImportResult {
  const lines = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: lines, ...READ_OPTIONS });
  const documents: Document.Parsed[] = Array.isArray(parsed) ? parsed : [];
  const loaded: LoadedComposition[] = [];
  const refused: RefusedDocument[] = [];
  const problems: ImportProblem[] = [];

  documents.forEach((yamlDoc, i) => {
    const document = i + 1;
    const lineOf = (offset: number | undefined): number => lines.linePos(offset ?? yamlDoc.range[0]).line;
    const start = lineOf(yamlDoc.contents?.range[0]);
    /** The line of the value at `path`, or of the nearest value above it that is there. */
    const lineAt = (path: readonly (string | number)[]): number => {
      for (let depth = path.length; depth > 0; depth--) {
        const node: unknown = yamlDoc.getIn(path.slice(0, depth), true);
        if (isNode(node) && node.range) return lineOf(node.range[0]);
      }
      return start;
    };
    const problem = (line: number, message: string): void => {
      problems.push({ document, line, message: `document ${document}, line ${line}: ${message}` });
    };

    if (yamlDoc.errors.length > 0) {
      // The parser's message names the place again and quotes the text: the first sentence is enough.
      for (const error of yamlDoc.errors) problem(error.linePos?.[0].line ?? start, (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, ''));
      return;
    }
    let value: unknown;
    try {
      value = yamlDoc.toJS({ maxAliasCount: 100 });
    } catch (error) {
      problem(start, error instanceof Error ? error.message : String(error));
      return;
    }
    if (value === null || value === undefined) return; // an empty document, as kubectl skips it
    if (!isRecord(value)) {
      problem(start, `${Array.isArray(value) ? 'a list' : `the ${typeof value} ${JSON.stringify(value)}`}, not a manifest (an object with apiVersion and kind)`);
      return;
    }
    const odd = notJson(value);
    if (odd !== null) {
      problem(lineAt(odd), `${odd.join('.') || 'the document'} is not JSON data (no binary, set, infinity or NaN in a manifest)`);
      return;
    }
    const kind = value['kind'];
    const metadata = manifestMetadata(value['metadata']);
    const name = typeof metadata['name'] === 'string' ? metadata['name'] : null;
    if (typeof kind !== 'string') {
      if (Object.hasOwn(value, 'spec_version')) {
        const file = options.file ?? 'SPEC_JSON';
        refused.push({ document, line: start, kind: 'seed spec', name, reason: 'a seed spec among other documents: import its JSON here on its own (the server converts it), or convert it to a Composition manifest first', command: `orrery import ${quote(file)} > composition.yaml` });
      } else {
        problem(start, 'no kind: not a Kubernetes manifest');
      }
      return;
    }
    if (kind === 'RegistryEntry') {
      const namespace = typeof metadata['namespace'] === 'string' || options.namespace === undefined ? '' : ` -n ${quote(options.namespace)}`;
      refused.push({
        document,
        line: start,
        kind,
        name,
        reason: 'RegistryEntries are resources of their own, not part of the canvas: apply them with kubectl',
        command: `kubectl apply${namespace} -f ${options.file === undefined ? '-' : quote(options.file)}`,
      });
      return;
    }
    if (kind !== 'Composition') {
      refused.push({ document, line: start, kind, name, reason: `a ${kind}: the canvas loads only Compositions`, command: null });
      return;
    }
    if (value['apiVersion'] !== API_VERSION) {
      problem(lineAt(['apiVersion']), `a Composition of apiVersion ${JSON.stringify(value['apiVersion'] ?? null)}: this console reads ${API_VERSION}`);
      return;
    }
    const spec = value['spec'];
    if (!isRecord(spec)) {
      problem(lineAt(['spec']), 'a Composition with no spec object');
      return;
    }
    const read = fromSpec(spec);
    if (!read.ok) {
      for (const p of read.problems) problem(lineAt(['spec', ...p.path]), p.message);
      return;
    }
    const repeated = repeatedEdges(read.doc);
    for (const edge of repeated) {
      const j = read.doc.edges.indexOf(edge);
      problem(lineAt(['spec', 'edges', j]), `edge ${j} (${edge.from} → ${edge.to}${edge.when === null ? '' : ` when ${edge.when}`}) is listed twice`);
    }
    if (repeated.length > 0) return;
    loaded.push({ document, line: start, metadata, spec, doc: read.doc });
  });

  return { loaded: problems.length > 0 ? [] : loaded, refused, problems };
}
