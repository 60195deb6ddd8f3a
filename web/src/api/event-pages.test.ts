import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { fetchEventPage } from './event-pages.ts';

const event = (seq: number, type = 'node.enter') => ({ seq, runId: 'uid-1', ts: '2026-12-05T10:00:00.000Z', type, nodeId: 'a', kind: 'LLMAgent', entry: 1, depth: 0, inputSize: 0 });

describe('a page of a run\'s stored events', () => {
  it('asks for JSON after a seq, at most 500 at a time, with the bearer token', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { events: [event(41), event(42)], next: 42, complete: false } });
    const page = await fetchEventPage('alice-token', 'team-a', 'notes.1', 40, { fetch: server.fetch, limit: 9000 });
    expect(page).toEqual({ ok: true, value: { events: [event(41), event(42)], next: 42, complete: false } });
    const request = server.requests[0];
    expect(request?.url).toBe('/api/v1/runs/team-a/notes.1/events?after=40&limit=500');
    expect(request?.headers.get('Accept')).toBe('application/json');
    expect(request?.headers.get('Authorization')).toBe('Bearer alice-token');
  });

  it('says the page is complete when it ends with run.end, and leaves out an entry that is not an event', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { events: [{ seq: 'x' }, event(3, 'run.end')], next: 3, complete: true } });
    const page = await fetchEventPage('t', 'team-a', 'r', 2, { fetch: server.fetch });
    expect(page.ok && page.value.complete).toBe(true);
    expect(page.ok && page.value.events.map((e) => e.seq)).toEqual([3]);
  });

  it('gives the sidecar\'s problem for a refusal, and a shape problem for a body that is not a page', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 404, body: { loc: [], code: 'not_found', message: 'no run team-a/r that is yours' } },
      { kind: 'json', status: 200, body: { items: [] } },
    );
    const refused = await fetchEventPage('t', 'team-a', 'r', 0, { fetch: server.fetch });
    expect(!refused.ok && refused.problem).toMatchObject({ status: 404, message: 'no run team-a/r that is yours' });
    const odd = await fetchEventPage('t', 'team-a', 'r', 0, { fetch: server.fetch });
    expect(!odd.ok && odd.problem.code).toBe('reply');
  });
});
