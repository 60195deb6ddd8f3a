import { describe, expect, it } from 'vitest';
import { emptyDocument, fromSpec, nodeById, toSpec, type CanvasDocument } from './document.ts';
import { addNode, renameNode, setNodeFields } from './edit.ts';
import { createCanvasStore, type CompositionLink } from './store.ts';

const SPEC = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'x' }] };
const LINK: CompositionLink = { namespace: 'team-a', name: 'notes', revision: 3 };

function read(spec: unknown): CanvasDocument {
  const result = fromSpec(spec);
  if (!result.ok) throw new Error('unreadable');
  return result.doc;
}

function followed() {
  const store = createCanvasStore();
  expect(store.getState().replaceFromServer(SPEC, LINK)).toBeNull();
  return store;
}

const keyOf = (doc: CanvasDocument, id: string): string => nodeById(doc, id)?.key ?? '';

describe('the canvas store', () => {
  it('starts with an empty canvas, unlinked, clean, with nothing to undo', () => {
    const state = createCanvasStore().getState();
    expect(state.doc).toEqual(emptyDocument());
    expect(state).toMatchObject({ link: null, dirty: false, canUndo: false, canRedo: false });
  });

  it('follows the cluster: the spec is on the canvas, linked and clean, with no history', () => {
    const store = createCanvasStore();
    store.getState().edit((doc) => addNode(doc, 'LLMAgent').doc);
    store.getState().replaceFromServer(SPEC, LINK);
    const state = store.getState();
    expect(toSpec(state.doc)).toEqual(SPEC);
    expect(state).toMatchObject({ link: LINK, dirty: false, canUndo: false, canRedo: false });
  });

  it('refuses to follow a spec the canvas cannot hold, and keeps what it had', () => {
    const store = followed();
    expect(store.getState().replaceFromServer({ nodes: 'x' }, { ...LINK, name: 'other' })).toEqual([{ path: ['nodes'], message: 'nodes is not a list' }]);
    expect(store.getState().link).toEqual(LINK);
  });

  it('is dirty after an edit and clean again when it is undone', () => {
    const store = followed();
    const { doc } = store.getState();
    expect(store.getState().edit((d) => setNodeFields(d, keyOf(doc, 'a'), { instruction: 'y' }))).toBeNull();
    expect(store.getState()).toMatchObject({ dirty: true, canUndo: true });
    store.getState().undo();
    expect(store.getState()).toMatchObject({ dirty: false, canUndo: false, canRedo: true });
    store.getState().redo();
    expect(nodeById(store.getState().doc, 'a')?.instruction).toBe('y');
  });

  it('is clean when edits come back to the saved spec', () => {
    const store = followed();
    const key = keyOf(store.getState().doc, 'a');
    store.getState().edit((d) => renameNode(d, key, 'b'));
    store.getState().edit((d) => renameNode(d, key, 'a'));
    expect(store.getState()).toMatchObject({ dirty: false, canUndo: true });
  });

  it('returns a refused edit\'s reason and records nothing', () => {
    const store = followed();
    const error = store.getState().edit((d) => renameNode(d, 'n404', 'b'));
    expect(error?.code).toBe('unknown_node');
    expect(store.getState().canUndo).toBe(false);
  });

  it('records no step for an edit that changes nothing', () => {
    const store = followed();
    const key = keyOf(store.getState().doc, 'a');
    store.getState().edit((d) => renameNode(d, key, 'a'));
    expect(store.getState().canUndo).toBe(false);
  });

  it('makes the keystrokes of one field one step', () => {
    const store = followed();
    const key = keyOf(store.getState().doc, 'a');
    for (const text of ['w', 'wr', 'wri']) store.getState().edit((d) => setNodeFields(d, key, { instruction: text }), `${key}:instruction`);
    store.getState().undo();
    expect(nodeById(store.getState().doc, 'a')?.instruction).toBe('x');
  });

  it('keeps at most its cap of steps', () => {
    const store = createCanvasStore({ cap: 2 });
    for (let i = 0; i < 4; i++) store.getState().edit((d) => addNode(d, 'LLMAgent').doc);
    store.getState().undo();
    store.getState().undo();
    expect(store.getState().canUndo).toBe(false);
    expect(store.getState().doc.nodes).toHaveLength(2);
  });

  it('loads a template unlinked, and Undo restores the canvas and its link (rule 12.57)', () => {
    const store = followed();
    store.getState().load(read({ pattern: 'Router', nodes: [{ id: 'r', kind: 'Router' }] }));
    expect(store.getState()).toMatchObject({ link: null, dirty: true });
    store.getState().undo();
    expect(store.getState()).toMatchObject({ link: LINK, dirty: false });
    expect(toSpec(store.getState().doc)).toEqual(SPEC);
  });

  it('is clean after a save, linked to the new revision, and dirty again after an edit (rule 12.53)', () => {
    const store = followed();
    const key = keyOf(store.getState().doc, 'a');
    store.getState().edit((d) => setNodeFields(d, key, { instruction: 'y' }));
    const saved = { ...LINK, revision: 4 };
    store.getState().markSaved(saved, toSpec(store.getState().doc));
    expect(store.getState()).toMatchObject({ link: saved, dirty: false, canUndo: true });
    store.getState().undo();
    expect(store.getState()).toMatchObject({ link: saved, dirty: true });
  });

  it('links the unsaved steps of a new composition to it once it is first saved', () => {
    const store = createCanvasStore();
    store.getState().edit((d) => addNode(d, 'LLMAgent').doc);
    store.getState().edit((d) => addNode(d, 'LLMAgent').doc);
    store.getState().markSaved(LINK, toSpec(store.getState().doc));
    store.getState().undo();
    expect(store.getState()).toMatchObject({ link: LINK, dirty: true });
  });

  it('leaves the steps of another composition linked to theirs when one is saved', () => {
    const store = followed();
    store.getState().load(read({ pattern: 'Router', nodes: [{ id: 'r', kind: 'Router' }] }));
    const copy = { namespace: 'team-a', name: 'copy', revision: 1 };
    store.getState().markSaved(copy, toSpec(store.getState().doc));
    store.getState().undo();
    expect(store.getState()).toMatchObject({ link: LINK, dirty: false });
  });
});
