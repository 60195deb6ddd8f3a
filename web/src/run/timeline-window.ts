// Which rows of the timeline to draw: only those in view and a few either side, so a run of
// 2,000 events (or 20,000) costs the same as one of 30. Rows have one fixed height; the rows
// left out are stood in for by two spacers whose heights keep the scroll bar true.

export interface WindowInput {
  /** Rows in all. */
  readonly count: number;
  readonly rowHeight: number;
  /** The scroll position of the list's viewport, in px. */
  readonly scrollTop: number;
  /** The viewport's height, in px. */
  readonly viewportHeight: number;
  /** Rows drawn beyond each edge of the view. */
  readonly overscan: number;
}

export interface RowWindow {
  /** The first row drawn. */
  readonly first: number;
  /** One past the last row drawn. */
  readonly end: number;
  /** The height standing in for the rows above the window, and below it. */
  readonly before: number;
  readonly after: number;
}

export function rowWindow({ count, rowHeight, scrollTop, viewportHeight, overscan }: WindowInput): RowWindow {
  if (count <= 0 || rowHeight <= 0) return { first: 0, end: 0, before: 0, after: 0 };
  const total = count * rowHeight;
  const top = Math.min(Math.max(0, scrollTop), Math.max(0, total - viewportHeight));
  const firstVisible = Math.floor(top / rowHeight);
  const lastVisible = Math.ceil((top + Math.max(0, viewportHeight)) / rowHeight);
  const first = Math.max(0, firstVisible - overscan);
  const end = Math.min(count, Math.max(lastVisible, firstVisible + 1) + overscan);
  return { first, end, before: first * rowHeight, after: (count - end) * rowHeight };
}

/** Whether the view is at the end of the list (so new rows should keep it there). */
export function atEnd(scrollTop: number, viewportHeight: number, scrollHeight: number, slack: number): boolean {
  return scrollTop + viewportHeight >= scrollHeight - slack;
}
