import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { byteChunks, CLOSE, FakeFetch, frame, HANG } from '../testing/fake-fetch.ts';
import { BACKOFF_MS, streamRunEvents, type RunEventsOptions, type StreamEnd, type StreamStatus } from './events.ts';
import type { TraceEvent } from './trace.ts';

const RUN_END = { outcome: 'Succeeded', totals: { tokens: 10 }, dropped: 0, outputSize: 0 };

interface Opened {
  readonly server: FakeFetch;
  readonly events: TraceEvent[];
  readonly statuses: StreamStatus[];
  readonly stream: ReturnType<typeof streamRunEvents>;
  /** Whether `done` has resolved, and with what. */
  readonly end: () => StreamEnd | undefined;
}

function open(server: FakeFetch, options: Partial<RunEventsOptions> = {}): Opened {
  const events: TraceEvent[] = [];
  const statuses: StreamStatus[] = [];
  let end: StreamEnd | undefined;
  const stream = streamRunEvents({
    namespace: 'team-a',
    name: 'release notes/1',
    token: 'alice-token',
    onEvent: (e) => events.push(e),
    onStatus: (s) => statuses.push(s),
    fetch: server.fetch,
    ...options,
  });
  void stream.done.then((e) => {
    end = e;
  });
  return { server, events, statuses, stream, end: () => end };
}

