import { describe, expect, it } from 'vitest';
import type { CompositionChange, FieldManager } from '../api/composition-watch.ts';
import type { StoredComposition } from '../api/compositions.ts';
import type { Problem } from '../api/http.ts';
import type { SseEnd } from '../api/sse.ts';
import { nodeById, toSpec } from '../canvas/document.ts';
import { setNodeFields } from '../canvas/edit.ts';
import { createCanvasStore, type CompositionLink } from '../canvas/store.ts';
import {
  changerOf,
  changerText,
  decide,
  diffLines,
  keepMine,
  keptNote,
  nextNote,
  reloadedNote,
  reloadTheirs,
  shownNote,
  takeChange,
  watchLine,
  isNews,
  type CanvasView,
  type Decision,
  type HeldNote,
} from './follow.ts';

// Issue 24, "Two-way": the canvas follows the cluster without unsaved edits, offers the change
// with them, and keeps a deleted Composition to create it again (the save rules 12.53 and 12.54:
// a change made elsewhere is never overwritten unseen).

const MINE = { pattern: 'Pipeline', nodes: [{ id: 'writer', kind: 'LLMAgent', instruction: 'mine' }] };
const BASE = { pattern: 'Pipeline', nodes: [{ id: 'writer', kind: 'LLMAgent', instruction: 'base' }] };
const THEIRS = { pattern: 'Pipeline', nodes: [{ id: 'writer', kind: 'LLMAgent', instruction: 'theirs' }, { id: 'publish', kind: 'LLMAgent' }] };
const LINK: CompositionLink = { namespace: 'team-a', name: 'notes', revision: 3, resourceVersion: '100' };
const KUBECTL: FieldManager = { manager: 'kubectl-client-side-apply', operation: 'Update', time: '2026-12-02T10:15:00Z' };
const CONSOLE: FieldManager = { manager: 'orrery-console', operation: 'Apply', time: '2026-12-02T09:00:00Z' };
const OPERATOR: FieldManager = { manager: 'orrery-operator', operation: 'Apply', time: '2026-12-02T10:15:01Z' };

function stored(spec: Record<string, unknown>, version: string, revision: number | null = 4, name = 'notes'): StoredComposition {
  return { namespace: 'team-a', name, resourceVersion: version, revision, generation: revision, created: '', description: '', spec };
}

function changed(spec: Record<string, unknown>, version: string, managers: FieldManager[] = [CONSOLE, KUBECTL, OPERATOR], name = 'notes'): Extract<CompositionChange, { kind: 'changed' }> {
  return { kind: 'changed', via: 'MODIFIED', resourceVersion: version, composition: stored(spec, version, 4, name), managers };
}

const DELETED: CompositionChange = { kind: 'deleted', via: 'DELETED', resourceVersion: '130', managers: [KUBECTL, OPERATOR], deletedAt: null };

const clean: CanvasView = { link: LINK, dirty: false, spec: BASE, baseline: BASE };
const dirty: CanvasView = { link: LINK, dirty: true, spec: MINE, baseline: BASE };
/** Revision 2 of notes opened while its newest is 4. */
const OLDER: CompositionLink = { ...LINK, revision: 2, newest: 4 };
const NEXT: CompositionLink = { namespace: 'team-a', name: 'notes', revision: 4, resourceVersion: '120' };
const BY = { manager: 'kubectl-client-side-apply', time: '2026-12-02T10:15:00Z' };

