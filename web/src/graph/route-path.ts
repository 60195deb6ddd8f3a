// SVG geometry of an edge drawn along ELK's route: the path through its bend points with the
// corners rounded, the arrowhead at its end, and the point halfway along it (where a count
// goes on an edge with no label).

export interface Point {
  readonly x: number;
  readonly y: number;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function towards(from: Point, to: Point, distance: number): Point {
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  const length = Math.hypot(dx, dy);
  if (length === 0) return from;
  return { x: from.x + (dx / length) * distance, y: from.y + (dy / length) * distance };
}

/**
 * An SVG path through `points`, each corner rounded with `radius` (less where the segments are
 * short), ending `inset` px before the last point (where the arrowhead's tip then sits).
 */
export function roundedPath(points: readonly Point[], radius = 8, inset = 0): string {
  if (points.length < 2) return '';
  const pts = [...points];
  const last = pts[pts.length - 1];
  const before = pts[pts.length - 2];
  if (last !== undefined && before !== undefined && inset > 0) pts[pts.length - 1] = towards(last, before, Math.min(inset, Math.hypot(last.x - before.x, last.y - before.y)));
  const first = pts[0];
  if (first === undefined) return '';
  let d = `M ${round(first.x)} ${round(first.y)}`;
  for (let i = 1; i < pts.length - 1; i += 1) {
    const prev = pts[i - 1];
    const corner = pts[i];
    const next = pts[i + 1];
    if (prev === undefined || corner === undefined || next === undefined) continue;
    const r = Math.min(radius, Math.hypot(corner.x - prev.x, corner.y - prev.y) / 2, Math.hypot(next.x - corner.x, next.y - corner.y) / 2);
    const a = towards(corner, prev, r);
    const b = towards(corner, next, r);
    d += ` L ${round(a.x)} ${round(a.y)} Q ${round(corner.x)} ${round(corner.y)} ${round(b.x)} ${round(b.y)}`;
  }
  const end = pts[pts.length - 1];
  if (end !== undefined) d += ` L ${round(end.x)} ${round(end.y)}`;
  return d;
}

/** The arrowhead's three corners (an SVG `points` list), its tip at the route's end. */
export function arrowHead(points: readonly Point[], size = 9): string {
  const tip = points[points.length - 1];
  const from = points[points.length - 2];
  if (tip === undefined || from === undefined) return '';
  const dx = tip.x - from.x;
  const dy = tip.y - from.y;
  const length = Math.hypot(dx, dy) || 1;
  const ux = dx / length;
  const uy = dy / length;
  const back = { x: tip.x - ux * size, y: tip.y - uy * size };
  const half = size / 2;
  const left = { x: back.x - uy * half, y: back.y + ux * half };
  const right = { x: back.x + uy * half, y: back.y - ux * half };
  return [tip, left, right].map((p) => `${round(p.x)},${round(p.y)}`).join(' ');
}

/** The point halfway along the route. */
export function halfway(points: readonly Point[]): Point {
  const lengths: number[] = [];
  let total = 0;
  for (let i = 1; i < points.length; i += 1) {
    const a = points[i - 1];
    const b = points[i];
    const l = a === undefined || b === undefined ? 0 : Math.hypot(b.x - a.x, b.y - a.y);
    lengths.push(l);
    total += l;
  }
  let left = total / 2;
  for (let i = 1; i < points.length; i += 1) {
    const a = points[i - 1];
    const b = points[i];
    const l = lengths[i - 1] ?? 0;
    if (a === undefined || b === undefined) continue;
    if (left <= l) return towards(a, b, left);
    left -= l;
  }
  return points[0] ?? { x: 0, y: 0 };
}
