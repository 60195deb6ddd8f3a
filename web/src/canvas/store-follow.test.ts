import { describe, expect, it } from 'vitest';
import { nodeById, toSpec } from './document.ts';
import { addNode, setNodeFields } from './edit.ts';
import { createCanvasStore, type CompositionLink } from './store.ts';

const SPEC = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'x' }, { id: 'b', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'b' }] };
const THEIRS = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: 'theirs' }, { id: 'b', kind: 'LLMAgent' }, { id: 'c', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }] };
const LINK: CompositionLink = { namespace: 'team-a', name: 'notes', revision: 3, resourceVersion: '100' };
const NEWER: CompositionLink = { ...LINK, revision: 4, resourceVersion: '120' };

function opened() {
  const store = createCanvasStore();
  expect(store.getState().replaceFromServer(SPEC, LINK)).toBeNull();
  return store;
}

describe('the canvas taking a change made in the cluster', () => {
  it('takes the spec as one undoable step, linked to the new version and clean, keeping the keys of the nodes and edges it shares', () => {
    const store = opened();
    const before = store.getState().doc;
    expect(store.getState().takeFromServer(THEIRS, NEWER)).toBeNull();
    const state = store.getState();
    expect(toSpec(state.doc)).toEqual(THEIRS);
    expect(state).toMatchObject({ link: NEWER, dirty: false, canUndo: true });
    expect(nodeById(state.doc, 'a')?.key).toBe(nodeById(before, 'a')?.key);
    expect(nodeById(state.doc, 'b')?.key).toBe(nodeById(before, 'b')?.key);
    expect(state.doc.edges[0]?.key).toBe(before.edges[0]?.key);
    expect(new Set([...state.doc.nodes, ...state.doc.edges].map((x) => x.key)).size).toBe(5);
  });

  it('brings the person’s canvas back with Undo, linked to the new version, so saving it is a choice over theirs', () => {
    const store = opened();
    const key = nodeById(store.getState().doc, 'a')?.key ?? '';
    store.getState().edit((d) => setNodeFields(d, key, { instruction: 'mine' }));
    store.getState().takeFromServer(THEIRS, NEWER);
    store.getState().undo();
    expect(nodeById(store.getState().doc, 'a')?.instruction).toBe('mine');
    expect(store.getState()).toMatchObject({ link: NEWER, dirty: true });
  });

  it('records no step when the canvas already says what the cluster does', () => {
    const store = opened();
    store.getState().takeFromServer(SPEC, NEWER);
    expect(store.getState()).toMatchObject({ link: NEWER, dirty: false, canUndo: false });
  });

  it('refuses a spec the canvas cannot hold and keeps what it had', () => {
    const store = opened();
    expect(store.getState().takeFromServer({ nodes: 3 }, NEWER)).toEqual([{ path: ['nodes'], message: 'nodes is not a list' }]);
    expect(store.getState()).toMatchObject({ link: LINK, dirty: false });
  });

  it('keeps a deleted Composition’s content and name, with no version, so the next save creates it; it has unsaved changes', () => {
    const store = opened();
    store.getState().edit((d) => addNode(d, 'Router').doc);
    store.getState().markDeleted();
    const gone = { namespace: 'team-a', name: 'notes', revision: null, resourceVersion: null };
    expect(store.getState()).toMatchObject({ link: gone, dirty: true });
    expect(store.getState().doc.nodes).toHaveLength(3);
    // the step before the edit is that Composition's too, and no longer saved anywhere
    store.getState().undo();
    expect(store.getState()).toMatchObject({ link: gone, dirty: true });
    expect(toSpec(store.getState().doc)).toEqual(SPEC);
  });

  it('does nothing on a deletion when the canvas is not linked', () => {
    const store = createCanvasStore();
    store.getState().markDeleted();
    expect(store.getState()).toMatchObject({ link: null, dirty: false });
  });
});
