import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { validateSpec, lastVerdict } from './validation.ts';

const finding = (loc: (string | number)[], code: string) => ({ loc, field: loc.join('.'), code, message: `${code} here` });

describe('validation against the server (12.26)', () => {
  it('sends the spec to the namespace’s validate endpoint and reads errors and warnings apart', async () => {
    const server = new FakeFetch().reply({
      kind: 'json',
      status: 200,
      body: { valid: false, errors: [finding(['spec', 'nodes', 1, 'model'], 'model_not_allowed')], warnings: [finding(['spec', 'edges', 0], 'unused_label')] },
    });
    const spec = { pattern: 'Pipeline', nodes: [] };
    const result = await validateSpec('alice-token', 'team-a', spec, { fetch: server.fetch });
    expect(server.requests[0]?.url).toBe('/api/v1/namespaces/team-a/validate');
    expect(server.requests[0]?.method).toBe('POST');
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ spec });
    expect(result).toEqual({
      ok: true,
      value: { valid: false, errors: [finding(['spec', 'nodes', 1, 'model'], 'model_not_allowed')], warnings: [finding(['spec', 'edges', 0], 'unused_label')] },
    });
  });

  it('passes a refusal on as the sidecar said it, and a reply that is no verdict as such', async () => {
    const refused = new FakeFetch().reply({ kind: 'json', status: 403, body: { loc: [], code: 'forbidden', message: 'cannot list registryentries' } });
    const r1 = await validateSpec('t', 'team-a', {}, { fetch: refused.fetch });
    expect(r1.ok ? null : [r1.problem.status, r1.problem.message]).toEqual([403, 'cannot list registryentries']);
    const odd = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [] } });
    const r2 = await validateSpec('t', 'team-a', {}, { fetch: odd.fetch });
    expect(r2.ok).toBe(false);
  });

  it('keeps showing the last verdict while a newer spec is checked or its check failed', () => {
    const checked = { subject: 'spec 1', verdict: { valid: true, errors: [], warnings: [] } };
    expect(lastVerdict({ state: 'idle' })).toBeNull();
    expect(lastVerdict({ state: 'checking', last: checked })).toBe(checked);
    expect(lastVerdict({ state: 'done', checked })).toBe(checked);
    expect(lastVerdict({ state: 'failed', last: null, problem: { status: 0, code: 'network', message: 'down', loc: [], retryAfterSeconds: null } })).toBeNull();
  });
});
