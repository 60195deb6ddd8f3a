import { describe, expect, it } from 'vitest';
import { canRedo, canUndo, historyOf, mapHistory, record, redo, undo, type History } from './history.ts';

function steps(...values: number[]): History<number> {
  let h = historyOf(0);
  for (const v of values) h = record(h, v);
  return h;
}

describe('the undo history', () => {
  it('starts with nothing to undo or redo', () => {
    const h = historyOf('a');
    expect([canUndo(h), canRedo(h)]).toEqual([false, false]);
  });

  it('goes back and forth through what was recorded', () => {
    const h = steps(1, 2, 3);
    expect(undo(h).present).toBe(2);
    expect(undo(undo(h)).present).toBe(1);
    expect(redo(undo(undo(h))).present).toBe(2);
    expect(redo(redo(undo(undo(h))))).toEqual(h);
  });

  it('forgets what was undone once something new is recorded', () => {
    const h = record(undo(undo(steps(1, 2, 3))), 9);
    expect(h.present).toBe(9);
    expect(canRedo(h)).toBe(false);
    expect(h.past).toEqual([0, 1]);
  });

  it('keeps at most its cap of steps, dropping the oldest', () => {
    let h = historyOf(0);
    for (let i = 1; i <= 5; i++) h = record(h, i, { cap: 3 });
    expect(h.past).toEqual([2, 3, 4]);
    expect(undo(undo(undo(undo(h)))).present).toBe(2);
  });

  it('is the same history when there is nothing to undo or redo', () => {
    const h = historyOf(1);
    expect(undo(h)).toBe(h);
    expect(redo(h)).toBe(h);
  });

  it('makes a run of edits of one group one step', () => {
    let h = historyOf('');
    for (const text of ['h', 'he', 'hey']) h = record(h, text, { group: 'instruction' });
    h = record(h, 'x', { group: 'tools' });
    expect(h.past).toEqual(['', 'hey']);
    expect(undo(h).present).toBe('hey');
    expect(undo(undo(h)).present).toBe('');
  });

  it('starts a new step for the same group after an undo', () => {
    const h = record(undo(record(record(historyOf('a'), 'b', { group: 'g' }), 'c', { group: 'other' })), 'd', { group: 'g' });
    expect(h.past).toEqual(['a', 'b']);
    expect(h.present).toBe('d');
  });

  it('maps every step, keeping where it stands', () => {
    const h = mapHistory(undo(steps(1, 2)), (n) => n * 10);
    expect(h).toEqual({ past: [0], present: 10, future: [20], group: null });
  });
});
