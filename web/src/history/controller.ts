// Drives a replay: the clock says how many events are due, the model is moved there (forwards
// by applying, backwards by rebuilding from the start), and the view hears of it at most once
// per animation frame. A store for `useSyncExternalStore`: `snapshot()` is the same object until
// something changes. Time and frames are injected, so it runs in tests without a browser.

import type { TraceEvent } from '../api/trace.ts';
import type { RunModel } from '../run/model.ts';
import { ReplayClock, timelineOf, type Speed, type Timeline } from './clock.ts';
import { modelAt, moveModel, type SpecNode } from './replay.ts';

export interface ReplaySnapshot {
  /** Events applied (0 to `length`). */
  readonly position: number;
  readonly length: number;
  readonly playing: boolean;
  readonly speed: Speed;
  readonly ended: boolean;
  /** Mutated in place as the replay goes forwards: read it with `version`. */
  readonly model: RunModel;
  /** Bumped by every change. */
  readonly version: number;
}

export interface ReplayEnvironment {
  readonly now: () => number;
  /** Calls back before the next frame; returns how to cancel. */
  readonly frame: (callback: () => void) => () => void;
}

function browserEnvironment(): ReplayEnvironment {
  return {
    now: () => performance.now(),
    frame: (callback) => {
      const id = requestAnimationFrame(callback);
      return () => {
        cancelAnimationFrame(id);
      };
    },
  };
}

export class ReplayController {
  readonly timeline: Timeline;
  private readonly clock: ReplayClock;
  private model: RunModel;
  private applied: number;
  private version = 0;
  private current: ReplaySnapshot;
  private readonly listeners = new Set<() => void>();
  private cancelFrame: (() => void) | null = null;
  private readonly env: ReplayEnvironment;
  private instantStartedAt: number | null = null;

  constructor(
    private readonly events: readonly TraceEvent[],
    private readonly specNodes: readonly SpecNode[],
    initialPosition = 0,
    env?: ReplayEnvironment,
  ) {
    this.env = env ?? browserEnvironment();
    this.timeline = timelineOf(events);
    this.clock = new ReplayClock(this.timeline, this.env.now);
    this.clock.seek(initialPosition);
    this.applied = this.clock.state().position;
    this.model = modelAt(events, specNodes, this.applied);
    this.current = this.build();
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  readonly snapshot = (): ReplaySnapshot => this.current;

  play(): void {
    this.clock.play();
    this.step();
  }

  /**
   * Replays the whole run at once, from the start: the model is rebuilt and shown in one go. The
   * speed chosen for Play stays. `instantStartedAt` says when it began (for the page's measure).
   */
  instant(): void {
    this.instantStartedAt = this.env.now();
    const speed = this.clock.state().speed;
    this.clock.seek(0);
    this.clock.setSpeed('instant');
    this.clock.play();
    this.step();
    this.clock.setSpeed(speed === 'instant' ? 1 : speed);
    this.step();
  }

  /** When the last instant replay began (`now()`'s time), once: taking it clears it. */
  takeInstantStart(): number | null {
    const started = this.instantStartedAt;
    this.instantStartedAt = null;
    return started;
  }

  pause(): void {
    this.clock.pause();
    this.step();
  }

  toggle(): void {
    if (this.clock.state().playing) this.pause();
    else this.play();
  }

  setSpeed(speed: Speed): void {
    this.clock.setSpeed(speed);
    this.step();
  }

  seek(position: number): void {
    this.clock.seek(position);
    this.step();
  }

  /** Stops asking for frames (the view is gone); playing goes on only when asked again. */
  dispose(): void {
    this.cancelFrame?.();
    this.cancelFrame = null;
    this.clock.pause();
  }

  /** Catches the model up with the clock, tells the view, and asks for another frame while playing. */
  private step(): void {
    this.cancelFrame?.();
    this.cancelFrame = null;
    const target = this.clock.tick();
    if (target !== this.applied) {
      this.model = moveModel(this.model, this.events, this.specNodes, this.applied, target);
      this.applied = target;
    }
    const state = this.clock.state();
    if (state.position !== this.current.position || state.playing !== this.current.playing || state.speed !== this.current.speed || this.model !== this.current.model) {
      this.current = this.build();
      for (const listener of this.listeners) listener();
    }
    if (state.playing) {
      this.cancelFrame = this.env.frame(() => {
        this.cancelFrame = null;
        this.step();
      });
    }
  }

  private build(): ReplaySnapshot {
    this.version += 1;
    const state = this.clock.state();
    return { position: this.applied, length: this.events.length, playing: state.playing, speed: state.speed, ended: state.ended, model: this.model, version: this.version };
  }
}