/** Lets the reader run: every pending read, parse and promise settles (no time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await vi.advanceTimersByTimeAsync(0);
}

const seqs = (events: readonly TraceEvent[]): number[] => events.map((e) => e.seq);

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the live stream of a run', () => {
  it('asks for an event stream with the bearer token and delivers frames split anywhere, across lines and characters', async () => {
    const body =
      frame(1, 'run.start', { composition: 'critic-loop', input: 'Café 日本 🚀' }) +
      ': keep-alive\n\n' +
      frame(2, 'node.enter', { nodeId: 'research' }) +
      frame(3, 'run.end', RUN_END);
    const server = new FakeFetch().reply({ kind: 'stream', steps: [...byteChunks(body, 7), HANG] });
    const s = open(server);
    await settle();

    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request?.url).toBe('/api/v1/runs/team-a/release%20notes%2F1/events');
    expect(request?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(request?.headers.get('Accept')).toBe('text/event-stream');
    expect(request?.headers.has('Last-Event-ID')).toBe(false);
    expect(seqs(s.events)).toEqual([1, 2, 3]);
    expect(s.events[0]).toMatchObject({ type: 'run.start', input: 'Café 日本 🚀' });
    expect(s.end()).toEqual({ reason: 'ended', lastSeq: 3 });
    // the run is over: the connection is let go and never made again
    expect(request?.signal?.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
  });

  it('resumes a dropped connection after 0.5 s with Last-Event-ID, delivering a cut frame and replayed seqs once', async () => {
    const server = new FakeFetch().reply(
      // the connection drops in the middle of the third frame
      { kind: 'stream', steps: [frame(1, 'run.start'), frame(2, 'node.enter'), frame(3, 'node.exit').slice(0, 25), { error: 'connection reset' }] },
      // the resumed stream replays 2 (a replica behind the first) before 3, 4 and the end
      { kind: 'stream', steps: [frame(2, 'node.enter') + frame(3, 'node.exit'), frame(4, 'route.taken'), frame(5, 'run.end', RUN_END), HANG] },
    );
    const s = open(server);
    await settle();
    expect(seqs(s.events)).toEqual([1, 2]);
    expect(s.statuses.at(-1)).toMatchObject({ state: 'waiting', attempt: 1, delayMs: 500, lastSeq: 2 });

    await vi.advanceTimersByTimeAsync(499);
    expect(server.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.headers.get('Last-Event-ID')).toBe('2');
    expect(server.requests[1]?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(seqs(s.events)).toEqual([1, 2, 3, 4, 5]);
    expect(s.end()).toEqual({ reason: 'ended', lastSeq: 5 });
  });

  it('resumes a stream that ended cleanly before run.end (a sidecar shutting down)', async () => {
    const server = new FakeFetch().reply(
      { kind: 'stream', steps: [frame(1, 'run.start'), CLOSE] },
      { kind: 'stream', steps: [frame(2, 'run.end', RUN_END), HANG] },
    );
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    expect(server.requests[1]?.headers.get('Last-Event-ID')).toBe('1');
    expect(seqs(s.events)).toEqual([1, 2]);
    expect(s.end()?.reason).toBe('ended');
  });

  it('waits 0.5, 1, 2, 4 and 8 s between attempts, then gives up so the caller reads the run', async () => {
    const server = new FakeFetch().reply({ kind: 'stream', steps: [frame(1, 'run.start'), frame(2, 'node.enter'), { error: 'reset' }] });
    server.fallback = { kind: 'network-error', message: 'Failed to fetch' };
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    await settle();

    expect(BACKOFF_MS).toEqual([500, 1000, 2000, 4000, 8000]);
    expect(server.requests.map((r) => r.at)).toEqual([0, 500, 1500, 3500, 7500, 15500]);
    expect(server.requests.slice(1).map((r) => r.headers.get('Last-Event-ID'))).toEqual(['2', '2', '2', '2', '2']);
    const waits = s.statuses.filter((x) => x.state === 'waiting');
    expect(waits.map((w) => [w.attempt, w.delayMs])).toEqual([[1, 500], [2, 1000], [3, 2000], [4, 4000], [5, 8000]]);
    const end = s.end();
    expect(end?.reason).toBe('gave-up');
    expect(end).toMatchObject({ lastSeq: 2, problem: { code: 'network' } });
    expect(seqs(s.events)).toEqual([1, 2]);
  });

  it('counts again from 0.5 s once a resumed connection delivers a new event', async () => {
    const server = new FakeFetch().reply(
      { kind: 'network-error', message: 'refused' },
      { kind: 'network-error', message: 'refused' },
      { kind: 'stream', steps: [frame(1, 'run.start'), { error: 'reset' }] },
      { kind: 'stream', steps: [frame(2, 'run.end', RUN_END), HANG] },
    );
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    await vi.advanceTimersByTimeAsync(1000);
    await settle();
    expect(server.requests.map((r) => r.at)).toEqual([0, 500, 1500]);
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    expect(server.requests.map((r) => r.at)).toEqual([0, 500, 1500, 2000]);
    expect(s.end()?.reason).toBe('ended');
  });

  it('answers a replay of events it already has, or a stream with only those, as a drop', async () => {
    // a stream that only repeats what was delivered does not reset the count
    const server = new FakeFetch().reply(
      { kind: 'stream', steps: [frame(1, 'run.start'), frame(2, 'node.enter'), CLOSE] },
      { kind: 'stream', steps: [frame(1, 'run.start'), frame(2, 'node.enter'), CLOSE] },
      { kind: 'stream', steps: [frame(2, 'node.enter'), CLOSE] },
      { kind: 'stream', steps: [frame(3, 'run.end', RUN_END), HANG] },
    );
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    await vi.advanceTimersByTimeAsync(1000);
    await settle();
    await vi.advanceTimersByTimeAsync(2000);
    await settle();
    expect(server.requests.map((r) => r.at)).toEqual([0, 500, 1500, 3500]);
    expect(seqs(s.events)).toEqual([1, 2, 3]);
    expect(s.end()?.reason).toBe('ended');
  });

  it.each([
    [401, 'unauthenticated', 'the cluster does not accept this token'],
    [403, 'forbidden', 'studioruns.studio.orrery.dev "x" is forbidden'],
  ] as const)('stops at once on %i, saying %s', async (status, reason, message) => {
    const server = new FakeFetch().reply({ kind: 'json', status, body: { loc: [], code: reason, message } });
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
    expect(s.end()).toMatchObject({ reason, lastSeq: 0, problem: { status, message } });
    expect(s.statuses.some((x) => x.state === 'waiting')).toBe(false);
  });

  it('stops on a 401 met while resuming, keeping what it delivered', async () => {
    const server = new FakeFetch().reply(
      { kind: 'stream', steps: [frame(1, 'run.start'), { error: 'reset' }] },
      { kind: 'json', status: 401, body: { loc: [], code: 'unauthenticated', message: 'token expired' } },
    );
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(2);
    expect(s.end()).toMatchObject({ reason: 'unauthenticated', lastSeq: 1 });
  });

  it('explains 429: the person already holds as many streams as allowed', async () => {
    const message = 'alice has 4 event streams open, the most one person may; close one first';
    const server = new FakeFetch().reply({ kind: 'json', status: 429, body: { loc: [], code: 'rate_limited', message }, headers: { 'Retry-After': '5' } });
    const s = open(server);
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
    const end = s.end();
    expect(end?.reason).toBe('too-many-streams');
    if (end?.reason === 'too-many-streams') {
      expect(end.problem.retryAfterSeconds).toBe(5);
      expect(end.explanation).toContain('four');
      expect(end.explanation).toContain('Close one of them');
      expect(end.explanation).toContain('5 s');
      expect(end.explanation).toContain(message);
    }
  });

  it('retries a 503 like a drop, and stops on a 404 (not the caller\'s run)', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 503, body: { loc: [], code: 'unavailable', message: 'the store cannot be read' }, headers: { 'Retry-After': '1' } },
      { kind: 'json', status: 404, body: { loc: [], code: 'not_found', message: 'no run team-a/x you own or approve' } },
    );
    const s = open(server);
    await settle();
    expect(s.statuses.at(-1)).toMatchObject({ state: 'waiting', delayMs: 500, problem: { status: 503 } });
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    expect(s.end()).toMatchObject({ reason: 'refused', problem: { status: 404, code: 'not_found' } });
  });

  it('refuses a reply that is not an event stream', async () => {
    const server = new FakeFetch().reply({ kind: 'stream', steps: ['{"events":[]}', CLOSE], contentType: 'application/json' });
    const s = open(server);
    await settle();
    expect(s.end()).toMatchObject({ reason: 'refused', problem: { code: 'reply' } });
    expect(server.requests).toHaveLength(1);
  });

  it('closes the connection when its owner closes it, and delivers nothing after', async () => {
    const server = new FakeFetch().reply({ kind: 'stream', steps: [frame(1, 'run.start'), HANG, frame(2, 'node.enter')] });
    const s = open(server);
    await settle();
    expect(seqs(s.events)).toEqual([1]);
    s.stream.close();
    await settle();
    expect(server.requests[0]?.signal?.aborted).toBe(true);
    expect(await s.stream.done).toEqual({ reason: 'closed', lastSeq: 1 });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
    expect(seqs(s.events)).toEqual([1]);
  });

  it('closing while it waits to reconnect cancels the reconnection', async () => {
    const server = new FakeFetch().reply({ kind: 'network-error', message: 'refused' });
    const s = open(server);
    await settle();
    expect(s.statuses.at(-1)?.state).toBe('waiting');
    s.stream.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(server.requests).toHaveLength(1);
    expect(s.end()).toEqual({ reason: 'closed', lastSeq: 0 });
  });

  it('starts after the events a view already holds, and reads the token anew at each connection', async () => {
    let token = 'first';
    const server = new FakeFetch().reply(
      { kind: 'stream', steps: [frame(7, 'node.exit'), CLOSE] },
      { kind: 'stream', steps: [frame(8, 'run.end', RUN_END), HANG] },
    );
    const s = open(server, { after: 6, token: () => token });
    await settle();
    token = 'refreshed';
    await vi.advanceTimersByTimeAsync(500);
    await settle();
    expect(server.requests.map((r) => [r.headers.get('Last-Event-ID'), r.headers.get('Authorization')])).toEqual([
      ['6', 'Bearer first'],
      ['7', 'Bearer refreshed'],
    ]);
    expect(seqs(s.events)).toEqual([7, 8]);
  });

  it('is not dropped by an owner whose handler throws: the error is handed back and the stream goes on', async () => {
    const thrown: unknown[] = [];
    const server = new FakeFetch().reply({ kind: 'stream', steps: [frame(1, 'run.start'), frame(2, 'run.end', RUN_END), HANG] });
    const delivered: number[] = [];
    const s = open(server, {
      onEvent: (e) => {
        delivered.push(e.seq);
        if (e.seq === 1) throw new Error('a bug in the view');
      },
      onHandlerError: (error) => thrown.push(error),
    });
    await settle();
    expect(delivered).toEqual([1, 2]);
    expect(thrown).toEqual([new Error('a bug in the view')]);
    expect(s.end()?.reason).toBe('ended');
    expect(server.requests).toHaveLength(1);
  });

  it('skips a frame that is not a trace event, says so, and goes on', async () => {
    const skipped: string[] = [];
    const server = new FakeFetch().reply({
      kind: 'stream',
      steps: ['id: 1\nevent: run.start\ndata: not json\n\n', 'id: 2\ndata: {"seq":2,"runId":"u","ts":"t","type":"future.kind"}\n\n', frame(3, 'run.end', RUN_END)],
    });
    const s = open(server, { onSkipped: (f) => skipped.push(`${f.id ?? '?'}: ${f.reason}`) });
    await settle();
    expect(skipped).toEqual(['1: not JSON', '2: an unknown type "future.kind"']);
    expect(seqs(s.events)).toEqual([3]);
    expect(s.end()?.reason).toBe('ended');
  });
});
