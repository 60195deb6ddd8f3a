import { describe, expect, it } from 'vitest';
import { between, formatDelta, formatDuration, formatTime } from './format.ts';

describe('the console writes', () => {
  it('durations in the largest unit that keeps them readable', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(1234)).toBe('1.23 s');
    expect(formatDuration(12_400)).toBe('12.4 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
    expect(formatDuration(7_620_000)).toBe('2 h 07 min');
    expect(formatDuration(-1)).toBe('–');
  });

  it('times as UTC, and the time between two of them', () => {
    expect(formatTime('2026-12-05T10:15:03.120Z')).toBe('2026-12-05 10:15:03 UTC');
    expect(formatTime(null)).toBe('–');
    expect(between('2026-12-05T10:00:00Z', '2026-12-05T10:00:02.500Z')).toBe(2500);
    expect(between(null, '2026-12-05T10:00:00Z')).toBeNull();
  });

  it('differences with their sign', () => {
    expect(formatDelta(120)).toBe('+120');
    expect(formatDelta(-3)).toBe('−3');
    expect(formatDelta(0)).toBe('0');
  });
});