describe('what the canvas does about a change in the cluster', () => {
  it.each<[string, CompositionChange, CanvasView, Decision]>([
    ['its own version (its save, or the version it opened) changes nothing', changed(MINE, '100'), dirty, { kind: 'current' }],
    ['its own version, clean, changes nothing', changed(BASE, '100'), clean, { kind: 'current' }],
    ['another Composition is none of its business', changed(THEIRS, '120', [], 'other'), clean, { kind: 'ignore' }],
    ['nothing is followed while unlinked', changed(THEIRS, '120'), { ...clean, link: null }, { kind: 'ignore' }],
    // An older revision opened to be restored (12.56): the newest (generation 4) is its base.
    ['an older revision shown: the newest at a new version (a status write) moves the version only', changed(THEIRS, '120'), { ...clean, link: OLDER }, { kind: 'version', link: { ...OLDER, resourceVersion: '120' }, baseline: BASE, from: '100' }],
    [
      'an older revision shown: a newer spec is offered, never swapped in',
      { ...changed(THEIRS, '120'), composition: stored(THEIRS, '120', 5) },
      { ...clean, link: OLDER },
      { kind: 'offer', link: { ...NEXT, revision: 5 }, spec: THEIRS, by: BY, lines: diffLines(BASE, THEIRS) },
    ],
    ['a new version of the spec it was read from (the operator recording the revision) only moves the link, clean', changed(BASE, '120'), clean, { kind: 'version', link: NEXT, baseline: BASE, from: '100' }],
    ['…and with unsaved edits, without a banner', changed(BASE, '120'), dirty, { kind: 'version', link: NEXT, baseline: BASE, from: '100' }],
    ['a spec that is what the canvas says already (its save’s frame before the reply) links it quietly', changed(MINE, '120'), dirty, { kind: 'caught-up', link: NEXT, spec: MINE }],
    ['a clean canvas follows, naming who changed it', changed(THEIRS, '120'), clean, { kind: 'follow', link: NEXT, spec: THEIRS, by: BY }],
    [
      'with unsaved edits, the change is offered with what it changes from the canvas',
      changed(THEIRS, '120'),
      dirty,
      { kind: 'offer', link: NEXT, spec: THEIRS, by: BY, lines: ['node publish added', 'node writer: instruction: "mine" → "theirs"'] },
    ],
    ['a deletion is shown, with who changed it last', DELETED, dirty, { kind: 'deleted', lastBy: BY, at: null }],
    ['a deletion of a canvas already without a version changes nothing', DELETED, { ...dirty, link: { ...LINK, resourceVersion: null }, baseline: null }, { kind: 'ignore' }],
    [
      'a deleted Composition created again elsewhere is offered to the canvas that kept it',
      changed(THEIRS, '140'),
      { link: { ...LINK, revision: null, resourceVersion: null }, dirty: true, spec: MINE, baseline: null },
      { kind: 'offer', link: { ...NEXT, resourceVersion: '140' }, spec: THEIRS, by: BY, lines: ['node publish added', 'node writer: instruction: "mine" → "theirs"'] },
    ],
  ])('%s', (_what, change, view, decision) => {
    expect(decide(change, view)).toEqual(decision);
  });

  it.each<[Decision['kind'], boolean]>([
    ['ignore', false],
    ['current', false],
    ['version', false],
    ['caught-up', false],
    ['follow', true],
    ['offer', true],
    ['deleted', true],
  ])('%s brings news to say: %s', (kind, news) => {
    const decisions: Decision[] = [
      { kind: 'ignore' },
      { kind: 'current' },
      { kind: 'version', link: NEXT, baseline: BASE, from: '100' },
      { kind: 'caught-up', link: NEXT, spec: MINE },
      { kind: 'follow', link: NEXT, spec: THEIRS, by: null },
      { kind: 'offer', link: NEXT, spec: THEIRS, by: null, lines: [] },
      { kind: 'deleted', lastBy: null, at: null },
    ];
    const decision = decisions.find((d) => d.kind === kind);
    expect(decision === undefined ? null : isNews(decision)).toBe(news);
  });

  it('takes a RESET’s object like any change, and a RESET without it as a deletion', () => {
    expect(decide({ ...changed(THEIRS, '120'), via: 'RESET' }, clean).kind).toBe('follow');
    expect(decide({ kind: 'deleted', via: 'RESET', resourceVersion: '150', managers: [], deletedAt: null }, clean)).toEqual({ kind: 'deleted', lastBy: null, at: null });
  });
});

