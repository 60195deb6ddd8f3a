// A run's stored events as JSON pages (`GET /api/v1/runs/{ns}/{name}/events?after=N&limit=M`
// with any `Accept` but an event stream; docs/sidecar-api.md): `{events, next, complete}`,
// `next` the `after` of the next page, `complete` true when the page ends with `run.end`. For
// a finished run this is cheaper than the stream (no connection held, 500 events a call); the
// live panel, replay and history read them here.

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions } from './http.ts';
import type { Result } from './runs.ts';
import { parseTraceEvent, type TraceEvent } from './trace.ts';

/** The most events the sidecar sends in one page. */
export const EVENT_PAGE_LIMIT = 500;

export interface EventPage {
  /** The page's events, in seq order (an entry that is not an event is left out). */
  readonly events: readonly TraceEvent[];
  /** The `after` of the next page. */
  readonly next: number;
  /** Whether the page ends with `run.end`: there is nothing after it. */
  readonly complete: boolean;
}

export interface EventPageOptions extends ApiOptions {
  /** Events a page, 1 to 500 (the sidecar's default and most). */
  readonly limit?: number;
}

/** One page of a run's stored events, those after `after`. */
export async function fetchEventPage(token: string, namespace: string, name: string, after: number, options: EventPageOptions = {}): Promise<Result<EventPage>> {
  const limit = Math.max(1, Math.min(EVENT_PAGE_LIMIT, Math.floor(options.limit ?? EVENT_PAGE_LIMIT)));
  const reply = await callApi(token, apiPath('runs', namespace, name, 'events'), { query: { after, limit } }, options);
  if (!reply.ok) return reply;
  const body = isRecord(reply.body) ? reply.body : {};
  const items = body['events'];
  const next = body['next'];
  if (!Array.isArray(items) || typeof next !== 'number' || !Number.isSafeInteger(next)) {
    return { ok: false, problem: shapeProblem(reply.status, 'a page of events') };
  }
  const events: TraceEvent[] = [];
  for (const item of items) {
    const parsed = parseTraceEvent(JSON.stringify(item));
    if ('event' in parsed) events.push(parsed.event);
  }
  return { ok: true, value: { events, next, complete: body['complete'] === true } };
}
