// The palette (rules 12.8–12.13): a list of node kinds to drag onto the canvas, or to add with
// Enter (after the last node). A kind the server does not run is shown disabled with the
// server's reason. Below 1280 px it is a rail of icons that keep their names and blurbs for screen readers
// and as tooltips.

import type { DragEvent } from 'react';
import { focusRing, muted } from '../ui/classes.ts';
import { itemToData, PALETTE_MIME, type PaletteEntry, type PaletteItem } from './palette.ts';

interface Props {
  readonly entries: readonly PaletteEntry[];
  /** Icons only (below 1280 px). */
  readonly rail: boolean;
  /** Nothing can be added (a narrow screen). */
  readonly readOnly: boolean;
  /** The schema has not answered yet: nothing is gated (12.10). */
  readonly pending: boolean;
  readonly onAdd: (item: PaletteItem) => void;
}

export function Palette({ entries, rail, readOnly, pending, onAdd }: Props) {
  return (
    <section aria-labelledby="palette-heading" className={`flex shrink-0 flex-col gap-2 ${rail ? 'w-14' : 'w-52'}`}>
      <h2 id="palette-heading" className={rail ? 'sr-only' : 'text-sm font-semibold'}>
        Add a node
      </h2>
      {rail || readOnly ? null : <p className={`text-xs ${muted}`}>Drag onto the canvas, or press Enter to add after the last node.</p>}
      {pending && !rail ? (
        <p role="status" className={`text-xs ${muted}`}>
          Reading what this server runs… every kind is offered meanwhile.
        </p>
      ) : null}
      <ul className="flex flex-col gap-1">
        {entries.map((entry, index) => {
          const off = readOnly || entry.disabled !== null;
          const why = entry.disabled ?? (readOnly ? 'the canvas is read-only on a screen this narrow' : null);
          const whyId = `palette-why-${index}`;
          const hintId = `palette-hint-${index}`;
          // Named by the kind alone; described by why it is off (first), then its blurb.
          const describedBy = why === null ? hintId : `${whyId} ${hintId}`;
          return (
            <li key={entry.label}>
              <button
                type="button"
                draggable={!off}
                aria-disabled={off ? 'true' : undefined}
                aria-label={entry.label}
                aria-describedby={describedBy}
                title={rail ? `${entry.label}: ${entry.hint}${why === null ? '' : ` (not available: ${why})`}` : undefined}
                onDragStart={(event: DragEvent<HTMLButtonElement>) => {
                  if (off) {
                    event.preventDefault();
                    return;
                  }
                  event.dataTransfer.setData(PALETTE_MIME, itemToData(entry.item));
                  event.dataTransfer.effectAllowed = 'copy';
                }}
                onClick={() => {
                  if (!off) onAdd(entry.item);
                }}
                className={`flex w-full items-start gap-2 rounded-md border px-2 py-1.5 text-left ${
                  off
                    ? 'cursor-not-allowed border-dashed border-slate-400 text-slate-600 dark:border-slate-600 dark:text-slate-400'
                    : 'cursor-grab border-slate-400 bg-white hover:bg-slate-100 dark:border-slate-500 dark:bg-slate-900 dark:hover:bg-slate-800'
                } ${focusRing}`}
              >
                <span aria-hidden="true" className="inline-flex h-7 w-7 shrink-0 items-center justify-center rounded bg-slate-200 font-mono text-xs font-semibold dark:bg-slate-700">
                  {entry.icon}
                </span>
                {/* On the rail the name and blurb stay, for screen readers (and the tooltip shows them). */}
                <span className={rail ? 'sr-only' : 'flex min-w-0 flex-col'}>
                  <span className="font-medium">{entry.label}</span>
                  <span id={hintId} className={`text-xs ${muted}`}>
                    {entry.hint}
                  </span>
                </span>
              </button>
              {why === null ? null : (
                <p id={whyId} className={rail ? 'sr-only' : `px-2 pt-0.5 text-xs ${muted}`}>
                  Not available: {why}.
                </p>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
