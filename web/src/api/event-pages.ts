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

/** More pages than a run can have (2,000 events at most): a sidecar that never ends is stopped. */
const MAX_PAGES = 100;

export interface StoredEvents {
  /** In seq order, each once. */
  readonly events: readonly TraceEvent[];
  /** Whether the last page ended with `run.end`. */
  readonly complete: boolean;
}

/**
 * Every stored event of a run, page after page from the start, until one ends with `run.end`
 * (`complete`) or comes back empty (a run that ended without one, or events not all stored
 * yet); the first refusal (401, 404…) stops the read. `onPage` hears how many are read so far.
 * Replay and compare read runs this way.
 */
export async function readAllEvents(
  token: string,
  namespace: string,
  name: string,
  options: ApiOptions = {},
  onPage?: (read: number) => void,
): Promise<Result<StoredEvents>> {
  const events: TraceEvent[] = [];
  let after = 0;
  for (let n = 0; n < MAX_PAGES; n += 1) {
    const page = await fetchEventPage(token, namespace, name, after, options);
    if (!page.ok) return page;
    for (const event of page.value.events) if (event.seq > (events.at(-1)?.seq ?? 0)) events.push(event);
    onPage?.(events.length);
    if (page.value.complete) return { ok: true, value: { events, complete: true } };
    if (page.value.events.length === 0 || page.value.next <= after) break;
    after = page.value.next;
  }
  return { ok: true, value: { events, complete: false } };
}
