// Trace events for tests, as the runner sends them: seq from 1 and ts one second apart from
// 2026-12-05T10:00:00Z filled in (`first` moves both on).

import { parseTraceEvent, type TraceEvent } from '../api/trace.ts';

export function eventsFrom(first: number, ...bodies: Record<string, unknown>[]): TraceEvent[] {
  return bodies.map((body, i) => {
    const seq = first + i;
    const parsed = parseTraceEvent(JSON.stringify({ seq, runId: 'uid-1', ts: new Date(Date.UTC(2026, 11, 5, 10, 0, seq - 1)).toISOString(), ...body }));
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed.event;
  });
}

/** Events with seq 1, 2, … */
export function events(...bodies: Record<string, unknown>[]): TraceEvent[] {
  return eventsFrom(1, ...bodies);
}

/** One event with the given seq. */
export function event(seq: number, body: Record<string, unknown>): TraceEvent {
  const [only] = eventsFrom(seq, body);
  if (only === undefined) throw new Error('no event');
  return only;
}
