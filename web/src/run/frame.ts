// At most one re-render per animation frame, however many events arrive: a live run can send
// 2,000 events a second, and the model takes each at once (O(1)), but the page is drawn again
// only on the next frame after a change, once. A hidden tab gets no frames; its model keeps up
// and the page catches up in one render when it is shown again.

/** How frames are asked for: the browser's `requestAnimationFrame`, or a test's. */
export interface Frames {
  request(callback: () => void): number;
  cancel(handle: number): void;
}

export function browserFrames(): Frames {
  return {
    request: (callback) => window.requestAnimationFrame(() => {
      callback();
    }),
    cancel: (handle) => {
      window.cancelAnimationFrame(handle);
    },
  };
}

export interface FrameBatcher {
  /** Something changed: `flush` runs on the next frame (once, whatever the count of calls before it). */
  mark(): void;
  /** Runs `flush` now if a change waits (and drops the frame asked for). */
  flushNow(): void;
  /** Drops a waiting frame; later marks do nothing. */
  dispose(): void;
}

export function frameBatcher(flush: () => void, frames: Frames): FrameBatcher {
  let handle: number | null = null;
  let disposed = false;
  const run = (): void => {
    handle = null;
    if (!disposed) flush();
  };
  return {
    mark() {
      if (disposed || handle !== null) return;
      handle = frames.request(run);
    },
    flushNow() {
      if (handle === null || disposed) return;
      frames.cancel(handle);
      run();
    },
    dispose() {
      disposed = true;
      if (handle !== null) frames.cancel(handle);
      handle = null;
    },
  };
}
