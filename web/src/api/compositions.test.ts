import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { listCompositions, saveComposition } from './compositions.ts';

const object = (name: string, created: string, rv = '7', revision: number | null = 2) => ({
  metadata: { name, namespace: 'team-a', resourceVersion: rv, creationTimestamp: created },
  spec: { pattern: 'Pipeline', description: `${name} notes`, nodes: [] },
  ...(revision === null ? {} : { status: { revision } }),
});
const spec = { pattern: 'Pipeline', nodes: [] };

describe('compositions as the canvas opens and saves them', () => {
  it('lists them newest first (12.56)', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [object('old', '2026-12-01T00:00:00Z'), object('new', '2026-12-05T00:00:00Z', '9', null), { metadata: {} }] } });
    const result = await listCompositions('t', 'team-a', { fetch: server.fetch });
    expect(result.ok ? result.value.map((c) => [c.name, c.revision, c.resourceVersion]) : null).toEqual([
      ['new', null, '9'],
      ['old', 2, '7'],
    ]);
  });

  it('saves with PUT, the version read sent so a change meanwhile is a conflict (12.53, 12.54)', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: object('notes', '2026-12-05T00:00:00Z', '8', 3) });
    const outcome = await saveComposition('t', 'team-a', 'notes', { spec, resourceVersion: '7' }, { fetch: server.fetch });
    expect(server.requests[0]?.method).toBe('PUT');
    expect(server.requests[0]?.url).toBe('/api/v1/namespaces/team-a/compositions/notes');
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ spec, resourceVersion: '7' });
    expect(outcome).toMatchObject({ kind: 'saved', created: false, composition: { name: 'notes', resourceVersion: '8', revision: 3 } });
  });

  it.each([
    [{ code: 'conflict', message: 'changed since', current: object('notes', '', '9') }, { kind: 'conflict', current: { resourceVersion: '9' } }],
    [{ code: 'exists', message: 'taken', current: object('notes', '') }, { kind: 'exists', current: { name: 'notes' } }],
    [{ code: 'field_conflict', message: 'owned', conflicts: [{ manager: 'kubectl', field: '.spec.nodes[id="a"].instruction', message: 'm' }] }, { kind: 'field_conflict', conflicts: [{ manager: 'kubectl', field: '.spec.nodes[id="a"].instruction' }] }],
  ])('tells a 409 %j as what happened', async (body, expected) => {
    const server = new FakeFetch().reply({ kind: 'json', status: 409, body: { loc: [], ...body } });
    expect(await saveComposition('t', 'team-a', 'notes', { spec }, { fetch: server.fetch })).toMatchObject(expected);
  });

  it('gives a 422 its findings, and anything else as refused in the sidecar’s words', async () => {
    const invalid = new FakeFetch().reply({ kind: 'json', status: 422, body: { loc: ['body', 'spec'], code: 'invalid_composition', message: 'invalid', errors: [{ loc: ['spec', 'pattern'], field: 'spec.pattern', code: 'missing', message: 'choose one' }] } });
    expect(await saveComposition('t', 'team-a', 'x', { spec }, { fetch: invalid.fetch })).toMatchObject({ kind: 'invalid', findings: [{ code: 'missing' }] });
    const forbidden = new FakeFetch().reply({ kind: 'json', status: 403, body: { loc: [], code: 'forbidden', message: 'cannot patch compositions' } });
    expect(await saveComposition('t', 'team-a', 'x', { spec }, { fetch: forbidden.fetch })).toMatchObject({ kind: 'refused', problem: { status: 403, message: 'cannot patch compositions' } });
  });
});
