// A finished run's stored events, read as JSON pages (docs/sidecar-api.md, "As JSON pages"):
// `GET /api/v1/runs/{ns}/{name}/events?after=N&limit=500` with `Accept: application/json`
// answers `{"events": [...], "next": N, "complete": bool}`. Replay and compare read every page,
// from the start, until one ends with `run.end` (`complete`) or comes back empty (a run that
// ended without one, or events not all stored yet). The first refusal (401, 404…) stops the read.
// Kept small: it joins the run panel's page reader (`api/event-pages.ts`) when both land.

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions } from '../api/http.ts';
import type { Result } from '../api/runs.ts';
import { parseTraceEvent, type TraceEvent } from '../api/trace.ts';

/** The most a page may hold (the sidecar's default and limit). */
export const PAGE_LIMIT = 500;

/** More pages than a run can have (2,000 events at most): a sidecar that never ends is stopped. */
const MAX_PAGES = 100;

export interface StoredEvents {
  /** In seq order, each once. */
  readonly events: readonly TraceEvent[];
  /** Whether the last page ended with `run.end`. */
  readonly complete: boolean;
}

/** Reads every stored event of a run; `onPage` hears how many are read so far. */
export async function readAllEvents(
  token: string,
  namespace: string,
  name: string,
  options: ApiOptions = {},
  onPage?: (read: number) => void,
): Promise<Result<StoredEvents>> {
  const events: TraceEvent[] = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const reply = await callApi(token, apiPath('runs', namespace, name, 'events'), { query: { after, limit: PAGE_LIMIT } }, options);
    if (!reply.ok) return reply;
    const body = isRecord(reply.body) ? reply.body : {};
    const items = body['events'];
    const next = body['next'];
    if (!Array.isArray(items) || typeof next !== 'number') return { ok: false, problem: shapeProblem(reply.status, 'a page of events') };
    for (const item of items) {
      const parsed = parseTraceEvent(JSON.stringify(item));
      if ('error' in parsed) return { ok: false, problem: shapeProblem(reply.status, `a trace event (${parsed.error})`) };
      if (parsed.event.seq > (events.at(-1)?.seq ?? 0)) events.push(parsed.event);
    }
    onPage?.(events.length);
    if (body['complete'] === true) return { ok: true, value: { events, complete: true } };
    if (items.length === 0 || next <= after) break;
    after = next;
  }
  return { ok: true, value: { events, complete: false } };
}
