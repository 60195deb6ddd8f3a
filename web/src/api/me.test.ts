import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { fetchMe } from './me.ts';

describe('who the sidecar says the token is', () => {
  it('sends the token as Authorization only and reads the person', async () => {
    const server = new FakeFetch().reply({
      kind: 'json',
      status: 200,
      body: { username: 'alice', groups: ['team-a', 'system:authenticated'], person: true, namespaces: ['team-a'] },
    });
    const result = await fetchMe('alice-token', { fetch: server.fetch });
    expect(result).toEqual({
      ok: true,
      me: { username: 'alice', groups: ['team-a', 'system:authenticated'], person: true, namespaces: ['team-a'] },
    });
    const request = server.requests[0];
    expect(request?.url).toBe('/api/v1/me');
    expect(request?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(request?.url).not.toContain('alice-token');
  });

  it('tells a service account from a person', async () => {
    const server = new FakeFetch().reply({
      kind: 'json',
      status: 200,
      body: { username: 'system:serviceaccount:team-a:ci', groups: [], person: false, namespaces: [] },
    });
    const result = await fetchMe('sa-token', { fetch: server.fetch, base: 'https://orrery.example' });
    expect(server.requests[0]?.url).toBe('https://orrery.example/api/v1/me');
    expect(result.ok && result.me.person).toBe(false);
  });

  it('gives the sidecar\'s reason for a 401', async () => {
    const server = new FakeFetch().reply({
      kind: 'json',
      status: 401,
      body: { loc: [], code: 'unauthenticated', message: 'the cluster does not accept this token: it has expired' },
    });
    expect(await fetchMe('old', { fetch: server.fetch })).toEqual({
      ok: false,
      problem: { status: 401, code: 'unauthenticated', message: 'the cluster does not accept this token: it has expired', loc: [], retryAfterSeconds: null },
    });
  });

  it('says what happened when no reply came, or one that is not an identity', async () => {
    const unreachable = await fetchMe('t', { fetch: new FakeFetch().reply({ kind: 'network-error', message: 'Failed to fetch' }).fetch });
    expect(unreachable).toMatchObject({ ok: false, problem: { status: 0, code: 'network' } });
    if (!unreachable.ok) expect(unreachable.problem.message).toContain('Failed to fetch');

    const odd = await fetchMe('t', { fetch: new FakeFetch().reply({ kind: 'json', status: 200, body: { user: 'x' } }).fetch });
    expect(odd).toMatchObject({ ok: false, problem: { code: 'reply' } });

    const proxy = await fetchMe('t', {
      fetch: () => Promise.resolve(new Response('<html>Bad gateway</html>', { status: 502, statusText: 'Bad Gateway' })),
    });
    expect(proxy).toMatchObject({ ok: false, problem: { status: 502, code: 'reply', message: 'the sidecar answered 502 Bad Gateway' } });
  });
});
