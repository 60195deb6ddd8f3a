import { describe, expect, it } from 'vitest';
import type { RunPhase } from '../api/runs.ts';
import { keepRecent, parseRecent, readRecent, RECENT_KEY, RECENT_LIMIT, recordOpened, recordPhase, serializeRecent, withOpened, without, type RecentRun, type RecentStorage } from './recent.ts';

function at(minute: number): string {
  return new Date(Date.UTC(2026, 11, 5, 10, minute)).toISOString();
}

function entry(name: string, minute: number, phase: RunPhase | null = 'Succeeded'): RecentRun {
  return { namespace: 'team-a', name, composition: 'review', phase, openedAt: at(minute) };
}

class MemoryStorage implements RecentStorage {
  readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

const names = (entries: readonly RecentRun[]) => entries.map((e) => e.name);

describe('the runs opened here', () => {
  it('are listed newest first', () => {
    expect(names(keepRecent([entry('b', 2), entry('c', 3), entry('a', 1)]))).toEqual(['c', 'b', 'a']);
  });

  it('keep the last 20 and drop the oldest finished ones past that', () => {
    const many = Array.from({ length: 25 }, (_, i) => entry(`run-${i}`, i));
    const kept = keepRecent(many);
    expect(kept).toHaveLength(RECENT_LIMIT);
    expect(kept[0]?.name).toBe('run-24');
    expect(kept.at(-1)?.name).toBe('run-5');
  });

  it('never drop a live run, however old: finished ones make room for it', () => {
    const finished = Array.from({ length: 24 }, (_, i) => entry(`done-${i}`, 10 + i));
    const live = [entry('running', 1, 'Running'), entry('waiting', 2, 'AwaitingApproval'), entry('pending', 3, 'Pending')];
    const kept = keepRecent([...finished, ...live]);
    expect(kept).toHaveLength(RECENT_LIMIT);
    expect(names(kept)).toEqual(expect.arrayContaining(['running', 'waiting', 'pending']));
    expect(names(kept).slice(0, 17)).toEqual(Array.from({ length: 17 }, (_, i) => `done-${23 - i}`));
    expect(names(kept).slice(17)).toEqual(['pending', 'waiting', 'running']);
  });

  it('go past 20 only when more than 20 are live', () => {
    const live = Array.from({ length: 22 }, (_, i) => entry(`live-${i}`, i, 'Running'));
    const kept = keepRecent([...live, entry('done', 30)]);
    expect(kept).toHaveLength(22);
    expect(names(kept)).not.toContain('done');
  });

  it('hold each run once, at its latest opening, with its latest phase (and the composition known before)', () => {
    let list = withOpened([], { namespace: 'team-a', name: 'a', phase: 'Running', composition: { name: 'review', revision: 2, digest: 'd' } }, new Date(at(1)));
    list = withOpened(list, { namespace: 'team-a', name: 'b', phase: null }, new Date(at(2)));
    list = withOpened(list, { namespace: 'team-a', name: 'a', phase: 'Succeeded' }, new Date(at(3)));
    expect(list).toEqual([
      { namespace: 'team-a', name: 'a', composition: 'review', phase: 'Succeeded', openedAt: at(3) },
      // created a moment ago, without a phase yet: live
      { namespace: 'team-a', name: 'b', composition: null, phase: 'Pending', openedAt: at(2) },
    ]);
    // the same name in another namespace is another run
    expect(names(withOpened(list, { namespace: 'team-b', name: 'a', phase: 'Running' }, new Date(at(4))))).toEqual(['a', 'a', 'b']);
    expect(names(without(list, { namespace: 'team-a', name: 'a' }))).toEqual(['b']);
  });

  it('name the composition a run ran, else the one it refers to', () => {
    const list = withOpened([], { namespace: 'team-a', name: 'a', phase: 'Running', composition: null, compositionRef: { name: 'critic-loop', revision: null } }, new Date(at(1)));
    expect(list[0]?.composition).toBe('critic-loop');
  });

  it('are stored with only namespace, name, composition, phase and when; never the token or any content', () => {
    const storage = new MemoryStorage();
    const run = { namespace: 'team-a', name: 'notes.1', phase: 'Running' as const, input: 'secret input', owner: 'alice', composition: { name: 'review', revision: 3, digest: 'abc' } };
    recordOpened(run, storage, new Date(at(5)));
    const stored = storage.items.get(RECENT_KEY) ?? '';
    expect(JSON.parse(stored)).toEqual([{ namespace: 'team-a', name: 'notes.1', composition: 'review', phase: 'Running', openedAt: at(5) }]);
    expect(stored).not.toContain('secret');
    expect(stored).not.toContain('alice');
    recordPhase({ namespace: 'team-a', name: 'notes.1' }, 'Succeeded', storage);
    expect(readRecent(storage)[0]?.phase).toBe('Succeeded');
    recordPhase({ namespace: 'team-a', name: 'not-listed' }, 'Failed', storage);
    expect(readRecent(storage)).toHaveLength(1);
  });

  it('read leniently: a broken or foreign value is an empty list, a bad entry is left out', () => {
    expect(parseRecent(null)).toEqual([]);
    expect(parseRecent('{not json')).toEqual([]);
    expect(parseRecent('{"a":1}')).toEqual([]);
    const text = JSON.stringify([{ namespace: 'team-a', name: 'a', composition: 7, phase: 'Exploded', openedAt: at(1), token: 'x' }, { name: 'no-namespace', openedAt: at(2) }]);
    expect(parseRecent(text)).toEqual([{ namespace: 'team-a', name: 'a', composition: null, phase: null, openedAt: at(1) }]);
    expect(serializeRecent(parseRecent(text))).not.toContain('token');
  });

  it('survive storage that refuses (a private window)', () => {
    const refusing: RecentStorage = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('denied');
      },
    };
    expect(() => {
      recordOpened({ namespace: 'team-a', name: 'a', phase: 'Running' }, refusing);
    }).not.toThrow();
    expect(readRecent(refusing)).toEqual([]);
  });
});