describe('who changed it', () => {
  it.each<[string, FieldManager[], string | null]>([
    ['the newest manager by time', [CONSOLE, KUBECTL], 'kubectl-client-side-apply'],
    ['never the operator, which writes the status after every change', [KUBECTL, OPERATOR], 'kubectl-client-side-apply'],
    ['the console when it changed last (another person, or another tab)', [KUBECTL, { ...CONSOLE, time: '2026-12-02T11:00:00Z' }], 'orrery-console'],
    ['another manager before the console at the same second', [{ ...CONSOLE, time: KUBECTL.time }, KUBECTL], 'kubectl-client-side-apply'],
    ['one with a time before one without', [{ manager: 'flux', operation: 'Apply', time: null }, KUBECTL], 'kubectl-client-side-apply'],
    ['nobody when only the operator is listed', [OPERATOR], null],
  ])('is %s', (_what, managers, who) => {
    expect(changerOf(managers)?.manager ?? null).toBe(who);
  });

  it.each([
    [BY, 'kubectl-client-side-apply at 2026-12-02 10:15:00 UTC'],
    [{ manager: 'orrery-console', time: null }, 'another console session (orrery-console)'],
    [null, 'someone'],
  ])('is named in plain words: %j', (by, text) => {
    expect(changerText(by)).toBe(text);
  });

  it('is named as it is before a deletion (the last change may be this canvas’s own save)', () => {
    expect(changerText({ manager: 'orrery-console', time: null }, true)).toBe('orrery-console');
  });
});

describe('the diff a banner lists', () => {
  it('says what theirs changes from the canvas', () => {
    expect(diffLines(MINE, THEIRS)).toEqual(['node publish added', 'node writer: instruction: "mine" → "theirs"']);
  });

  it('lists at most its limit, then counts the rest', () => {
    const many = { nodes: Array.from({ length: 15 }, (_, i) => ({ id: `n${String(i)}`, kind: 'LLMAgent' })) };
    expect(diffLines({ nodes: [] }, many, 12)).toEqual([...Array.from({ length: 12 }, (_, i) => `node n${String(i)} added`), '…and 3 more changes.']);
    expect(diffLines({ nodes: [] }, { nodes: many.nodes.slice(0, 13) }, 12).at(-1)).toBe('…and 1 more change.');
  });

  it('says so when the two differ in nothing the canvas shows', () => {
    expect(diffLines(BASE, BASE)).toEqual(['Nothing that the canvas shows: the two differ only in how the spec is written.']);
  });
});

