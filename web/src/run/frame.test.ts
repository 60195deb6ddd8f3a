import { describe, expect, it } from 'vitest';
import { frameBatcher, type Frames } from './frame.ts';

/** Frames that come when the test says. */
class TestFrames implements Frames {
  private next = 1;
  readonly waiting = new Map<number, () => void>();
  request(callback: () => void): number {
    const handle = this.next;
    this.next += 1;
    this.waiting.set(handle, callback);
    return handle;
  }
  cancel(handle: number): void {
    this.waiting.delete(handle);
  }
  tick(): void {
    const due = [...this.waiting.values()];
    this.waiting.clear();
    for (const callback of due) callback();
  }
}

describe('re-rendering once a frame', () => {
  it('asks for one frame however many changes come before it, and flushes once on it', () => {
    const frames = new TestFrames();
    let flushes = 0;
    const batcher = frameBatcher(() => (flushes += 1), frames);
    for (let i = 0; i < 2000; i += 1) batcher.mark();
    expect(frames.waiting.size).toBe(1);
    expect(flushes).toBe(0);
    frames.tick();
    expect(flushes).toBe(1);
    frames.tick();
    expect(flushes).toBe(1);
  });

  it('asks for the next frame after a flush, only when something changed again', () => {
    const frames = new TestFrames();
    let flushes = 0;
    const batcher = frameBatcher(() => (flushes += 1), frames);
    batcher.mark();
    frames.tick();
    expect(frames.waiting.size).toBe(0);
    batcher.mark();
    batcher.mark();
    frames.tick();
    expect(flushes).toBe(2);
  });

  it('flushes at once when asked, dropping the frame it had asked for', () => {
    const frames = new TestFrames();
    let flushes = 0;
    const batcher = frameBatcher(() => (flushes += 1), frames);
    batcher.flushNow();
    expect(flushes).toBe(0);
    batcher.mark();
    batcher.flushNow();
    expect(flushes).toBe(1);
    expect(frames.waiting.size).toBe(0);
  });

  it('never flushes after it is disposed (the view unmounted)', () => {
    const frames = new TestFrames();
    let flushes = 0;
    const batcher = frameBatcher(() => (flushes += 1), frames);
    batcher.mark();
    batcher.dispose();
    expect(frames.waiting.size).toBe(0);
    batcher.mark();
    frames.tick();
    expect(flushes).toBe(0);
  });
});
