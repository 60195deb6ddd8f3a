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
// The server's `retry:` field is not used: the delays above are the console's. The connection,
// the backoff and the refusals are sse.ts's, shared with the Composition watch.

import type { EventSourceMessage } from 'eventsource-parser';
import { apiPath, type Fetch, type Problem } from './http.ts';
import { followSse, type SseEnd, type SseStatus } from './sse.ts';
import { parseTraceEvent, type TraceEvent } from './trace.ts';

export { BACKOFF_MS, tooManyStreamsExplanation } from './sse.ts';

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

function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

/** Opens the live stream of a run's events. */
export function streamRunEvents(options: RunEventsOptions): RunEventsStream {
  let lastSeq = options.after ?? 0;
  const withSeq = (end: SseEnd): StreamEnd => ({ ...end, lastSeq });
  const onFrame = (frame: EventSourceMessage): 'new' | 'old' | 'end' => {
    const parsed = parseTraceEvent(frame.data);
    if ('error' in parsed) {
      options.onSkipped?.({ id: frame.id, event: frame.event, reason: parsed.error });
      return 'old';
    }
    const event = parsed.event;
    if (event.seq <= lastSeq) return 'old'; // delivered already (a replay after a resume)
    lastSeq = event.seq;
    try {
      options.onEvent(event);
    } catch (error) {
      // The owner's failure is the owner's, never taken for a dropped connection.
      (options.onHandlerError ?? rethrowLater)(error);
    }
    return event.type === 'run.end' ? 'end' : 'new';
  };
  const onStatus = (status: SseStatus): void => {
    options.onStatus?.(status.state === 'stopped' ? { state: 'stopped', end: withSeq(status.end) } : { ...status, lastSeq });
  };
  const stream = followSse({
    url: `${options.base ?? ''}${apiPath('runs', options.namespace, options.name, 'events')}`,
    token: options.token,
    resumeId: () => (lastSeq > 0 ? String(lastSeq) : null),
    onFrame,
    endedEarly: 'the stream ended before the run did',
    onStatus,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return {
    close: () => {
      stream.close();
    },
    done: stream.done.then(withSeq),
  };
}
