// Undo and redo as a pure structure: what is now, what came before (oldest first, at most `cap`
// steps) and what an undo put aside. Edits of one `group` in a row (the keystrokes of one field)
// are one step.

export interface History<T> {
  readonly past: readonly T[];
  readonly present: T;
  readonly future: readonly T[];
  /** The group of the last step recorded, while edits of that group go on. */
  readonly group: string | null;
}

/** How many steps undo can go back by default. */
export const HISTORY_CAP = 100;

export function historyOf<T>(present: T): History<T> {
  return { past: [], present, future: [], group: null };
}

/**
 * `next` as what is now, the present one step back; what was undone is gone. With the `group`
 * of the step before, it replaces the present instead (one step for a run of keystrokes).
 */
export function record<T>(history: History<T>, next: T, options: { readonly group?: string | null; readonly cap?: number } = {}): History<T> {
  const group = options.group ?? null;
  if (group !== null && group === history.group && history.future.length === 0) return { ...history, present: next };
  const cap = options.cap ?? HISTORY_CAP;
  const past = [...history.past, history.present];
  return { past: past.slice(Math.max(0, past.length - cap)), present: next, future: [], group };
}

export function undo<T>(history: History<T>): History<T> {
  const previous = history.past.at(-1);
  if (previous === undefined) return history;
  return { past: history.past.slice(0, -1), present: previous, future: [history.present, ...history.future], group: null };
}

export function redo<T>(history: History<T>): History<T> {
  const [next, ...rest] = history.future;
  if (next === undefined) return history;
  return { past: [...history.past, history.present], present: next, future: rest, group: null };
}

export function canUndo(history: History<unknown>): boolean {
  return history.past.length > 0;
}

export function canRedo(history: History<unknown>): boolean {
  return history.future.length > 0;
}

/** Every step, past, present and future, changed by `change` (the history's shape stays). */
export function mapHistory<T>(history: History<T>, change: (step: T) => T): History<T> {
  return { ...history, past: history.past.map(change), present: change(history.present), future: history.future.map(change) };
}
