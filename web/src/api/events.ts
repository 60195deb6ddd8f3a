// The live reader of a run's events: `GET /api/v1/runs/{ns}/{name}/events` as Server-Sent
// Events (docs/sidecar-api.md). A fetch reader, not `EventSource`, so the stream is authorized
// like every other call (`Authorization: Bearer`, never a token in the URL) and a refusal is
// seen for what it is. On the wire: one frame per trace event, `id:` its `seq`, `event:` its
// type, `data:` its JSON; comment lines keep an idle connection open; the stream resumes after
// `Last-Event-ID`; it ends after `run.end`, or after the replay of a finished run, or cleanly
// when the sidecar shuts down (the client then resumes, maybe on another replica).
//
// What the reader does (the console's rules 12.43 and 12.44 in docs/behaviour.md):
// - delivers each event once, in order: an event whose `seq` it has delivered already (a
//   replay after a resume) is dropped;
// - when a connection drops or ends without `run.end`, or cannot be made, or the sidecar
//   answers 5xx, it reconnects with `Last-Event-ID` after 0.5, 1, 2, 4 and 8 s; a connection
//   that delivered a new event starts the count again; when the fifth reconnection delivers
//   nothing either it gives up (`gave-up`), and the caller reads the run instead;
// - stops at once on 401 (`unauthenticated`) and 403 (`forbidden`), saying which, and on 404,
//   another 4xx or a reply that is not an event stream; on 429 it stops and explains the
//   limit of open streams per person;
// - stops when `run.end` arrives (`ended`), and when its owner closes it (`closed`).
// The server's `retry:` field is not used: the delays above are the console's.

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { apiPath, authorized, globalFetch, networkProblem, problemOf, type Fetch, type Problem } from './http.ts';
import { parseTraceEvent, type TraceEvent } from './trace.ts';

/** The waits before each reconnection, in milliseconds. */
export const BACKOFF_MS: readonly number[] = [500, 1000, 2000, 4000, 8000];

/** The most a frame may hold before the connection is treated as broken. */
const MAX_FRAME_CHARS = 8 * 1024 * 1024;

/** Why a stream stopped for good. */
export type StreamEnd =
  /** `run.end` arrived: the run is over and every event was delivered. */
  | { readonly reason: 'ended'; readonly lastSeq: number }
  /** The owner closed it. */
  | { readonly reason: 'closed'; readonly lastSeq: number }
  /** Reconnecting failed after the last wait: read the run to learn how it stands. */
  | { readonly reason: 'gave-up'; readonly lastSeq: number; readonly problem: Problem }
  /** 401: the token is not (or no longer) accepted; sign in again. */
  | { readonly reason: 'unauthenticated'; readonly lastSeq: number; readonly problem: Problem }
  /** 403: the cluster refuses the caller a `get` of the run. */
  | { readonly reason: 'forbidden'; readonly lastSeq: number; readonly problem: Problem }
  /** 429: the caller already holds the most event streams a person may. */
  | { readonly reason: 'too-many-streams'; readonly lastSeq: number; readonly problem: Problem; readonly explanation: string }
  /** 404 (no such run, or not the caller's), another 4xx, or a reply that is not a stream. */
  | { readonly reason: 'refused'; readonly lastSeq: number; readonly problem: Problem };

/** How the stream stands, for the view to show. */
export type StreamStatus =
  | { readonly state: 'connecting'; readonly lastSeq: number }
  | { readonly state: 'open'; readonly lastSeq: number }
  | { readonly state: 'waiting'; readonly lastSeq: number; readonly attempt: number; readonly delayMs: number; readonly problem: Problem }
  | { readonly state: 'stopped'; readonly end: StreamEnd };

/** A frame that was not delivered as an event, and why (the stream goes on). */
export interface SkippedFrame {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly reason: string;
}

export interface RunEventsOptions {
  readonly namespace: string;
  readonly name: string;
  /** The bearer token, or a function giving the current one (read at every connection). */
  readonly token: string | (() => string);
  /** Events up to this `seq` are already held: the stream starts after it. */
  readonly after?: number;
  readonly onEvent: (event: TraceEvent) => void;
  readonly onStatus?: (status: StreamStatus) => void;
  readonly onSkipped?: (frame: SkippedFrame) => void;
  /** What to do when `onEvent` throws (the stream goes on); by default it is rethrown outside the reader. */
  readonly onHandlerError?: (error: unknown) => void;
  /** The sidecar's origin, empty for the page's own. */
  readonly base?: string;
  readonly fetch?: Fetch;
}

export interface RunEventsStream {
  /** Closes the stream (aborting the connection); `done` then resolves with `closed`. */
  close(): void;
  /** Resolves once, when the stream stops for good. */
  readonly done: Promise<StreamEnd>;
}

/** What 429 means here, in the console's words. */
export function tooManyStreamsExplanation(problem: Problem): string {
  const wait = problem.retryAfterSeconds === null ? '' : ` The sidecar suggests trying again in ${problem.retryAfterSeconds} s.`;
  return (
    'You already have as many live event streams open as one person may (four, unless the ' +
    'install says otherwise): other tabs or views following runs. Close one of them, then ' +
    `reconnect.${wait} (The sidecar said: ${problem.message})`
  );
}

function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

class Drop extends Error {
  constructor(readonly problem: Problem) {
    super(problem.message);
  }
}

