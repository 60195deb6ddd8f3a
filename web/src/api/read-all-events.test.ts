import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { readAllEvents } from './event-pages.ts';

function event(seq: number, type = 'node.enter'): Record<string, unknown> {
  return { seq, runId: 'uid-1', ts: '2026-12-05T10:00:00.000Z', type, nodeId: 'draft' };
}

function page(from: number, to: number, complete = false): Record<string, unknown> {
  const events = [];
  for (let seq = from; seq <= to; seq += 1) events.push(event(seq, complete && seq === to ? 'run.end' : 'node.enter'));
  return { events, next: to, complete };
}

describe('reading a run’s stored events as JSON pages', () => {
  it('reads page after page, each after the last, until one ends with run.end', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 200, body: page(1, 500) },
      { kind: 'json', status: 200, body: page(501, 1000) },
      { kind: 'json', status: 200, body: page(1001, 1203, true) },
    );
    const progress: number[] = [];
    const result = await readAllEvents('alice-token', 'team-a', 'notes.1', { fetch: server.fetch }, (n) => progress.push(n));
    expect(result.ok && result.value.complete).toBe(true);
    expect(result.ok ? result.value.events.map((e) => e.seq) : []).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
    expect(progress).toEqual([500, 1000, 1203]);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v1/runs/team-a/notes.1/events?after=0&limit=500',
      '/api/v1/runs/team-a/notes.1/events?after=500&limit=500',
      '/api/v1/runs/team-a/notes.1/events?after=1000&limit=500',
    ]);
    for (const request of server.requests) {
      expect(request.headers.get('Accept')).toBe('application/json');
      expect(request.headers.get('Authorization')).toBe('Bearer alice-token');
    }
  });

  it('stops at an empty page, saying the events are not complete', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: page(1, 3) }, { kind: 'json', status: 200, body: { events: [], next: 3, complete: false } });
    const result = await readAllEvents('t', 'team-a', 'r', { fetch: server.fetch });
    expect(result).toMatchObject({ ok: true, value: { complete: false } });
    expect(result.ok ? result.value.events.length : 0).toBe(3);
    expect(server.requests).toHaveLength(2);
  });

  it('stops at the first refusal and hands it back in the sidecar’s words (401: sign in again)', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 200, body: page(1, 500) },
      { kind: 'json', status: 401, body: { loc: [], code: 'unauthenticated', message: 'the cluster does not accept this token' } },
      { kind: 'json', status: 200, body: page(501, 502, true) },
    );
    const result = await readAllEvents('t', 'team-a', 'r', { fetch: server.fetch });
    expect(result).toMatchObject({ ok: false, problem: { status: 401, code: 'unauthenticated', message: 'the cluster does not accept this token' } });
    expect(server.requests).toHaveLength(2);
  });

  it('refuses a page that is not one, and leaves out an entry that is not an event', async () => {
    const notPage = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [] } });
    expect(await readAllEvents('t', 'n', 'r', { fetch: notPage.fetch })).toMatchObject({ ok: false, problem: { code: 'reply' } });
    const badEvent = new FakeFetch().reply({ kind: 'json', status: 200, body: { events: [{ seq: 0 }, ...(page(1, 1, true)['events'] as unknown[])], next: 1, complete: true } });
    const result = await readAllEvents('t', 'n', 'r', { fetch: badEvent.fetch });
    expect(result.ok ? result.value.events.map((e) => e.seq) : null).toEqual([1]);
  });

  it('keeps each seq once when pages overlap', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: page(1, 3) }, { kind: 'json', status: 200, body: { ...page(2, 4, true), next: 4 } });
    const result = await readAllEvents('t', 'n', 'r', { fetch: server.fetch });
    expect(result.ok ? result.value.events.map((e) => e.seq) : []).toEqual([1, 2, 3, 4]);
  });
});
