// The pattern gallery (rules 12.19, 12.70): the repository's example Compositions
// (examples/compositions/*.yaml), built into the console as they are in the repository, so the
// templates are the examples by construction (templates.test.ts checks it against the files). A
// template whose pattern or a node kind the server does not run can be viewed, not loaded.

import { parseAllDocuments } from 'yaml';
import { isRecord } from '../api/http.ts';
import { refusal, type Capabilities } from './capabilities.ts';

export interface Template {
  /** The Composition's `metadata.name`. */
  readonly name: string;
  readonly file: string;
  readonly pattern: string;
  readonly description: string;
  readonly spec: Readonly<Record<string, unknown>>;
  /** The YAML as in the repository (comments included). */
  readonly source: string;
}

const sources = import.meta.glob<string>('../../../examples/compositions/*.yaml', { query: '?raw', import: 'default', eager: true });

/** The Composition a template file holds, or why it holds none. */
export function readTemplate(file: string, source: string): Template | string {
  const documents = parseAllDocuments(source);
  if (!Array.isArray(documents) || documents.length !== 1) return `${file}: one YAML document expected`;
  const doc = documents[0];
  if (doc === undefined || doc.errors.length > 0) return `${file}: ${doc?.errors[0]?.message ?? 'empty'}`;
  const value: unknown = doc.toJS();
  if (!isRecord(value) || value['kind'] !== 'Composition' || !isRecord(value['metadata']) || !isRecord(value['spec'])) return `${file}: not a Composition`;
  const name = value['metadata']['name'];
  const spec = value['spec'];
  if (typeof name !== 'string') return `${file}: no metadata.name`;
  const pattern = typeof spec['pattern'] === 'string' ? spec['pattern'] : '';
  const description = typeof spec['description'] === 'string' ? spec['description'] : '';
  return { name, file, pattern, description, spec, source };
}

/** Every template, by name. */
export const TEMPLATES: readonly Template[] = Object.entries(sources)
  .map(([path, source]) => readTemplate(path.slice(path.lastIndexOf('/') + 1), source))
  .filter((t): t is Template => typeof t !== 'string')
  .sort((a, b) => a.name.localeCompare(b.name));

/** Why a template cannot be loaded on this server (its pattern or a node kind is not run), or null. */
export function templateRefusal(template: Template, capabilities: Capabilities | null): string | null {
  if (capabilities === null) return null;
  const pattern = refusal(capabilities.patterns, template.pattern);
  if (pattern !== null) return pattern;
  const nodes = template.spec['nodes'];
  if (!Array.isArray(nodes)) return null;
  for (const node of nodes) {
    const kind = isRecord(node) ? node['kind'] : undefined;
    if (typeof kind !== 'string') continue;
    const refused = refusal(capabilities.nodeKinds, kind);
    if (refused !== null) return refused;
  }
  return null;
}