/** Opens the live stream of a run's events. */
export function streamRunEvents(options: RunEventsOptions): RunEventsStream {
  const call = options.fetch ?? globalFetch();
  const url = `${options.base ?? ''}${apiPath('runs', options.namespace, options.name, 'events')}`;
  let lastSeq = options.after ?? 0;
  let stopped = false;
  let controller: AbortController | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let wake: (() => void) | null = null;
  /** New events the current connection delivered. */
  let delivered = 0;
  let finish: (end: StreamEnd) => void = () => undefined;
  const done = new Promise<StreamEnd>((resolve) => {
    finish = resolve;
  });

  // Read through a function: `stop` may run (from `close`, or a callback) across any await.
  const isStopped = (): boolean => stopped;
  const status = (s: StreamStatus): void => {
    if (!isStopped() || s.state === 'stopped') options.onStatus?.(s);
  };
  const stop = (end: StreamEnd): void => {
    if (stopped) return;
    stopped = true;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    wake?.();
    controller?.abort();
    controller = null;
    status({ state: 'stopped', end });
    finish(end);
  };

  // One connection: resolves true when `run.end` was delivered, false when it ended without;
  // throws Drop for what is worth a reconnection, and stops the stream for what is not.
  const connect = async (): Promise<boolean> => {
    const abort = new AbortController();
    controller = abort;
    const headers = authorized(typeof options.token === 'string' ? options.token : options.token(), {
      Accept: 'text/event-stream',
    });
    if (lastSeq > 0) headers.set('Last-Event-ID', String(lastSeq));
    status({ state: 'connecting', lastSeq });
    let response: Response;
    try {
      response = await call(url, { method: 'GET', headers, signal: abort.signal, credentials: 'omit', cache: 'no-store' });
    } catch (error) {
      throw new Drop(networkProblem(error));
    }
    if (isStopped()) return false;
    if (!response.ok) {
      const problem = await problemOf(response);
      if (response.status >= 500 || response.status === 408) throw new Drop(problem);
      if (response.status === 401) stop({ reason: 'unauthenticated', lastSeq, problem });
      else if (response.status === 403) stop({ reason: 'forbidden', lastSeq, problem });
      else if (response.status === 429) stop({ reason: 'too-many-streams', lastSeq, problem, explanation: tooManyStreamsExplanation(problem) });
      else stop({ reason: 'refused', lastSeq, problem });
      return false;
    }
    const type = response.headers.get('Content-Type') ?? '';
    if (!type.startsWith('text/event-stream') || response.body === null) {
      stop({
        reason: 'refused',
        lastSeq,
        problem: { status: response.status, code: 'reply', message: `the sidecar answered with ${type || 'no content type'}, not an event stream`, loc: [], retryAfterSeconds: null },
      });
      return false;
    }
    status({ state: 'open', lastSeq });

    const frames: { ended: boolean; broken: string | null } = { ended: false, broken: null };
    const parser = createParser({
      maxBufferSize: MAX_FRAME_CHARS,
      onEvent: (frame: EventSourceMessage) => {
        if (isStopped() || frames.ended) return;
        const parsed = parseTraceEvent(frame.data);
        if ('error' in parsed) {
          options.onSkipped?.({ id: frame.id, event: frame.event, reason: parsed.error });
          return;
        }
        const event = parsed.event;
        if (event.seq <= lastSeq) return; // delivered already (a replay after a resume)
        lastSeq = event.seq;
        delivered += 1;
        if (event.type === 'run.end') frames.ended = true;
        try {
          options.onEvent(event);
        } catch (error) {
          // The owner's failure is the owner's, never taken for a dropped connection.
          (options.onHandlerError ?? rethrowLater)(error);
        }
      },
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') frames.broken = error.message;
      },
    });
    // Decoded here rather than through a TextDecoderStream, whose queue an error would empty:
    // every byte read is parsed before the next read.
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done: eof, value } = await reader.read();
        if (eof) break;
        parser.feed(decoder.decode(value, { stream: true }));
        if (frames.broken !== null) {
          throw new Drop({ status: 200, code: 'reply', message: `a frame over the limit: ${frames.broken}`, loc: [], retryAfterSeconds: null });
        }
        if (frames.ended || isStopped()) break;
      }
    } catch (error) {
      if (error instanceof Drop) throw error;
      if (isStopped()) return false;
      throw new Drop(networkProblem(error));
    } finally {
      abort.abort();
      reader.releaseLock();
    }
    // A frame cut off by the end of the stream is never delivered: the next connection
    // resumes after the last whole one.
    return frames.ended;
  };

  const run = async (): Promise<void> => {
    let failures = 0;
    for (;;) {
      let problem: Problem;
      delivered = 0;
      try {
        const ended = await connect();
        if (isStopped()) return;
        if (ended) {
          stop({ reason: 'ended', lastSeq });
          return;
        }
        problem = { status: 200, code: 'ended', message: 'the stream ended before the run did', loc: [], retryAfterSeconds: null };
      } catch (error) {
        if (isStopped()) return;
        problem = error instanceof Drop ? error.problem : networkProblem(error);
      }
      if (delivered > 0) failures = 0;
      const delayMs = BACKOFF_MS[failures];
      if (delayMs === undefined) {
        stop({ reason: 'gave-up', lastSeq, problem });
        return;
      }
      failures += 1;
      status({ state: 'waiting', lastSeq, attempt: failures, delayMs, problem });
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(() => {
          timer = null;
          resolve();
        }, delayMs);
      });
      wake = null;
      if (isStopped()) return;
    }
  };

  void run();
  return {
    close: () => {
      stop({ reason: 'closed', lastSeq });
    },
    done,
  };
}
