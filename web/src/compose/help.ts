// Help for the inspector's fields, as `kubectl explain` gives it: the description the published
// JSON Schema of `Composition.spec` has for the field (`GET /api/v1/schema`, `composition`),
// following `$ref`s into `$defs` and lists into their items.

import { isRecord } from '../api/http.ts';

type Schema = Readonly<Record<string, unknown>>;

function resolve(root: Schema, node: unknown, depth = 0): Schema | null {
  if (!isRecord(node) || depth > 8) return null;
  const ref = node['$ref'];
  if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
    const defs = root['$defs'];
    const target = isRecord(defs) ? defs[ref.slice('#/$defs/'.length)] : undefined;
    const resolved = resolve(root, target, depth + 1);
    // A description beside the $ref is the field's own; the definition's is the type's.
    return resolved === null ? null : { ...resolved, ...(typeof node['description'] === 'string' ? { description: node['description'] } : {}) };
  }
  // `allOf: [X]`, and `anyOf: [X, {type: null}]` (an optional field): X.
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);
  const all = list(node['allOf']);
  const any = list(node['anyOf']).filter((s) => !(isRecord(s) && s['type'] === 'null'));
  const single: unknown = all.length === 1 ? all[0] : any.length === 1 ? any[0] : undefined;
  if (single !== undefined) {
    const inner = resolve(root, single, depth + 1);
    return inner === null ? null : { ...inner, ...(typeof node['description'] === 'string' ? { description: node['description'] } : {}) };
  }
  return node;
}

/** The schema of the field at `path` (`['nodes', 'model']`: a list's items are stepped into), or null. */
export function fieldSchema(root: Schema, path: readonly string[]): Schema | null {
  let at = resolve(root, root);
  for (const key of path) {
    if (at === null) return null;
    if (at['type'] === 'array' || (Array.isArray(at['type']) && at['type'].includes('array'))) at = resolve(root, at['items']);
    if (at === null) return null;
    const properties = at['properties'];
    at = isRecord(properties) ? resolve(root, properties[key]) : null;
  }
  return at;
}

/** The field's description, or null. */
export function fieldHelp(root: Schema | null, path: readonly string[]): string | null {
  if (root === null) return null;
  const description = fieldSchema(root, path)?.['description'];
  return typeof description === 'string' && description.trim() !== '' ? description.trim().replace(/\s*\n\s*/g, ' ') : null;
}
