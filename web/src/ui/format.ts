// How the console writes numbers, times and durations: one home, so every page agrees.

const integer = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });

/** 12,345 */
export function formatCount(n: number): string {
  return integer.format(n);
}

/** 850 ms, 12.4 s, 3 min 05 s, 2 h 07 min */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const totalSeconds = Math.round(s);
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 60) return `${minutes} min ${String(totalSeconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** Milliseconds between two RFC 3339 times, or null when either is missing or unreadable. */
export function between(start: string | null, end: string | null): number | null {
  if (start === null || end === null) return null;
  const a = Date.parse(start);
  const b = Date.parse(end);
  return Number.isNaN(a) || Number.isNaN(b) ? null : b - a;
}

/** 2026-12-05 10:15:03 UTC: absolute and unambiguous (timestamps are UTC on the wire). */
export function formatTime(rfc3339: string | null): string {
  if (rfc3339 === null) return '–';
  const t = Date.parse(rfc3339);
  if (Number.isNaN(t)) return rfc3339;
  return `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A signed difference: "+120", "−3", "0" (a real minus sign). */
export function formatDelta(n: number, unit: (v: number) => string = formatCount): string {
  if (n === 0) return unit(0);
  return n > 0 ? `+${unit(n)}` : `−${unit(-n)}`;
}
