import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { importSeed, looksLikeSeed, parseImported, pathText, seedLine } from './import.ts';

const SEED = readFileSync(join(import.meta.dirname, '../../../crds/tests/fixtures/release-notes.spec.json'), 'utf8');

const composition = {
  apiVersion: 'studio.orrery.dev/v1alpha1',
  kind: 'Composition',
  metadata: { name: 'release-notes', namespace: 'team-a' },
  spec: { pattern: 'CriticLoop', nodes: [{ id: 'research', kind: 'LLMAgent' }], edges: [] },
};

describe('a seed imported through the sidecar (12.67)', () => {
  it.each<[string, string, boolean]>([
    ['the release-notes seed', SEED, true],
    ['a seed that is not valid JSON, for the server to say where', '{"spec_version": 1, "name": "x",}', true],
    ['a Composition manifest written as JSON', '{"apiVersion": "studio.orrery.dev/v1alpha1", "kind": "Composition", "spec_version": 1}', false],
    ['YAML manifests', 'apiVersion: v1\nkind: ConfigMap\n', false],
    ['a YAML seed (read as YAML, where it is refused with orrery import)', 'spec_version: 1\nname: x\n', false],
    ['a JSON list', '[{"spec_version": 1}]', false],
    ['JSON without spec_version', '{"name": "x"}', false],
  ])('tells %s', (_what, text, seed) => {
    expect(looksLikeSeed(text)).toBe(seed);
  });

  it('sends the seed as its text, with a name only when given, and reads the Composition and the verdict', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { composition, validation: { valid: false, errors: [{ loc: ['spec', 'nodes', 0, 'model'], field: 'spec.nodes[0].model', code: 'model_required', message: 'needs a model' }], warnings: [] } } });
    const result = await importSeed('t', 'team-a', SEED, null, { fetch: server.fetch });
    expect(server.requests[0]?.method).toBe('POST');
    expect(server.requests[0]?.url).toBe('/api/v1/namespaces/team-a/import');
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ seed: SEED });
    expect(result).toMatchObject({ kind: 'imported', name: 'release-notes', spec: composition.spec, verdict: { valid: false, errors: [{ code: 'model_required' }] } });

    const named = new FakeFetch().reply({ kind: 'json', status: 200, body: { composition } });
    await importSeed('t', 'team-a', SEED, 'notes-2', { fetch: named.fetch });
    expect(JSON.parse(named.requests[0]?.body ?? '')).toEqual({ seed: SEED, name: 'notes-2' });
  });

  it('lists every problem of a refused seed at its path in the seed, with its line', async () => {
    const text = ['{', '  "spec_version": 2,', '  "nodes": [', '    {"id": "a", "kind": "llm_agent"},', '    {"id": "b", "kind": "robot"}', '  ]', '}'].join('\n');
    const server = new FakeFetch().reply({
      kind: 'json',
      status: 422,
      body: {
        loc: ['body', 'seed'],
        code: 'invalid_seed',
        message: 'the seed cannot be imported: 2 problem(s)',
        errors: [
          { loc: ['body', 'seed', 'spec_version'], field: 'spec_version', code: 'unsupported_spec_version', message: 'spec_version 2 is newer than this import reads' },
          { loc: ['body', 'seed', 'nodes', 1, 'kind'], field: 'nodes[1].kind', code: 'unknown_kind', message: 'robot is no node kind' },
          'odd',
        ],
      },
    });
    const result = await importSeed('t', 'team-a', text, null, { fetch: server.fetch });
    expect(result).toEqual({
      kind: 'refused',
      message: 'the seed cannot be imported: 2 problem(s)',
      problems: [
        { path: ['spec_version'], where: 'spec_version', line: 2, code: 'unsupported_spec_version', message: 'spec_version 2 is newer than this import reads' },
        { path: ['nodes', 1, 'kind'], where: 'nodes[1].kind', line: 5, code: 'unknown_kind', message: 'robot is no node kind' },
      ],
    });
  });

  it("gives a seed that is not JSON the server's one message, at the seed", async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 422, body: { loc: ['body', 'seed'], code: 'invalid_seed', message: "the seed is not valid JSON: key 'pattern' twice at line 3" } });
    expect(await importSeed('t', 'team-a', '{"spec_version": 1}', null, { fetch: server.fetch })).toEqual({
      kind: 'refused',
      message: "the seed is not valid JSON: key 'pattern' twice at line 3",
      problems: [{ path: [], where: 'the seed', line: null, code: 'invalid_seed', message: "the seed is not valid JSON: key 'pattern' twice at line 3" }],
    });
  });

  it.each<[string, number, unknown, string]>([
    ['a body over 1 MiB', 413, { loc: ['body'], code: 'too_large', message: 'the body is over 1048576 bytes' }, 'too-large'],
    ['a refusal of the cluster', 403, { loc: [], code: 'forbidden', message: 'no' }, 'failed'],
    ['a 200 that is no Composition', 200, { composition: { spec: 'x' } }, 'failed'],
    ['a 200 that is no object', 200, ['x'], 'failed'],
  ])('says %s plainly, never throwing', async (_what, status, body, kind) => {
    const server = new FakeFetch().reply({ kind: 'json', status, body });
    expect((await importSeed('t', 'team-a', SEED, null, { fetch: server.fetch })).kind).toBe(kind);
  });

  it('reads a 200 leniently: a missing verdict or name is null', () => {
    expect(parseImported({ composition: { spec: {} } })).toEqual({ kind: 'imported', name: null, metadata: {}, spec: {}, verdict: null });
  });

  it('finds a path in the seed text, or the nearest place above it', () => {
    expect(seedLine(SEED, ['nodes', 1, 'tools', 0])).toBe(12);
    expect(seedLine(SEED, ['nodes', 2, 'colour'])).toBe(13);
    expect(seedLine('{"a": [1,', ['a'])).toBeNull();
    expect(pathText(['nodes', 1, 'kind'])).toBe('nodes[1].kind');
    expect(pathText([])).toBe('the seed');
  });
});
