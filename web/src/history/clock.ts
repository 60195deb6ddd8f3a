// The replay clock (rule 12.63): which of a finished run's stored events are due, as time goes
// by, at 1× (the events' recorded spacing, `ts`), 4×, or all at once ("instant"); played,
// paused, and moved to any position. Idle gaps (a person deciding, a slow model) are capped at
// 2 s of replay time, and the page says so. Pure: time comes from an injected `now`, so tests
// drive it by hand; the page calls `tick()` once per animation frame.
//
// A position is a number of events applied: 0 (none yet) to the number of events (the end).

export type Speed = 1 | 4 | 'instant';

/** The speeds Play offers; "instant" is its own button (everything at once, from the start). */
export const PLAY_SPEEDS: readonly { readonly speed: 1 | 4; readonly label: string }[] = [
  { speed: 1, label: '1×' },
  { speed: 4, label: '4×' },
];

/** The longest wait between two events at 1× (ms of replay time). */
export const GAP_CAP_MS = 2000;

export interface Timeline {
  /** When each event is due, in ms of replay time after the first one (gaps capped). */
  readonly dueMs: readonly number[];
  /** How many gaps were cut to the cap. */
  readonly cappedGaps: number;
  /** The replay time of the whole run (1×). */
  readonly totalMs: number;
}

/** When each event is due at 1×: its `ts` spacing, each gap at most `capMs` (an unreadable or backwards `ts` is no gap). */
export function timelineOf(events: readonly { readonly ts: string }[], capMs = GAP_CAP_MS): Timeline {
  const dueMs: number[] = [];
  let cappedGaps = 0;
  let at = 0;
  let previous = Number.NaN;
  for (const event of events) {
    const ts = Date.parse(event.ts);
    if (!Number.isNaN(previous) && !Number.isNaN(ts)) {
      const gap = Math.max(0, ts - previous);
      if (gap > capMs) cappedGaps += 1;
      at += Math.min(gap, capMs);
    }
    if (!Number.isNaN(ts)) previous = ts;
    dueMs.push(at);
  }
  return { dueMs, cappedGaps, totalMs: at };
}

export interface ClockState {
  readonly position: number;
  readonly playing: boolean;
  readonly speed: Speed;
  /** Whether every event has been played. */
  readonly ended: boolean;
}

export class ReplayClock {
  private position = 0;
  private playing = false;
  private speed: Speed = 1;
  /** The replay time (ms) at the real time `anchorNow`. */
  private anchorReplay = 0;
  private anchorNow: number;

  constructor(
    private readonly timeline: Timeline,
    private readonly now: () => number,
  ) {
    this.anchorNow = now();
  }

  get length(): number {
    return this.timeline.dueMs.length;
  }

  state(): ClockState {
    return { position: this.position, playing: this.playing, speed: this.speed, ended: this.position >= this.length };
  }

  /** The replay time now (ms, 1× scale): frozen while paused. */
  replayMs(): number {
    if (!this.playing || this.speed === 'instant') return this.anchorReplay;
    return this.anchorReplay + (this.now() - this.anchorNow) * this.speed;
  }

  /** Plays from where it stands; at the end, from the start again. */
  play(): void {
    if (this.playing) return;
    if (this.position >= this.length) this.seek(0);
    this.anchor(this.anchorReplay);
    this.playing = true;
    this.tick();
  }

  pause(): void {
    if (!this.playing) return;
    this.tick();
    this.anchor(this.replayMs());
    this.playing = false;
  }

  setSpeed(speed: Speed): void {
    if (speed === this.speed) return;
    this.anchor(this.replayMs());
    this.speed = speed;
    if (this.playing) this.tick();
  }

  /** Stands at `position` (clamped), as if the events before it had just been played. */
  seek(position: number): void {
    this.position = Math.max(0, Math.min(this.length, Math.round(position)));
    this.anchor(this.position === 0 ? 0 : (this.timeline.dueMs[this.position - 1] ?? 0));
    if (this.position >= this.length) this.playing = false;
  }

  /** The position due now; playing stops at the end. */
  tick(): number {
    if (!this.playing) return this.position;
    if (this.speed === 'instant') {
      this.position = this.length;
    } else {
      const replay = this.replayMs();
      const due = this.timeline.dueMs;
      while (this.position < due.length && (due[this.position] ?? Infinity) <= replay) this.position += 1;
    }
    if (this.position >= this.length) {
      this.anchor(this.timeline.totalMs);
      this.playing = false;
    }
    return this.position;
  }

  /** Real ms until the next event is due, or null when none will come without a press. */
  untilNext(): number | null {
    if (!this.playing || this.position >= this.length) return null;
    if (this.speed === 'instant') return 0;
    const next = this.timeline.dueMs[this.position] ?? 0;
    return Math.max(0, (next - this.replayMs()) / this.speed);
  }

  private anchor(replayMs: number): void {
    this.anchorReplay = replayMs;
    this.anchorNow = this.now();
  }
}