describe('what the page shows about following', () => {
  const held = (note: HeldNote['note'], basedOn: string | null = '100'): HeldNote => ({ namespace: 'team-a', name: 'notes', basedOn, note });
  const offer = { kind: 'offer' as const, by: BY, lines: ['x'], link: NEXT, spec: THEIRS };

  it('a follow says who changed it, shown while the canvas is at that version', () => {
    const note = nextNote(null, decide(changed(THEIRS, '120'), clean), NEXT);
    expect(note).toEqual(held({ kind: 'updated', text: 'notes was changed in the cluster by kubectl-client-side-apply at 2026-12-02 10:15:00 UTC; the canvas shows it now (Undo brings back what it had).' }, '120'));
    expect(shownNote(note, NEXT)).toEqual(note?.note);
    // a save moves the canvas on, and the line goes
    expect(shownNote(note, { ...NEXT, resourceVersion: '125' })).toBeNull();
  });

  it('the operator’s revision frame after a follow keeps the line, at the new version', () => {
    const note = nextNote(null, decide(changed(THEIRS, '120'), clean), NEXT);
    const after = { ...NEXT, resourceVersion: '121', revision: 5 };
    const kept = nextNote(note, { kind: 'version', link: after, baseline: THEIRS, from: '120' }, after);
    expect(shownNote(kept, after)?.kind).toBe('updated');
    // a note no longer shown (the canvas moved on meanwhile) stays hidden
    expect(nextNote(note, { kind: 'version', link: after, baseline: THEIRS, from: '119' }, after)).toBeNull();
  });

  it('an offer stays until the canvas moves on, and goes when the cluster is back at the canvas’s version', () => {
    const note = nextNote(null, decide(changed(THEIRS, '120'), dirty), LINK);
    expect(shownNote(note, LINK)).toEqual({ ...offer, lines: ['node publish added', 'node writer: instruction: "mine" → "theirs"'] });
    expect(nextNote(note, { kind: 'current' }, LINK)).toBeNull();
    expect(nextNote(note, { kind: 'version', link: NEXT, baseline: BASE, from: '100' }, NEXT)).toBeNull();
    expect(nextNote(note, { kind: 'caught-up', link: NEXT, spec: MINE }, NEXT)).toBeNull();
    expect(nextNote(note, { kind: 'ignore' }, LINK)).toBe(note);
    // a save, a Keep theirs or an open moves the link on: the offer is no longer shown
    expect(shownNote(note, NEXT)).toBeNull();
    expect(shownNote(note, { ...LINK, name: 'other' })).toBeNull();
    expect(shownNote(note, null)).toBeNull();
  });

  it('a newer change replaces an offer', () => {
    const first = nextNote(null, decide(changed(THEIRS, '120'), dirty), LINK);
    const second = nextNote(first, decide(changed({ ...THEIRS, pattern: 'Router' }, '121'), dirty), LINK);
    expect(shownNote(second, LINK)).toMatchObject({ kind: 'offer', link: { resourceVersion: '121' } });
  });

  it('a deletion is said until a save creates it again', () => {
    const gone = { ...LINK, revision: null, resourceVersion: null };
    const note = nextNote(null, { kind: 'deleted', lastBy: BY, at: '2026-12-02T10:20:00Z' }, gone);
    expect(shownNote(note, gone)).toEqual({
      kind: 'deleted',
      text: 'notes was deleted from the cluster at 2026-12-02 10:20:00 UTC. It was last changed by kubectl-client-side-apply at 2026-12-02 10:15:00 UTC; the cluster does not record who deletes. The canvas keeps it: Save creates it again under the same name.',
    });
    expect(shownNote(note, { ...gone, resourceVersion: '200' })).toBeNull();
    expect(nextNote(null, { kind: 'deleted', lastBy: null, at: null }, gone)?.note).toEqual({ kind: 'deleted', text: 'notes was deleted from the cluster. The canvas keeps it: Save creates it again under the same name.' });
  });

  it('nothing is held once the canvas is unlinked', () => {
    expect(nextNote(held(offer), { kind: 'ignore' }, null)).toBeNull();
  });

  it('Reload theirs and Keep mine each say what happened, at their version', () => {
    expect(reloadedNote(offer)).toEqual(held({ kind: 'updated', text: 'Reloaded notes as kubectl-client-side-apply at 2026-12-02 10:15:00 UTC left it (Undo brings your edits back).' }, '120'));
    expect(keptNote(offer)).toEqual(held({ kind: 'updated', text: 'Kept your canvas. Your next save of notes replaces the version kubectl-client-side-apply at 2026-12-02 10:15:00 UTC made.' }, '120'));
  });
});

