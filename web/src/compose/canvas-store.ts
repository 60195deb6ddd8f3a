// The canvas of this tab (canvas/store.ts), kept across pages and gone with the tab, and what a
// page that put something on it (History's Show, rule 12.60) says when Compose opens.

import { createCanvasStore } from '../canvas/store.ts';

let canvas: ReturnType<typeof createCanvasStore> | null = null;

/** The tab's one canvas. */
export function canvasStore(): ReturnType<typeof createCanvasStore> {
  canvas ??= createCanvasStore();
  return canvas;
}

/** What Compose shows in its undo banner when it opens next, with a link back, if anything. */
export interface Arrival {
  readonly said: string;
  readonly back: { readonly label: string; readonly href: string } | null;
  /** Whether the banner offers Undo (a load does; a save or an open, which start afresh, do not). */
  readonly undoable?: boolean;
}

let arrival: Arrival | null = null;

export function announceArrival(next: Arrival): void {
  arrival = next;
}

/** The arrival to show (read while rendering: a render may be retried before it is shown). */
export function peekArrival(): Arrival | null {
  return arrival;
}

/** Forgets the arrival once Compose has shown it. */
export function clearArrival(): void {
  arrival = null;
}

/** Forgets the canvas and any arrival (signing out: the next person starts from an empty canvas). */
export function forgetCanvas(): void {
  canvas = null;
  arrival = null;
}
