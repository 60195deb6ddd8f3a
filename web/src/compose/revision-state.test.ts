import { describe, expect, it } from 'vitest';
import { parseStored, type StoredComposition } from '../api/compositions.ts';
import type { Revision } from '../api/revisions.ts';
import type { CompositionLink } from '../canvas/store.ts';
import { currentRevision, linkTo, openedSaid, revisionNote, runPlan, saveLabel, savedSaid, showsOlderRevision, statusOnlyConflict } from './revision-state.ts';

const spec = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }] };
const stored = (generation: number | null, revision: number | null): StoredComposition => ({
  namespace: 'team-a',
  name: 'release-notes',
  resourceVersion: '48213',
  revision,
  generation,
  created: '2026-12-01T00:00:00Z',
  description: '',
  spec,
});
const rev = (n: number): Revision => ({ revision: n, created: '2026-12-02T00:00:00Z', digest: 'ab'.repeat(32), spec });
const latest: CompositionLink = { namespace: 'team-a', name: 'release-notes', revision: 5, resourceVersion: '48213' };
const older: CompositionLink = { ...latest, revision: 3, newest: 5 };

describe('the revision a Composition’s spec is', () => {
  it('is its generation, read from metadata, even when the status still names the one before (a save’s reply)', () => {
    const reply = parseStored({ metadata: { name: 'release-notes', generation: 6, resourceVersion: '9' }, spec, status: { revision: 5 } });
    expect(reply === null ? null : currentRevision(reply)).toBe(6);
  });

  it.each([
    [6, 5, 6],
    [null, 5, 5],
    [null, null, null],
  ])('generation %j and status revision %j: %j', (generation, revision, expected) => {
    expect(currentRevision({ generation, revision })).toBe(expected);
  });
});

describe('the link an open makes (12.56)', () => {
  it('links the latest as its current revision', () => {
    expect(linkTo(stored(5, 5), 'team-a')).toEqual(latest);
    expect(linkTo(stored(5, 5), 'team-a', rev(5))).toEqual(latest);
  });

  it('links an older revision with the current resourceVersion, marked with the newest', () => {
    expect(linkTo(stored(5, 5), 'team-a', rev(3))).toEqual(older);
  });

  it('marks an older revision of a Composition whose current one is not recorded yet', () => {
    expect(linkTo(stored(null, null), 'team-a', rev(3))).toEqual({ ...latest, revision: 3, newest: null });
  });

  it('takes the namespace it was opened in when the object does not say', () => {
    expect(linkTo({ ...stored(5, 5), namespace: '' }, 'team-b').namespace).toBe('team-b');
  });
});

describe('the Save button and the line beside the title (12.56)', () => {
  it.each<[string, CompositionLink | null, boolean, 'Save' | 'Restore', string | null]>([
    ['an unlinked canvas', null, false, 'Save', null],
    ['the latest revision', latest, false, 'Save', null],
    ['the latest, edited', latest, true, 'Save', null],
    ['an older revision as saved', older, false, 'Restore', 'revision 3 of 5 — Save restores it as the newest'],
    ['an older revision, edited', older, true, 'Save', 'edited from revision 3 of 5 — Save makes it the newest'],
    ['an older revision, the newest not recorded', { ...older, newest: null }, false, 'Restore', 'revision 3, older than the current one — Save restores it as the newest'],
  ])('%s: %s', (_, link, dirty, label, note) => {
    expect(saveLabel(link, dirty)).toBe(label);
    expect(revisionNote(link, dirty)).toBe(note);
  });

  it('knows an older revision by its mark', () => {
    expect(showsOlderRevision(older)).toBe(true);
    expect(showsOlderRevision(latest)).toBe(false);
    expect(showsOlderRevision(null)).toBe(false);
  });
});

