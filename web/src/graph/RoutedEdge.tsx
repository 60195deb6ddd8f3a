// An edge of the run graph, drawn along the route ELK gave it (a loop's back edge goes around
// the nodes it closes), with its label (`when`, a loop's cap) and, once taken, how many times.
// An edge taken is drawn bold; the edge into the node running now is drawn live, its dashes
// moving only when motion is welcome (graph.css); a supervisor's delegation is dotted.

import { EdgeLabelRenderer, type Edge, type EdgeProps } from '@xyflow/react';
import type { Box } from './layout.ts';
import { arrowHead, halfway, roundedPath, type Point } from './route-path.ts';
import type { EdgeKind } from './spec.ts';

export interface RoutedEdgeData extends Record<string, unknown> {
  readonly points: readonly Point[];
  readonly label: Box | null;
  readonly text: string | null;
  /** Times taken so far. */
  readonly count: number;
  /** Into the node running now. */
  readonly live: boolean;
  readonly kind: EdgeKind;
  /** On the canvas: selected, or what the validator found (drawn over the run colours). */
  readonly tone?: 'selected' | 'error' | 'warning' | null;
}

export type RunFlowEdge = Edge<RoutedEdgeData, 'routed'>;

export function RoutedEdge({ data }: EdgeProps<RunFlowEdge>) {
  if (data === undefined || data.points.length < 2) return null;
  const taken = data.count > 0;
  const tone = data.tone ?? null;
  const line = tone === 'selected'
    ? 'stroke-sky-700 dark:stroke-sky-300'
    : tone === 'error'
      ? 'stroke-red-700 dark:stroke-red-400'
      : tone === 'warning'
        ? 'stroke-amber-700 dark:stroke-amber-300'
        : data.live
    ? 'stroke-sky-700 dark:stroke-sky-300 run-edge-live'
    : taken
      ? 'stroke-sky-700 dark:stroke-sky-300'
      : 'stroke-slate-500 dark:stroke-slate-400';
  const dash = data.kind === 'delegation' && !data.live ? 'run-edge-delegation' : '';
  const width = taken || data.live || tone !== null ? 3 : 1.5;
  const at = data.label ?? null;
  const middle = halfway(data.points);
  const count = taken ? (
    <span className="rounded-full bg-sky-700 px-1.5 font-mono text-[11px] font-semibold text-white dark:bg-sky-300 dark:text-slate-950" title={`taken ${data.count} ${data.count === 1 ? 'time' : 'times'}`}>
      {data.count}×
    </span>
  ) : null;
  return (
    <>
      <path d={roundedPath(data.points, 10, 8)} className={`fill-none ${line} ${dash}`} strokeWidth={width} strokeLinejoin="round" />
      <polygon
        points={arrowHead(data.points, taken || data.live || tone !== null ? 11 : 9)}
        className={
          tone === 'error'
            ? 'fill-red-700 dark:fill-red-400'
            : tone === 'warning'
              ? 'fill-amber-700 dark:fill-amber-300'
              : taken || data.live || tone === 'selected'
                ? 'fill-sky-700 dark:fill-sky-300'
                : 'fill-slate-500 dark:fill-slate-400'
        }
      />
      {data.text !== null || count !== null ? (
        <EdgeLabelRenderer>
          <div
            className="pointer-events-none absolute flex items-center gap-1 whitespace-nowrap rounded border border-slate-300 bg-white px-1 text-xs leading-[18px] text-slate-800 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-200"
            style={
              at === null
                ? { transform: `translate(-50%, -50%) translate(${middle.x}px, ${middle.y}px)` }
                : { transform: `translate(${at.x}px, ${at.y}px)` }
            }
          >
            {data.text === null ? null : <span>{data.text}</span>}
            {count}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}
