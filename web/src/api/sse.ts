// What the console's live readers share (a run's events, events.ts; a Composition followed,
// composition-watch.ts): Server-Sent Events read with `fetch`, not `EventSource`, so the stream
// is authorized like every other call (`Authorization: Bearer`, never a token in the URL) and a
// refusal is seen for what it is.
//
// - When a connection drops or ends before its owner says the stream is over, or cannot be
//   made, or the sidecar answers 5xx (or 408), it connects again with `Last-Event-ID` (the
//   owner's resume id) after 0.5, 1, 2, 4 and 8 s; a connection that brought something new
//   starts the count again; when the fifth reconnection brings nothing either it gives up
//   (`gave-up`).
// - It stops at once on 401 (`unauthenticated`) and 403 (`forbidden`), saying which, and on
//   404, another 4xx or a reply that is not an event stream (`refused`); on 429 it stops and
//   explains the limit of open streams per person (`too-many-streams`).
// - It stops when the owner's frame handler says the stream is over (`ended`), and when the
//   owner closes it (`closed`).
// The server's `retry:` field is not used: the delays above are the console's.

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { authorized, globalFetch, networkProblem, problemOf, type Fetch, type Problem } from './http.ts';

/** The waits before each reconnection, in milliseconds. */
export const BACKOFF_MS: readonly number[] = [500, 1000, 2000, 4000, 8000];

/** The most a frame may hold before the connection is treated as broken. */
const MAX_FRAME_CHARS = 8 * 1024 * 1024;

/** Why a stream stopped for good. */
export type SseEnd =
  /** The owner's handler said the stream is over. */
  | { readonly reason: 'ended' }
  /** The owner closed it. */
  | { readonly reason: 'closed' }
  /** Reconnecting failed after the last wait. */
  | { readonly reason: 'gave-up'; readonly problem: Problem }
  /** 401: the token is not (or no longer) accepted; sign in again. */
  | { readonly reason: 'unauthenticated'; readonly problem: Problem }
  /** 403: the cluster refuses the caller what the stream reads. */
  | { readonly reason: 'forbidden'; readonly problem: Problem }
  /** 429: the caller already holds the most event streams a person may. */
  | { readonly reason: 'too-many-streams'; readonly problem: Problem; readonly explanation: string }
  /** 404, another 4xx, or a reply that is not a stream. */
  | { readonly reason: 'refused'; readonly problem: Problem };

/** How a stream stands. */
export type SseStatus =
  | { readonly state: 'connecting' }
  | { readonly state: 'open' }
  | { readonly state: 'waiting'; readonly attempt: number; readonly delayMs: number; readonly problem: Problem }
  | { readonly state: 'stopped'; readonly end: SseEnd };

/** What one frame was to its owner: something new, nothing new (a replay, an odd frame), or the last. */
export type FrameVerdict = 'new' | 'old' | 'end';

export interface SseOptions {
  readonly url: string;
  /** The bearer token, or a function giving the current one (read at every connection). */
  readonly token: string | (() => string);
  /** The `Last-Event-ID` of the next connection (read at every connection), or null to start afresh. */
  readonly resumeId: () => string | null;
  /** Takes one frame. */
  readonly onFrame: (frame: EventSourceMessage) => FrameVerdict;
  /** Whether a comment line (the sidecar's keep-alive) counts as news for the backoff's count. */
  readonly commentsAreNews?: boolean;
  /** What a connection that ended before the stream was over is called (the problem of its wait). */
  readonly endedEarly: string;
  readonly onStatus?: (status: SseStatus) => void;
  readonly fetch?: Fetch;
}

export interface SseStream {
  /** Closes the stream (aborting the connection); `done` then resolves with `closed`. */
  close(): void;
  /** Resolves once, when the stream stops for good. */
  readonly done: Promise<SseEnd>;
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

class Drop extends Error {
  constructor(readonly problem: Problem) {
    super(problem.message);
  }
}

/** Follows a Server-Sent Events stream until its owner's handler ends it, it is closed, or it gives up. */
export function followSse(options: SseOptions): SseStream {
  const call = options.fetch ?? globalFetch();
  let stopped = false;
  let controller: AbortController | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let wake: (() => void) | null = null;
  /** Whether the current connection brought something new. */
  let news = false;
  let finish: (end: SseEnd) => void = () => undefined;
  const done = new Promise<SseEnd>((resolve) => {
    finish = resolve;
  });

  // Read through a function: `stop` may run (from `close`, or a callback) across any await.
  const isStopped = (): boolean => stopped;
  const hadNews = (): boolean => news;
  const status = (s: SseStatus): void => {
    if (!isStopped() || s.state === 'stopped') options.onStatus?.(s);
  };
  const stop = (end: SseEnd): void => {
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

  // One connection: resolves true when the owner ended the stream, false when it ended without;
  // throws Drop for what is worth a reconnection, and stops the stream for what is not.
  const connect = async (): Promise<boolean> => {
    const abort = new AbortController();
    controller = abort;
    const headers = authorized(typeof options.token === 'string' ? options.token : options.token(), {
      Accept: 'text/event-stream',
    });
    const resume = options.resumeId();
    if (resume !== null) headers.set('Last-Event-ID', resume);
    status({ state: 'connecting' });
    let response: Response;
    try {
      response = await call(options.url, { method: 'GET', headers, signal: abort.signal, credentials: 'omit', cache: 'no-store' });
    } catch (error) {
      throw new Drop(networkProblem(error));
    }
    if (isStopped()) return false;
    if (!response.ok) {
      const problem = await problemOf(response);
      if (response.status >= 500 || response.status === 408) throw new Drop(problem);
      if (response.status === 401) stop({ reason: 'unauthenticated', problem });
      else if (response.status === 403) stop({ reason: 'forbidden', problem });
      else if (response.status === 429) stop({ reason: 'too-many-streams', problem, explanation: tooManyStreamsExplanation(problem) });
      else stop({ reason: 'refused', problem });
      return false;
    }
    const type = response.headers.get('Content-Type') ?? '';
    if (!type.startsWith('text/event-stream') || response.body === null) {
      stop({
        reason: 'refused',
        problem: { status: response.status, code: 'reply', message: `the sidecar answered with ${type || 'no content type'}, not an event stream`, loc: [], retryAfterSeconds: null },
      });
      return false;
    }
    status({ state: 'open' });

    const frames: { ended: boolean; broken: string | null } = { ended: false, broken: null };
    const parser = createParser({
      maxBufferSize: MAX_FRAME_CHARS,
      onEvent: (frame: EventSourceMessage) => {
        if (isStopped() || frames.ended) return;
        const verdict = options.onFrame(frame);
        if (verdict !== 'old') news = true;
        if (verdict === 'end') frames.ended = true;
      },
      onComment: () => {
        if (options.commentsAreNews === true) news = true;
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
      news = false;
      try {
        const ended = await connect();
        if (isStopped()) return;
        if (ended) {
          stop({ reason: 'ended' });
          return;
        }
        problem = { status: 200, code: 'ended', message: options.endedEarly, loc: [], retryAfterSeconds: null };
      } catch (error) {
        if (isStopped()) return;
        problem = error instanceof Drop ? error.problem : networkProblem(error);
      }
      if (hadNews()) failures = 0;
      const delayMs = BACKOFF_MS[failures];
      if (delayMs === undefined) {
        stop({ reason: 'gave-up', problem });
        return;
      }
      failures += 1;
      status({ state: 'waiting', attempt: failures, delayMs, problem });
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
      stop({ reason: 'closed' });
    },
    done,
  };
}
