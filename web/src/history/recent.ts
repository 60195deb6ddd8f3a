// "Opened here" (rule 12.59): the runs started or opened in this browser, newest first, the
// last 20, and never one dropped while it is live. Kept in localStorage under one key, with
// only what names a run (namespace, name, its composition, the phase last seen, when it was
// opened): never the token, never a run's input, output or any content.
//
// The run page calls `recordOpened(run)` each time it opens or starts a run (and as its phase
// changes); the History page lists them and refreshes the phase of those still live.

import { isRecord } from '../api/http.ts';
import { isTerminal, RUN_PHASES, type Run, type RunPhase } from '../api/runs.ts';

export const RECENT_KEY = 'orrery.console.history';
export const RECENT_LIMIT = 20;

export interface RecentRun {
  readonly namespace: string;
  readonly name: string;
  /** The Composition it ran (or refers to), if known. */
  readonly composition: string | null;
  /** The phase last seen; null when it could not be read any more. */
  readonly phase: RunPhase | null;
  /** RFC 3339: when it was last started or opened here. */
  readonly openedAt: string;
}

/** What `recordOpened` needs of a run: a `Run` from the API does. */
export type OpenedRun = Pick<Run, 'namespace' | 'name' | 'phase'> & Partial<Pick<Run, 'composition' | 'compositionRef'>>;

/** Whether a run may still change: the live ones are never dropped from the list. */
export function isLive(entry: Pick<RecentRun, 'phase'>): boolean {
  return entry.phase !== null && !isTerminal(entry.phase);
}

function sameRun(a: Pick<RecentRun, 'namespace' | 'name'>, b: Pick<RecentRun, 'namespace' | 'name'>): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}

/**
 * The list as kept: newest first, each run once (its latest opening), at most `RECENT_LIMIT`;
 * past the limit the oldest finished runs go first, and a live run is never dropped (so the list
 * is longer than the limit only when more runs than that are live).
 */
export function keepRecent(entries: readonly RecentRun[], limit = RECENT_LIMIT): RecentRun[] {
  const newestFirst = [...entries].sort((a, b) => b.openedAt.localeCompare(a.openedAt));
  const unique: RecentRun[] = [];
  for (const entry of newestFirst) if (!unique.some((u) => sameRun(u, entry))) unique.push(entry);
  const live = unique.filter(isLive).length;
  let finishedRoom = Math.max(0, limit - live);
  return unique.filter((entry) => {
    if (isLive(entry)) return true;
    finishedRoom -= 1;
    return finishedRoom >= 0;
  });
}

/** The entry for a run opened (or started) at `now`. */
export function entryOf(run: OpenedRun, now: Date): RecentRun {
  return {
    namespace: run.namespace,
    name: run.name,
    composition: run.composition?.name ?? run.compositionRef?.name ?? null,
    // A run the API returns without a phase has just been created: it is live.
    phase: run.phase ?? 'Pending',
    openedAt: now.toISOString(),
  };
}

/** The list with `run` opened at `now`: first, once. */
export function withOpened(entries: readonly RecentRun[], run: OpenedRun, now: Date): RecentRun[] {
  const entry = entryOf(run, now);
  const before = entries.find((e) => sameRun(e, run));
  const opened = entry.composition === null && before !== undefined ? { ...entry, composition: before.composition } : entry;
  return keepRecent([opened, ...entries.filter((e) => !sameRun(e, run))]);
}

/** The list with a run's phase as last read (its place in the list unchanged); null: unreadable. */
export function withPhase(entries: readonly RecentRun[], run: Pick<RecentRun, 'namespace' | 'name'>, phase: RunPhase | null): RecentRun[] {
  return keepRecent(entries.map((e) => (sameRun(e, run) ? { ...e, phase } : e)));
}

/** The list without one run (Forget). */
export function without(entries: readonly RecentRun[], run: Pick<RecentRun, 'namespace' | 'name'>): RecentRun[] {
  return entries.filter((e) => !sameRun(e, run));
}

/** The stored list, leniently: an entry that is not one is left out. */
export function parseRecent(text: string | null): RecentRun[] {
  if (text === null) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  const out: RecentRun[] = [];
  for (const item of value) {
    if (!isRecord(item)) continue;
    const { namespace, name, composition, phase, openedAt } = item;
    if (typeof namespace !== 'string' || namespace === '' || typeof name !== 'string' || name === '' || typeof openedAt !== 'string') continue;
    out.push({
      namespace,
      name,
      composition: typeof composition === 'string' ? composition : null,
      phase: typeof phase === 'string' && (RUN_PHASES as readonly string[]).includes(phase) ? (phase as RunPhase) : null,
      openedAt,
    });
  }
  return keepRecent(out);
}

/** The text stored: exactly the five fields of each entry, nothing else. */
export function serializeRecent(entries: readonly RecentRun[]): string {
  return JSON.stringify(entries.map(({ namespace, name, composition, phase, openedAt }) => ({ namespace, name, composition, phase, openedAt })));
}

/** Where the list is kept (tests give their own). */
export interface RecentStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

function browserStorage(): RecentStorage | null {
  try {
    return typeof window === 'undefined' ? null : window.localStorage;
  } catch {
    return null;
  }
}

export function readRecent(storage: RecentStorage | null = browserStorage()): RecentRun[] {
  try {
    return storage === null ? [] : parseRecent(storage.getItem(RECENT_KEY));
  } catch {
    return [];
  }
}

export function writeRecent(entries: readonly RecentRun[], storage: RecentStorage | null = browserStorage()): void {
  try {
    storage?.setItem(RECENT_KEY, serializeRecent(entries));
  } catch {
    // storage refused (a private window, full): the list is simply not kept
  }
}

/** The run page's call: `run` was started or opened here just now. */
export function recordOpened(run: OpenedRun, storage: RecentStorage | null = browserStorage(), now: Date = new Date()): void {
  writeRecent(withOpened(readRecent(storage), run, now), storage);
}

/** A run's phase as last read, for a run already listed (a run not listed is not added). */
export function recordPhase(run: Pick<RecentRun, 'namespace' | 'name'>, phase: RunPhase | null, storage: RecentStorage | null = browserStorage()): void {
  const entries = readRecent(storage);
  if (!entries.some((e) => sameRun(e, run))) return;
  writeRecent(withPhase(entries, run, phase), storage);
}
