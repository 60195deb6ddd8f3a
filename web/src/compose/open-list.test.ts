import { describe, expect, it } from 'vitest';
import type { Revision } from '../api/revisions.ts';
import { byLastChange, compareRevisions, defaultPair, lastChange, matchesFilter } from './open-list.ts';

const made = (name: string, created: string, description = '') => ({ name, created, description });

describe('the Open dialog lists Compositions newest first by their last change (12.56)', () => {
  it.each<[string, ReturnType<typeof made>[], Record<string, string>, string[]]>([
    ['made long ago but changed today goes first', [made('fresh', '2026-12-05T00:00:00Z'), made('old', '2026-11-01T00:00:00Z')], { old: '2026-12-06T00:00:00Z' }, ['old', 'fresh']],
    ['with no times known, by when each was made', [made('a', '2026-12-01T00:00:00Z'), made('b', '2026-12-03T00:00:00Z')], {}, ['b', 'a']],
    ['a change time wins over a later creation of another', [made('a', '2026-12-01T00:00:00Z'), made('b', '2026-12-03T00:00:00Z')], { a: '2026-12-04T00:00:00Z', b: '2026-12-03T00:00:00Z' }, ['a', 'b']],
    ['equal times by name', [made('zeta', '2026-12-01T00:00:00Z'), made('alpha', '2026-12-01T00:00:00Z')], {}, ['alpha', 'zeta']],
    ['an unreadable time last', [made('nowhen', ''), made('b', '2026-12-03T00:00:00Z'), made('garbled', 'yesterday')], {}, ['b', 'garbled', 'nowhen']],
    ['times in other offsets by the instant, not the text', [made('a', '2026-12-01T10:00:00+02:00'), made('b', '2026-12-01T09:00:00Z')], {}, ['b', 'a']],
  ])('%s', (_, items, times, order) => {
    expect(byLastChange(items, new Map(Object.entries(times))).map((c) => c.name)).toEqual(order);
  });

  it('takes the last change from the current revision’s time, else when it was made', () => {
    expect(lastChange(made('a', '2026-12-01T00:00:00Z'), new Map([['a', '2026-12-09T00:00:00Z']]))).toBe('2026-12-09T00:00:00Z');
    expect(lastChange(made('a', '2026-12-01T00:00:00Z'), new Map())).toBe('2026-12-01T00:00:00Z');
  });

  it.each([
    ['', true],
    ['  ', true],
    ['release', true],
    ['RELEASE', true],
    ['weekly', true],
    ['Weekly Summary', true],
    ['other', false],
  ])('the filter %j matches release-notes ("The weekly summary"): %s', (filter, expected) => {
    expect(matchesFilter({ name: 'release-notes', description: 'The weekly summary' }, filter)).toBe(expected);
  });
});

const revision = (n: number, spec: Record<string, unknown>): Revision => ({ revision: n, created: `2026-12-0${n}T00:00:00Z`, digest: `${n}`.repeat(64), spec });
const one = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'Draft.' }] };
const two = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'Draft the notes.' }] };
const three = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'Draft the notes.' }, { id: 'b', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'b' }] };
const kept = [revision(3, three), revision(2, two), revision(1, one)];

describe('two revisions compared (12.56)', () => {
  it('first compares the one before the newest with the newest', () => {
    expect(defaultPair(kept)).toEqual([2, 3]);
    expect(defaultPair([revision(1, one)])).toBeNull();
    expect(defaultPair([])).toBeNull();
  });

  it.each<[string, number, number, number, number]>([
    ['picked older first', 1, 3, 1, 3],
    ['picked newer first', 3, 1, 1, 3],
    ['neighbours', 2, 1, 1, 2],
  ])('reads older to newer whichever was %s', (_, a, b, older, newer) => {
    const compared = compareRevisions(kept, a, b);
    expect(compared.kind === 'diff' ? [compared.older.revision, compared.newer.revision] : compared).toEqual([older, newer]);
  });

  it('says what changed from the older to the newer, in canvas/diff.ts’s lines', () => {
    expect(compareRevisions(kept, 3, 1)).toMatchObject({
      kind: 'diff',
      lines: ['node b added', 'node a: instruction: "Draft." → "Draft the notes."', 'edge a → b added'],
    });
  });

  it('finds nothing to say between two revisions with the same spec', () => {
    expect(compareRevisions([revision(2, one), revision(1, one)], 1, 2)).toMatchObject({ kind: 'diff', lines: [] });
  });

  it('tells a revision picked twice, and one not kept', () => {
    expect(compareRevisions(kept, 2, 2)).toEqual({ kind: 'same-pick', revision: 2 });
    expect(compareRevisions(kept, 2, 9)).toEqual({ kind: 'missing', revision: 9 });
    expect(compareRevisions(kept, 9, 2)).toEqual({ kind: 'missing', revision: 9 });
  });
});
