import { describe, expect, it } from 'vitest';
import { ReplayController, type ReplayEnvironment } from './controller.ts';
import { GENERATED_NODES, generatedRun } from './generated-run.ts';
import { modelAt } from './replay.ts';

/** A hand-driven clock and frame queue. */
function environment() {
  let now = 0;
  let pending: (() => void)[] = [];
  const env: ReplayEnvironment = {
    now: () => now,
    frame: (callback) => {
      pending.push(callback);
      return () => {
        pending = pending.filter((c) => c !== callback);
      };
    },
  };
  return {
    env,
    /** Lets `ms` pass, then runs the frame that was asked for. */
    frame(ms: number) {
      now += ms;
      const run = pending;
      pending = [];
      for (const callback of run) callback();
    },
    waiting: () => pending.length,
  };
}

describe('a replay being played', () => {
  const { events } = generatedRun(100); // 250 ms apart

  it('moves the model on with the clock, one frame at a time, and tells the view', () => {
    const e = environment();
    const replay = new ReplayController(events, GENERATED_NODES, 0, e.env);
    let heard = 0;
    replay.subscribe(() => (heard += 1));
    const first = replay.snapshot();
    expect(first).toMatchObject({ position: 0, length: events.length, playing: false });
    replay.play();
    expect(replay.snapshot()).toMatchObject({ position: 1, playing: true });
    expect(e.waiting()).toBe(1);
    e.frame(16);
    expect(replay.snapshot().position).toBe(1);
    e.frame(500);
    expect(replay.snapshot().position).toBe(3);
    expect(replay.snapshot().model.lastSeq).toBe(3);
    expect(heard).toBe(2);
    // the snapshot is a new object only when something changed
    const before = replay.snapshot();
    e.frame(1);
    expect(replay.snapshot()).toBe(before);
  });

  it('plays everything at once when instant, and asks for no more frames', () => {
    const e = environment();
    const replay = new ReplayController(events, GENERATED_NODES, 0, e.env);
    replay.setSpeed('instant');
    replay.play();
    expect(replay.snapshot()).toMatchObject({ position: events.length, playing: false, ended: true });
    expect(replay.snapshot().model.outcome).toBe('Succeeded');
    expect(e.waiting()).toBe(0);
  });

  it('replays instantly from the start whenever asked, keeping the speed chosen for Play, and says when it began', () => {
    const e = environment();
    const replay = new ReplayController(events, GENERATED_NODES, 0, e.env);
    replay.setSpeed(4);
    replay.seek(30);
    e.frame(1234);
    replay.instant();
    expect(replay.snapshot()).toMatchObject({ position: events.length, playing: false, ended: true, speed: 4 });
    expect(replay.snapshot().model.outcome).toBe('Succeeded');
    expect(replay.takeInstantStart()).toBe(1234);
    expect(replay.takeInstantStart()).toBeNull();
    replay.play(); // from the start again, at 4×
    expect(replay.snapshot()).toMatchObject({ position: 1, playing: true, speed: 4 });
  });

  it('rebuilds the model from the start when moved back, and matches one built directly', () => {
    const e = environment();
    const replay = new ReplayController(events, GENERATED_NODES, events.length, e.env);
    expect(replay.snapshot().model.outcome).toBe('Succeeded');
    replay.seek(40);
    const at40 = replay.snapshot();
    expect(at40.position).toBe(40);
    expect(at40.model.outcome).toBeNull();
    expect(at40.model.used).toEqual(modelAt(events, GENERATED_NODES, 40).used);
    expect([...at40.model.nodes.values()]).toEqual([...modelAt(events, GENERATED_NODES, 40).nodes.values()]);
  });

  it('stops asking for frames when paused or disposed', () => {
    const e = environment();
    const replay = new ReplayController(events, GENERATED_NODES, 0, e.env);
    replay.play();
    replay.pause();
    expect(e.waiting()).toBe(0);
    replay.toggle();
    expect(e.waiting()).toBe(1);
    replay.dispose();
    expect(e.waiting()).toBe(0);
  });
});
