// Every example Composition (examples/compositions/*.yaml), read from disk, goes spec → canvas
// document → spec and comes back the same, key order included.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { isRecord } from '../api/http.ts';
import { fromSpec, toSpec } from './document.ts';

const DIR = join(import.meta.dirname, '..', '..', '..', 'examples', 'compositions');
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.yaml')).sort();

function specOf(file: string): Record<string, unknown> {
  const manifest: unknown = parse(readFileSync(join(DIR, file), 'utf8'));
  if (!isRecord(manifest) || !isRecord(manifest['spec'])) throw new Error(`${file} has no spec`);
  return manifest['spec'];
}

describe('the example compositions', () => {
  it('are all nine found on disk', () => {
    expect(FILES).toHaveLength(9);
  });

  it.each(FILES)('%s comes back the same from spec to document to spec', (file) => {
    const spec = specOf(file);
    const read = fromSpec(spec);
    if (!read.ok) throw new Error(JSON.stringify(read.problems));
    const back = toSpec(read.doc);
    expect(back).toStrictEqual(spec);
    expect(JSON.stringify(back)).toBe(JSON.stringify(spec));
  });

  it.each(FILES)('%s keeps an unknown field at every level where it stood', (file) => {
    const spec = specOf(file);
    const withExtras = {
      first: { anything: [1, 'two'] },
      ...spec,
      nodes: (spec['nodes'] as Record<string, unknown>[]).map((n) => ({ xNote: 'kept', ...n, output: isRecord(n['output']) ? { ...n['output'], style: 'bold' } : n['output'], zLast: null })),
      ...(Array.isArray(spec['edges']) ? { edges: (spec['edges'] as Record<string, unknown>[]).map((e) => ({ ...e, colour: 'red' })) } : {}),
      budgets: { maxCost: 3, ...(spec['budgets'] as Record<string, unknown>) },
      later: true,
    };
    const read = fromSpec(withExtras);
    if (!read.ok) throw new Error(JSON.stringify(read.problems));
    expect(JSON.stringify(toSpec(read.doc))).toBe(JSON.stringify(withExtras));
  });
});