describe('what the banners say', () => {
  it.each<[string, StoredComposition, Revision | null, string]>([
    ['the latest', stored(5, 5), null, 'Opened release-notes, revision 5.'],
    ['one never recorded', stored(null, null), null, 'Opened release-notes.'],
    ['an older revision', stored(5, 5), rev(3), 'Opened revision 3 of release-notes. The cluster keeps revision 5 as the newest until you restore this one with Save.'],
  ])('opening %s', (_, c, opened, said) => {
    expect(openedSaid(c, opened)).toBe(said);
  });

  it.each<[string, StoredComposition, boolean, CompositionLink | null, string]>([
    ['a create', stored(1, null), true, null, 'Created release-notes, revision 1.'],
    ['an update, whose reply’s status still names the revision before', stored(6, 5), false, latest, 'Saved release-notes, revision 6.'],
    ['a restore', stored(6, 5), false, older, 'Restored revision 3 of release-notes as revision 6: it is the newest now.'],
    ['a copy saved from an older revision', { ...stored(1, null), name: 'release-notes-copy' }, true, older, 'Created release-notes-copy, revision 1.'],
    ['a reply without a generation', stored(null, null), true, null, 'Created release-notes; the operator records its revision next.'],
  ])('saving: %s', (_, c, created, before, said) => {
    expect(savedSaid(c, created, before)).toBe(said);
  });
});

describe('what a run of the canvas starts (12.58)', () => {
  it.each<[string, CompositionLink | null, boolean, string, ReturnType<typeof runPlan>]>([
    ['the latest, unchanged: by reference to it', latest, false, 'team-a', { kind: 'ref', name: 'release-notes', revision: 5, said: 'Runs release-notes revision 5 as saved, by reference, so the run is filed under it.' }],
    ['an older revision, unchanged: by reference to that revision', older, false, 'team-a', { kind: 'ref', name: 'release-notes', revision: 3, said: 'Runs release-notes revision 3 as saved, by reference, so the run is filed under it.' }],
    ['a revision not known yet: by reference to the current one', { ...latest, revision: null }, false, 'team-a', { kind: 'ref', name: 'release-notes', revision: null, said: 'Runs release-notes as saved (its current revision), by reference, so the run is filed under it.' }],
    ['edited: inline', older, true, 'team-a', { kind: 'inline', said: 'Runs the canvas as it is (unsaved edits), inline, so the run is not filed under release-notes. Save first to run it by reference.' }],
    ['never saved: inline', null, false, 'team-a', { kind: 'inline', said: 'Runs the canvas as it is (not saved as a Composition), inline; the server checks it first.' }],
    ['saved in another namespace: inline', latest, false, 'team-b', { kind: 'inline', said: 'Runs the canvas as it is, inline: it is saved as release-notes in team-a, not in team-b.' }],
  ])('%s', (_, link, dirty, namespace, plan) => {
    expect(runPlan(link, dirty, namespace)).toEqual(plan);
  });
});

describe('a conflict that is only the operator’s status write (12.54)', () => {
  const now = (generation: number | null, resourceVersion: string | null, name = 'release-notes'): StoredComposition => ({ ...stored(generation, 5), name, resourceVersion });
  it.each([
    ['the same generation, a newer resourceVersion: save again on it', latest, now(5, '48300'), '48300'],
    ['an older revision shown: its newest is the base', older, now(5, '48300'), '48300'],
    ['a new generation is someone’s change: shown, never saved over', latest, now(6, '48300'), null],
    ['an older revision shown, and the Composition changed since', older, now(6, '48300'), null],
    ['no generation in the reply', latest, now(null, '48300'), null],
    ['another Composition', latest, now(5, '48300', 'other'), null],
    ['the same resourceVersion (nothing to retry with)', latest, now(5, '48213'), null],
  ] as const)('%s', (_, link, current, expected) => {
    expect(statusOnlyConflict(link, current)).toBe(expected);
  });

  it('is null without a link or a current object', () => {
    expect(statusOnlyConflict(null, now(5, '1'))).toBeNull();
    expect(statusOnlyConflict(latest, null)).toBeNull();
  });
});
