import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CLOSE, FakeFetch, HANG } from '../testing/fake-fetch.ts';
import { isResumeId, parseManagers, parseWatchFrame, watchComposition, type CompositionChange } from './composition-watch.ts';
import type { SseEnd, SseStatus } from './sse.ts';

const KUBECTL = { manager: 'kubectl-client-side-apply', operation: 'Update', time: '2026-12-02T10:15:00Z' };

function object(version: string, spec: Record<string, unknown> = { pattern: 'Pipeline', nodes: [] }, name = 'notes', extra: Record<string, unknown> = {}) {
  return { metadata: { name, namespace: 'team-a', resourceVersion: version, generation: 4, ...extra }, spec, status: { revision: 4 } };
}

/** An SSE frame as the sidecar writes it. */
function sse(event: string, id: string | null, data: unknown): string {
  return `event: ${event}\n${id === null ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

describe('a frame of a Composition’s watch', () => {
  it.each(['ADDED', 'MODIFIED'] as const)('%s is the object as it is now, with its managers', (event) => {
    const read = parseWatchFrame({ event, id: '48213', data: JSON.stringify({ object: object('48213'), managers: [KUBECTL] }) }, 'notes');
    expect(read).toEqual({
      change: {
        kind: 'changed',
        via: event,
        resourceVersion: '48213',
        managers: [KUBECTL],
        composition: { namespace: 'team-a', name: 'notes', resourceVersion: '48213', revision: 4, generation: 4, created: '', description: '', spec: { pattern: 'Pipeline', nodes: [] } },
      },
    });
  });

  it('DELETED says it is gone, with who managed it last and when it was deleted if the object says', () => {
    const data = { object: object('9', undefined, 'notes', { deletionTimestamp: '2026-12-02T10:20:00Z' }), managers: [KUBECTL] };
    expect(parseWatchFrame({ event: 'DELETED', id: '9', data: JSON.stringify(data) }, 'notes')).toEqual({
      change: { kind: 'deleted', via: 'DELETED', resourceVersion: '9', managers: [KUBECTL], deletedAt: '2026-12-02T10:20:00Z' },
    });
    // a DELETED object without its spec is still a deletion
    const bare = parseWatchFrame({ event: 'DELETED', id: '10', data: JSON.stringify({ object: { metadata: { name: 'notes' } } }) }, 'notes');
    expect(bare).toEqual({ change: { kind: 'deleted', via: 'DELETED', resourceVersion: '10', managers: [], deletedAt: null } });
  });

  it('RESET is searched for the name followed: found, it is the object as it is now', () => {
    const data = { items: [{ object: object('70', undefined, 'other'), managers: [] }, { object: object('66'), managers: [KUBECTL] }], resourceVersion: '71' };
    const read = parseWatchFrame({ event: 'RESET', id: '71', data: JSON.stringify(data) }, 'notes');
    expect(read).toMatchObject({ change: { kind: 'changed', via: 'RESET', resourceVersion: '66', managers: [KUBECTL], composition: { name: 'notes' } } });
  });

  it('RESET without the name followed says it is gone', () => {
    const data = { items: [{ object: object('70', undefined, 'other') }], resourceVersion: '71' };
    expect(parseWatchFrame({ event: 'RESET', id: '71', data: JSON.stringify(data) }, 'notes')).toEqual({
      change: { kind: 'deleted', via: 'RESET', resourceVersion: '71', managers: [], deletedAt: null },
    });
  });

  it.each<[string, { event?: string; id?: string; data: string }, string]>([
    ['an unknown event', { event: 'BOOKMARK', data: '{}' }, 'an unknown event "BOOKMARK"'],
    ['a frame with no event', { data: '{}' }, 'an unknown event "message"'],
    ['data that is not JSON', { event: 'MODIFIED', data: 'not json' }, 'not a JSON object'],
    ['data that is a list', { event: 'MODIFIED', data: '[1]' }, 'not a JSON object'],
    ['an object without a name', { event: 'MODIFIED', data: JSON.stringify({ object: { metadata: {} } }) }, 'an object without a name'],
    ['another Composition', { event: 'MODIFIED', data: JSON.stringify({ object: object('1', undefined, 'other') }) }, 'about other, not notes'],
    ['an object without a spec', { event: 'ADDED', data: JSON.stringify({ object: { metadata: { name: 'notes' } } }) }, 'an object that is not a Composition'],
    ['a RESET without items', { event: 'RESET', data: JSON.stringify({ items: 'x' }) }, 'a RESET without items'],
    ['a RESET whose object is odd', { event: 'RESET', data: JSON.stringify({ items: [{ object: { metadata: { name: 'notes' }, spec: 3 } }] }) }, 'a RESET whose notes is not a Composition'],
  ])('skips %s, saying why', (_what, frame, why) => {
    expect(parseWatchFrame(frame, 'notes')).toEqual({ skip: why });
  });

  it('takes the version from the id when the object has none', () => {
    const read = parseWatchFrame({ event: 'MODIFIED', id: '77', data: JSON.stringify({ object: { metadata: { name: 'notes' }, spec: {} } }) }, 'notes');
    expect(read).toMatchObject({ change: { resourceVersion: '77', composition: { resourceVersion: null } } });
  });

  it('reads managers leniently: odd entries dropped, a missing time is null', () => {
    expect(parseManagers([KUBECTL, 'x', { manager: '' }, { manager: 'flux', time: null }, { manager: 'argo', operation: 3, time: '' }])).toEqual([
      KUBECTL,
      { manager: 'flux', operation: '', time: null },
      { manager: 'argo', operation: '', time: null },
    ]);
    expect(parseManagers({ manager: 'kubectl' })).toEqual([]);
  });

  it.each([
    ['48213', true],
    ['abcXYZ09', true],
    ['', false],
    ['12 3', false],
    ['1\n2', false],
    ['x'.repeat(65), false],
    [undefined, false],
  ])('takes %j as a resume id: %s', (id, ok) => {
    expect(isResumeId(id)).toBe(ok);
  });
});

describe('the watch of one Composition', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  async function settle(): Promise<void> {
    for (let i = 0; i < 20; i += 1) await vi.advanceTimersByTimeAsync(0);
  }

  function open(server: FakeFetch) {
    const changes: CompositionChange[] = [];
    const statuses: SseStatus[] = [];
    const skipped: string[] = [];
    let end: SseEnd | undefined;
    const watch = watchComposition({
      namespace: 'team-a',
      name: 'notes',
      token: 'alice-token',
      onChange: (c) => changes.push(c),
      onStatus: (s) => statuses.push(s),
      onSkipped: (why) => skipped.push(why),
      fetch: server.fetch,
    });
    void watch.done.then((e) => {
      end = e;
    });
    return { watch, changes, statuses, skipped, end: () => end };
  }

  it('asks for the one Composition as an event stream, and resumes after the last frame read with Last-Event-ID', async () => {
    const server = new FakeFetch().reply(
      { kind: 'stream', steps: [sse('ADDED', '10', { object: object('10'), managers: [] }), sse('MODIFIED', '11', { object: object('11'), managers: [KUBECTL] }), CLOSE] },
      { kind: 'stream', steps: [sse('BOOKMARK', '12', {}), sse('DELETED', '13', { object: object('13'), managers: [KUBECTL] }), HANG] },
    );
    const w = open(server);
    await settle();
    const first = server.requests[0];
    expect(first?.url).toBe('/api/v1/namespaces/team-a/compositions/notes');
    expect(first?.headers.get('Accept')).toBe('text/event-stream');
    expect(first?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(first?.headers.has('Last-Event-ID')).toBe(false);
    expect(w.statuses.at(-1)).toMatchObject({ state: 'waiting', attempt: 1, delayMs: 500 });
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    expect(server.requests[1]?.headers.get('Last-Event-ID')).toBe('11');
    expect(w.changes.map((c) => [c.kind, c.via, c.resourceVersion])).toEqual([
      ['changed', 'ADDED', '10'],
      ['changed', 'MODIFIED', '11'],
      ['deleted', 'DELETED', '13'],
    ]);
    expect(w.skipped).toEqual(['an unknown event "BOOKMARK"']);
    w.watch.close();
    expect(await w.watch.done).toEqual({ reason: 'closed' });
    expect(server.requests[1]?.signal?.aborted).toBe(true);
  });

  it('keeps trying while connections carry only keep-alives, and gives up after 0.5, 1, 2, 4 and 8 s of nothing', async () => {
    const server = new FakeFetch().reply({ kind: 'stream', steps: [': keep-alive\n\n', CLOSE] }, { kind: 'stream', steps: [': keep-alive\n\n', CLOSE] });
    server.fallback = { kind: 'network-error', message: 'Failed to fetch' };
    const w = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    await settle();
    // the second connection's keep-alive starts the count again
    expect(server.requests.map((r) => r.at)).toEqual([0, 500, 1000, 2000, 4000, 8000, 16000]);
    expect(w.end()).toMatchObject({ reason: 'gave-up', problem: { code: 'network' } });
  });

  it('stops on 403 (the Role lacks watch), saying so', async () => {
    const message = 'compositions.studio.orrery.dev "notes" is forbidden: User "alice" cannot watch resource "compositions"';
    const server = new FakeFetch().reply({ kind: 'json', status: 403, body: { loc: [], code: 'forbidden', message } });
    const w = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
    expect(w.end()).toMatchObject({ reason: 'forbidden', problem: { status: 403, message } });
  });

  it('is not dropped when its owner’s handler throws', async () => {
    const server = new FakeFetch().reply({ kind: 'stream', steps: [sse('ADDED', '10', { object: object('10') }), sse('MODIFIED', '11', { object: object('11') }), HANG] });
    const seen: string[] = [];
    const errors: unknown[] = [];
    const onError = (error: Error): void => {
      errors.push(error);
    };
    process.on('uncaughtException', onError);
    const watch = watchComposition({
      namespace: 'team-a',
      name: 'notes',
      token: 't',
      fetch: server.fetch,
      onChange: (c) => {
        seen.push(c.resourceVersion ?? '');
        if (c.resourceVersion === '10') throw new Error('a bug in the view');
      },
    });
    await settle();
    process.off('uncaughtException', onError);
    expect(seen).toEqual(['10', '11']);
    expect(errors).toEqual([new Error('a bug in the view')]);
    expect(server.requests).toHaveLength(1);
    watch.close();
  });
});
