import { describe, expect, it } from 'vitest';
import { arrowHead, halfway, roundedPath } from './route-path.ts';

describe('an edge drawn along its route', () => {
  it('goes straight between two points, stopping short of the end for the arrowhead', () => {
    expect(roundedPath([{ x: 0, y: 10 }, { x: 100, y: 10 }])).toBe('M 0 10 L 100 10');
    expect(roundedPath([{ x: 0, y: 10 }, { x: 100, y: 10 }], 8, 9)).toBe('M 0 10 L 91 10');
  });

  it('rounds each bend of a loop going around, less where a segment is short', () => {
    const loop = [
      { x: 100, y: 50 },
      { x: 120, y: 50 },
      { x: 120, y: 150 },
      { x: 0, y: 150 },
      { x: 0, y: 50 },
      { x: 10, y: 50 },
    ];
    expect(roundedPath(loop)).toBe('M 100 50 L 112 50 Q 120 50 120 58 L 120 142 Q 120 150 112 150 L 8 150 Q 0 150 0 142 L 0 55 Q 0 50 5 50 L 10 50');
  });

  it('points the arrowhead along the last segment', () => {
    expect(arrowHead([{ x: 0, y: 0 }, { x: 100, y: 0 }], 10)).toBe('100,0 90,5 90,-5');
    expect(arrowHead([{ x: 0, y: 100 }, { x: 0, y: 0 }], 10)).toBe('0,0 5,10 -5,10');
  });

  it('finds the point halfway along a bent route', () => {
    expect(halfway([{ x: 0, y: 0 }, { x: 100, y: 0 }, { x: 100, y: 100 }])).toEqual({ x: 100, y: 0 });
    expect(halfway([{ x: 0, y: 0 }, { x: 60, y: 0 }, { x: 60, y: 20 }])).toEqual({ x: 40, y: 0 });
  });
});