describe('why following stopped', () => {
  const problem = (status: number, message: string, retryAfterSeconds: number | null = null): Problem => ({ status, code: 'x', message, loc: [], retryAfterSeconds });
  const stopped = (end: SseEnd) => watchLine({ state: 'stopped', end }, 'notes')?.text ?? null;

  it.each<[string, SseEnd, string | null]>([
    [
      '403: the Role lacks watch, naming the rule and the example Role',
      { reason: 'forbidden', problem: problem(403, 'cannot watch resource "compositions"') },
      'Not following changes to notes: your Role does not let you watch Compositions in this namespace. Ask for "compositions watch" (the example Role examples/rbac/studio-user-role.yaml grants it), then Retry. The cluster said: cannot watch resource "compositions"',
    ],
    [
      '429: too many streams',
      { reason: 'too-many-streams', problem: problem(429, 'four', 5), explanation: '' },
      'Not following changes to notes: you already have as many live streams open as one person may (four, unless the install says otherwise), such as runs followed in other tabs. Close one, then Retry. The sidecar suggests waiting 5 s.',
    ],
    ['given up', { reason: 'gave-up', problem: problem(503, 'the apiserver cannot be reached') }, 'Not following changes to notes: after several tries, the apiserver cannot be reached. Retry once the sidecar can be reached.'],
    ['refused', { reason: 'refused', problem: problem(400, 'Last-Event-ID is not a resourceVersion') }, 'Not following changes to notes (400): Last-Event-ID is not a resourceVersion'],
    ['closed: nothing to say', { reason: 'closed' }, null],
    ['401: the session ends instead', { reason: 'unauthenticated', problem: problem(401, 'expired') }, null],
  ])('%s', (_what, end, text) => {
    expect(stopped(end)).toBe(text);
  });

  it('says nothing while it follows or reconnects', () => {
    expect(watchLine(null, 'notes')).toBeNull();
    expect(watchLine({ state: 'open' }, 'notes')).toBeNull();
    expect(watchLine({ state: 'waiting', attempt: 2, delayMs: 1000, problem: problem(0, 'reset') }, 'notes')).toBeNull();
  });
});

