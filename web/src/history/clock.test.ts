import { describe, expect, it } from 'vitest';
import { GAP_CAP_MS, ReplayClock, timelineOf } from './clock.ts';

/** Events at these offsets (ms) after 10:00:00. */
function at(...offsets: number[]): { ts: string }[] {
  return offsets.map((ms) => ({ ts: new Date(Date.UTC(2026, 11, 5, 10, 0, 0) + ms).toISOString() }));
}

/** A clock over `events` with a hand-driven time source. */
function clockOver(events: { ts: string }[]) {
  let now = 1_000_000;
  const clock = new ReplayClock(timelineOf(events), () => now);
  return {
    clock,
    advance: (ms: number): number => {
      now += ms;
      return clock.tick();
    },
  };
}

describe('the replay timeline', () => {
  it('spaces events as recorded, with idle gaps cut to 2 s and counted', () => {
    const timeline = timelineOf(at(0, 100, 600, 60_600, 60_700));
    expect(timeline.dueMs).toEqual([0, 100, 600, 600 + GAP_CAP_MS, 700 + GAP_CAP_MS]);
    expect(timeline.cappedGaps).toBe(1);
    expect(timeline.totalMs).toBe(2700);
  });

  it('treats an unreadable or backwards time as no gap', () => {
    expect(timelineOf([...at(0, 500), { ts: 'not a time' }, ...at(400, 900)]).dueMs).toEqual([0, 500, 500, 500, 1000]);
  });
});

describe('the replay clock', () => {
  const events = at(0, 1000, 2000, 3000, 4000);

  it('stands still at the start until played', () => {
    const { clock, advance } = clockOver(events);
    expect(advance(10_000)).toBe(0);
    expect(clock.state()).toEqual({ position: 0, playing: false, speed: 1, ended: false });
  });

  it('plays at 1× on the recorded spacing', () => {
    const { clock, advance } = clockOver(events);
    clock.play();
    expect(clock.tick()).toBe(1); // the first event is due at once
    expect(advance(999)).toBe(1);
    expect(clock.untilNext()).toBe(1);
    expect(advance(1)).toBe(2);
    expect(advance(2000)).toBe(4);
    expect(advance(1000)).toBe(5);
    expect(clock.state()).toMatchObject({ playing: false, ended: true });
  });

  it('plays at 4× four times as fast', () => {
    const { clock, advance } = clockOver(events);
    clock.setSpeed(4);
    clock.play();
    expect(clock.untilNext()).toBe(250);
    expect(advance(250)).toBe(2);
    expect(advance(500)).toBe(4);
  });

  it('plays everything at once when instant', () => {
    const { clock } = clockOver(events);
    clock.setSpeed('instant');
    clock.play();
    expect(clock.state()).toMatchObject({ position: 5, playing: false, ended: true });
  });

  it('turns instant mid-play and finishes at once', () => {
    const { clock, advance } = clockOver(events);
    clock.play();
    expect(advance(1500)).toBe(2);
    clock.setSpeed('instant');
    expect(clock.state().position).toBe(5);
  });

  it('changes speed mid-play from where it stands', () => {
    const { clock, advance } = clockOver(events);
    clock.play();
    expect(advance(1500)).toBe(2); // replay time 1500
    clock.setSpeed(4);
    expect(advance(125)).toBe(3); // 1500 + 4 × 125 = 2000
  });

  it('stops the time while paused and goes on from there', () => {
    const { clock, advance } = clockOver(events);
    clock.play();
    expect(advance(1500)).toBe(2);
    clock.pause();
    expect(clock.replayMs()).toBe(1500);
    expect(advance(60_000)).toBe(2);
    expect(clock.untilNext()).toBeNull();
    clock.play();
    expect(advance(499)).toBe(2);
    expect(advance(1)).toBe(3);
  });

  it('seeks to any position, as if the events before it had just played, paused or playing', () => {
    const { clock, advance } = clockOver(events);
    clock.seek(3);
    expect(clock.state()).toMatchObject({ position: 3, playing: false });
    clock.play();
    expect(advance(999)).toBe(3);
    expect(advance(1)).toBe(4);
    clock.seek(1); // backwards while playing
    expect(clock.state()).toMatchObject({ position: 1, playing: true });
    expect(advance(1000)).toBe(2);
    clock.seek(99);
    expect(clock.state()).toMatchObject({ position: 5, playing: false, ended: true });
    clock.seek(-4);
    expect(clock.state().position).toBe(0);
  });

  it('plays again from the start once it has ended', () => {
    const { clock, advance } = clockOver(events);
    clock.seek(5);
    clock.play();
    expect(clock.state()).toMatchObject({ position: 1, playing: true });
    expect(advance(1000)).toBe(2);
  });

  it('waits at most 2 s of replay time over a long idle gap', () => {
    const { clock, advance } = clockOver(at(0, 600_000));
    clock.play();
    expect(advance(1999)).toBe(1);
    expect(advance(1)).toBe(2);
  });

  it('has nothing to play for a run without events', () => {
    const { clock } = clockOver([]);
    clock.play();
    expect(clock.state()).toEqual({ position: 0, playing: false, speed: 1, ended: true });
  });
});
