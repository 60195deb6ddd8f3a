import { describe, expect, it } from 'vitest';
import { fromSpec, toSpec, type CanvasDocument } from './document.ts';
import { keepKeys } from './rekey.ts';

function read(spec: unknown): CanvasDocument {
  const result = fromSpec(spec);
  if (!result.ok) throw new Error('unreadable');
  return result.doc;
}

const BEFORE = read({
  nodes: [
    { id: 'writer', kind: 'LLMAgent' },
    { id: 'critic', kind: 'LLMAgent' },
  ],
  edges: [
    { from: 'writer', to: 'critic' },
    { from: 'critic', to: 'writer', when: 'a' },
    { from: 'critic', to: 'writer', when: 'b' },
  ],
});

const keys = (doc: CanvasDocument) => ({ nodes: doc.nodes.map((n) => `${n.id}=${n.key}`), edges: doc.edges.map((e) => `${e.from}>${e.to}=${e.key}`) });

describe('keys kept through a spec read from the cluster', () => {
  it('keeps the spec as read, with its own keys for what the canvas had', () => {
    const after = read({
      nodes: [
        { id: 'publish', kind: 'LLMAgent' },
        { id: 'critic', kind: 'LLMAgent', instruction: 'judge' },
        { id: 'writer', kind: 'LLMAgent' },
      ],
      edges: [
        { from: 'critic', to: 'writer', when: 'a' },
        { from: 'critic', to: 'publish' },
      ],
    });
    const kept = keepKeys(BEFORE, after);
    expect(toSpec(kept)).toEqual(toSpec(after));
    expect(BEFORE.nextKey).toBe(6);
    expect(keys(kept)).toEqual({
      nodes: ['publish=n6', 'critic=n2', 'writer=n1'],
      // the first edge critic → writer keeps the first's key; the new edge takes a new one
      edges: ['critic>writer=e4', 'critic>publish=e7'],
    });
    expect(kept.nextKey).toBe(8);
  });

  it('gives every key anew when nothing is shared, never one the canvas used', () => {
    const kept = keepKeys(BEFORE, read({ nodes: [{ id: 'x', kind: 'Router' }], edges: [{ from: 'x', to: 'x' }] }));
    expect(keys(kept)).toEqual({ nodes: ['x=n6'], edges: ['x>x=e7'] });
  });

  it('is the same document for the same spec', () => {
    const again = keepKeys(BEFORE, read(toSpec(BEFORE)));
    expect(again).toEqual(BEFORE);
  });
});