describe('the canvas following its Composition', () => {
  function opened() {
    const store = createCanvasStore();
    expect(store.getState().replaceFromServer(BASE, LINK)).toBeNull();
    let held: HeldNote | null = null;
    const take = (change: CompositionChange): void => {
      held = takeChange(store, change).note(held);
    };
    const shown = () => shownNote(held, store.getState().link);
    const edit = (): void => {
      const key = nodeById(store.getState().doc, 'writer')?.key ?? '';
      store.getState().edit((d) => setNodeFields(d, key, { instruction: 'mine' }));
    };
    const set = (next: HeldNote | null): void => {
      held = next;
    };
    return { store, take, shown, edit, set };
  }

  it('without unsaved edits takes the new spec, linked to its version, and says who changed it; the operator’s revision frame moves it on quietly', () => {
    const c = opened();
    c.take(changed(THEIRS, '120'));
    expect(toSpec(c.store.getState().doc)).toEqual(THEIRS);
    expect(c.store.getState()).toMatchObject({ link: NEXT, dirty: false, canUndo: true });
    expect(c.shown()).toMatchObject({ kind: 'updated', text: expect.stringContaining('by kubectl-client-side-apply at 2026-12-02 10:15:00 UTC') as unknown });
    c.take({ ...changed(THEIRS, '121'), composition: stored(THEIRS, '121', 5) });
    expect(c.store.getState().link).toEqual({ ...NEXT, resourceVersion: '121', revision: 5 });
    expect(c.shown()?.kind).toBe('updated');
  });

  it('leaves the canvas alone on its own save’s frame, and on one that came before the save’s reply', () => {
    const c = opened();
    c.edit();
    const mine = toSpec(c.store.getState().doc);
    c.take(changed(mine, '110'));
    // the frame came first: linked to it, clean, nothing said
    expect(c.store.getState()).toMatchObject({ link: { resourceVersion: '110' }, dirty: false });
    expect(c.shown()).toBeNull();
    // then the reply: the same version again
    c.store.getState().markSaved({ ...LINK, resourceVersion: '110', revision: 4 }, mine);
    c.take(changed(mine, '110'));
    expect(toSpec(c.store.getState().doc)).toEqual(mine);
    expect(c.shown()).toBeNull();
  });

  it('with unsaved edits leaves the canvas as it is and offers theirs; Reload theirs takes it, undoably', () => {
    const c = opened();
    c.edit();
    c.take(changed(THEIRS, '120'));
    expect(nodeById(c.store.getState().doc, 'writer')?.instruction).toBe('mine');
    expect(c.store.getState().link).toEqual(LINK);
    const offer = c.shown();
    expect(offer).toMatchObject({ kind: 'offer', by: BY, lines: ['node publish added', 'node writer: instruction: "mine" → "theirs"'] });
    if (offer?.kind !== 'offer') throw new Error('no offer');
    c.set(reloadTheirs(c.store, offer));
    expect(toSpec(c.store.getState().doc)).toEqual(THEIRS);
    expect(c.store.getState()).toMatchObject({ link: NEXT, dirty: false });
    expect(c.shown()).toMatchObject({ kind: 'updated', text: expect.stringContaining('Undo brings your edits back') as unknown });
    c.store.getState().undo();
    expect(nodeById(c.store.getState().doc, 'writer')?.instruction).toBe('mine');
    expect(c.store.getState()).toMatchObject({ link: NEXT, dirty: true });
  });

  it('Keep mine keeps the canvas and moves its link to their version: the next save goes over theirs, not as a stale conflict', () => {
    const c = opened();
    c.edit();
    c.take(changed(THEIRS, '120'));
    const offer = c.shown();
    if (offer?.kind !== 'offer') throw new Error('no offer');
    c.set(keepMine(c.store, offer));
    expect(nodeById(c.store.getState().doc, 'writer')?.instruction).toBe('mine');
    // what Save sends (ComposePage's saveNow): this version
    expect(c.store.getState()).toMatchObject({ link: NEXT, dirty: true });
    expect(c.shown()).toMatchObject({ kind: 'updated', text: expect.stringContaining('Your next save of notes replaces') as unknown });
    // the operator's revision of theirs brings no new banner
    c.take({ ...changed(THEIRS, '121'), composition: stored(THEIRS, '121', 5) });
    expect(c.store.getState().link).toMatchObject({ resourceVersion: '121', revision: 5 });
    expect(c.shown()?.kind).toBe('updated');
  });

  it('keeps the canvas, saying why, when it cannot hold the spec the cluster has', () => {
    const c = opened();
    c.take(changed({ nodes: 'x' }, '120'));
    expect(toSpec(c.store.getState().doc)).toEqual(BASE);
    expect(c.store.getState().link).toEqual(LINK);
    expect(c.shown()).toEqual({ kind: 'updated', text: 'notes was changed in the cluster by kubectl-client-side-apply at 2026-12-02 10:15:00 UTC, but the canvas cannot show that spec (nodes is not a list); it keeps what it has.' });
  });

  it('a deletion keeps the canvas and its name with no version, so Save creates it again; the save ends the banner', () => {
    const c = opened();
    c.take(DELETED);
    expect(toSpec(c.store.getState().doc)).toEqual(BASE);
    expect(c.store.getState()).toMatchObject({ link: { namespace: 'team-a', name: 'notes', revision: null, resourceVersion: null }, dirty: true });
    expect(c.shown()).toMatchObject({ kind: 'deleted', text: expect.stringContaining('Save creates it again under the same name') as unknown });
    // the save's reply (a create)
    c.store.getState().markSaved({ ...LINK, resourceVersion: '200', revision: 1 }, BASE);
    expect(c.shown()).toBeNull();
    // and its frame, then the operator's revision: the banner stays gone
    c.take({ ...changed(BASE, '200'), via: 'ADDED' });
    expect(c.store.getState()).toMatchObject({ dirty: false, link: { resourceVersion: '200' } });
    c.take({ ...changed(BASE, '201'), composition: stored(BASE, '201', 1) });
    expect(c.store.getState().link).toMatchObject({ resourceVersion: '201', revision: 1 });
    expect(c.shown()).toBeNull();
  });
});
