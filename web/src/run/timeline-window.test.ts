import { describe, expect, it } from 'vitest';
import { atEnd, rowWindow } from './timeline-window.ts';

const base = { rowHeight: 28, viewportHeight: 280, overscan: 5 };

describe('the timeline draws only the rows in view', () => {
  it('draws the first screen and the overscan below it at the top of a long list', () => {
    expect(rowWindow({ ...base, count: 2000, scrollTop: 0 })).toEqual({ first: 0, end: 15, before: 0, after: (2000 - 15) * 28 });
  });

  it('draws a screen and the overscan on both sides in the middle, with spacers that keep the total height', () => {
    const w = rowWindow({ ...base, count: 2000, scrollTop: 28 * 1000 + 14 });
    expect(w).toEqual({ first: 995, end: 1016, before: 995 * 28, after: (2000 - 1016) * 28 });
    expect(w.before + (w.end - w.first) * 28 + w.after).toBe(2000 * 28);
  });

  it('draws the last rows when scrolled to (or past) the end', () => {
    const w = rowWindow({ ...base, count: 2000, scrollTop: 10_000_000 });
    expect(w.end).toBe(2000);
    expect(w.first).toBe(2000 - 10 - 5);
    expect(w.after).toBe(0);
  });

  it('draws every row of a list shorter than the view, and nothing of an empty one', () => {
    expect(rowWindow({ ...base, count: 3, scrollTop: 0 })).toEqual({ first: 0, end: 3, before: 0, after: 0 });
    expect(rowWindow({ ...base, count: 0, scrollTop: 0 })).toEqual({ first: 0, end: 0, before: 0, after: 0 });
  });

  it('draws a few rows even before the view has a height', () => {
    expect(rowWindow({ ...base, viewportHeight: 0, count: 100, scrollTop: 0 })).toEqual({ first: 0, end: 6, before: 0, after: 94 * 28 });
  });

  it('knows when the view is at the end, within a row', () => {
    expect(atEnd(720, 280, 1000, 28)).toBe(true);
    expect(atEnd(700, 280, 1000, 28)).toBe(true);
    expect(atEnd(600, 280, 1000, 28)).toBe(false);
  });
});
