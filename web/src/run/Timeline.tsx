// Every event of the run, one row each (seq, time, type, node, what it says), in a region the
// keyboard scrolls (it is a tab stop: arrows, Page Up/Down, Home, End). Only the rows in view
// are drawn (`rowWindow`), so 2,000 events cost what 30 do; the table still tells a screen
// reader how many rows there are and which one each is. While the view is at the end it
// follows new events; scrolling up stops that, and the checkbox says so.

import { useId, useLayoutEffect, useRef, useState } from 'react';
import type { TraceEvent } from '../api/trace.ts';
import { focusRing, muted } from '../ui/classes.ts';
import { eventNode, summarize } from './summary.ts';
import { atEnd, rowWindow } from './timeline-window.ts';

const ROW = 28;
const HEIGHT = 320;
const HEAD = 30;

/** "10:00:05.123" of an RFC 3339 time (UTC on the wire). */
export function clockTime(ts: string): string {
  const match = /T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)/.exec(ts);
  return match?.[1] ?? ts;
}

const TYPE_CLASS: Partial<Record<TraceEvent['type'], string>> = {
  'run.start': 'font-semibold',
  'run.end': 'font-semibold',
  'budget.hit': 'font-semibold text-red-800 dark:text-red-300',
  'approval.requested': 'font-semibold text-amber-800 dark:text-amber-300',
  'approval.decided': 'text-amber-800 dark:text-amber-300',
};

interface Props {
  readonly events: readonly TraceEvent[];
  /** How many events there are now (the array grows in place). */
  readonly count: number;
  readonly selectedNode: string | null;
  /** Whether more events may come (then the view can follow them). */
  readonly live: boolean;
}

export function Timeline({ events, count, selectedNode, live }: Props) {
  const id = useId();
  const viewport = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [follow, setFollow] = useState(true);
  // As tall as its rows (at least three), at most HEIGHT.
  const height = Math.min(HEIGHT, HEAD + Math.max(3, count) * ROW + 2);
  const span = rowWindow({ count, rowHeight: ROW, scrollTop: Math.max(0, scrollTop - HEAD), viewportHeight: height - HEAD, overscan: 8 });

  useLayoutEffect(() => {
    const element = viewport.current;
    if (follow && element !== null) element.scrollTop = element.scrollHeight;
  }, [count, follow]);

  const rows: TraceEvent[] = events.slice(span.first, span.end);
  return (
    <div className="flex flex-col gap-2">
      <div className="flex items-center justify-between gap-3">
        <p className={muted} id={`${id}-caption`}>
          {count === 0 ? 'No events yet.' : `${count.toLocaleString('en')} ${count === 1 ? 'event' : 'events'}, oldest first.`}
        </p>
        {live ? (
          <label className="flex items-center gap-2 text-sm">
            <input
              type="checkbox"
              className={`h-4 w-4 ${focusRing}`}
              checked={follow}
              onChange={(event) => {
                setFollow(event.target.checked);
              }}
            />
            Follow new events
          </label>
        ) : null}
      </div>
      <div
        ref={viewport}
        role="region"
        aria-label="Timeline of events"
        aria-describedby={`${id}-caption`}
        tabIndex={0}
        className={`overflow-auto rounded-md border border-slate-300 bg-white dark:border-slate-700 dark:bg-slate-900 ${focusRing}`}
        style={{ height }}
        onScroll={(event) => {
          const element = event.currentTarget;
          setScrollTop(element.scrollTop);
          setFollow(atEnd(element.scrollTop, element.clientHeight, element.scrollHeight, ROW));
        }}
      >
        <table className="w-full table-fixed border-collapse text-sm" aria-rowcount={count + 1}>
          <colgroup>
            <col className="w-16" />
            <col className="w-32" />
            <col className="w-44" />
            <col className="w-28" />
            <col />
          </colgroup>
          <thead className="sticky top-0 z-10 bg-slate-100 dark:bg-slate-800">
            <tr aria-rowindex={1} style={{ height: HEAD }}>
              <th scope="col" className="px-2 text-right font-semibold">Seq</th>
              <th scope="col" className="px-2 text-left font-semibold">Time (UTC)</th>
              <th scope="col" className="px-2 text-left font-semibold">Event</th>
              <th scope="col" className="px-2 text-left font-semibold">Node</th>
              <th scope="col" className="px-2 text-left font-semibold">What happened</th>
            </tr>
          </thead>
          <tbody>
            {span.before > 0 ? <tr aria-hidden="true" style={{ height: span.before }} /> : null}
            {rows.map((event, i) => {
              const node = eventNode(event);
              const summary = summarize(event);
              return (
                <tr
                  key={event.seq}
                  aria-rowindex={span.first + i + 2}
                  data-seq={event.seq}
                  className={`border-t border-slate-200 dark:border-slate-800 ${node !== null && node === selectedNode ? 'bg-sky-50 dark:bg-sky-950' : ''}`}
                  style={{ height: ROW }}
                >
                  <td className="px-2 text-right font-mono tabular-nums">{event.seq}</td>
                  <td className="truncate px-2 font-mono tabular-nums">{clockTime(event.ts)}</td>
                  <td className={`truncate px-2 font-mono ${TYPE_CLASS[event.type] ?? ''}`}>{event.type}</td>
                  <td className="truncate px-2 font-mono">{node ?? ''}</td>
                  <td className="truncate px-2" title={summary}>
                    {summary}
                  </td>
                </tr>
              );
            })}
            {span.after > 0 ? <tr aria-hidden="true" style={{ height: span.after }} /> : null}
          </tbody>
        </table>
      </div>
    </div>
  );
}
