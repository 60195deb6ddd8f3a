import { describe, expect, it } from 'vitest';
import { assemble, canonicalJson, emptyDocument, fromSpec, nodeById, sameSpec, toSpec, uncarry, type CanvasDocument } from './document.ts';

function read(spec: unknown): CanvasDocument {
  const result = fromSpec(spec);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.doc;
}

/** spec → document → spec, compared as JSON text (so key order counts). */
function roundTrip(spec: unknown): string {
  return JSON.stringify(toSpec(read(spec)));
}

describe('a spec read into a canvas document', () => {
  it('types the fields the canvas edits', () => {
    const doc = read({
      pattern: 'CriticLoop',
      description: 'notes',
      budgets: { maxTokens: 10, timeoutSeconds: 60 },
      nodes: [
        { id: 'writer', kind: 'LLMAgent', model: 'm', instruction: 'write', tools: ['mcp:t.a'], description: 'd' },
        { id: 'critic', kind: 'LLMAgent', output: { labels: ['approved', 'rejected'] } },
        { id: 'review', kind: 'HumanApproval', prompt: 'ok?' },
        { id: 'lead', kind: 'Supervisor', children: ['writer'] },
      ],
      edges: [{ from: 'critic', to: 'writer', when: 'rejected', maxIterations: 3, screen: true }],
    });
    expect(doc.pattern).toBe('CriticLoop');
    expect(doc.description).toBe('notes');
    expect(doc.budgets.values).toEqual({ maxTokens: 10, timeoutSeconds: 60 });
    expect(nodeById(doc, 'writer')).toMatchObject({ kind: 'LLMAgent', model: 'm', instruction: 'write', tools: ['mcp:t.a'], description: 'd', labels: null, prompt: null });
    expect(nodeById(doc, 'critic')?.labels).toEqual(['approved', 'rejected']);
    expect(nodeById(doc, 'review')?.prompt).toBe('ok?');
    expect(nodeById(doc, 'lead')?.children).toEqual(['writer']);
    expect(doc.edges[0]).toMatchObject({ from: 'critic', to: 'writer', when: 'rejected', maxIterations: 3, screen: true });
  });

  it('gives every node and edge a key of its own that the spec never sees', () => {
    const doc = read({ pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }, { id: 'b', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'b' }] });
    const keys = [...doc.nodes.map((n) => n.key), ...doc.edges.map((e) => e.key)];
    expect(new Set(keys).size).toBe(3);
    expect(doc.nextKey).toBe(4);
    expect(JSON.stringify(toSpec(doc))).not.toMatch(/"key"/);
  });

  it.each([
    ['a field the console does not know', { pattern: 'Pipeline', colour: 'blue', nodes: [{ id: 'a', kind: 'LLMAgent', extra: { deep: [1] } }] }],
    ['a value of the wrong type', { pattern: 7, description: ['x'], budgets: { maxTokens: '10' }, nodes: [{ id: 'a', kind: 'LLMAgent', tools: 'mcp:x.y', model: 3, output: 'labels' }], edges: [] }],
    ['an output with more than labels', { pattern: 'Router', nodes: [{ id: 'a', kind: 'Router', output: { schema: {}, labels: ['x'] } }] }],
    ['an output that is empty', { pattern: 'Router', nodes: [{ id: 'a', kind: 'Router', output: {} }] }],
    ['labels that are not text', { nodes: [{ id: 'a', kind: 'Router', output: { labels: [1, 2] } }] }],
    ['empty budgets and empty lists', { budgets: {}, nodes: [{ id: 'a', kind: 'LLMAgent', tools: [], children: [] }], edges: [] }],
    ['no budgets and no edges', { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }] }],
    ['no nodes at all', { pattern: 'Pipeline' }],
    ['keys in an unusual order', { edges: [{ when: 'x', to: 'b', from: 'a' }], nodes: [{ kind: 'LLMAgent', id: 'a' }, { kind: 'Join', id: 'b' }], pattern: 'Router' }],
    ['screen written as false', { nodes: [{ id: 'a', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'a', screen: false }] }],
    ['a maxIterations out of range or fractional', { nodes: [{ id: 'a', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'a', maxIterations: 2.5 }, { from: 'a', to: 'a', maxIterations: 99 }] }],
    ['an edge to a node that is not there', { nodes: [{ id: 'a', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'ghost' }] }],
    ['an unknown node kind', { nodes: [{ id: 'a', kind: 'Oracle' }] }],
    ['an empty description', { description: '', nodes: [{ id: 'a', kind: 'LLMAgent', instruction: '' }] }],
  ])('comes back the same with %s', (_what, spec) => {
    expect(roundTrip(spec)).toBe(JSON.stringify(spec));
  });

  it('keeps a key named __proto__ as a plain key', () => {
    const spec: unknown = JSON.parse('{"nodes":[{"id":"a","kind":"LLMAgent","__proto__":{"polluted":true}}],"__proto__":{"x":1}}');
    const back = toSpec(read(spec));
    expect(JSON.stringify(back)).toBe(JSON.stringify(spec));
    expect(Object.hasOwn(back, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it.each([
    ['not an object', 'spec', [[]]],
    ['nodes that are not a list', { nodes: {} }, [['nodes']]],
    ['a node that is not an object', { nodes: ['a'] }, [['nodes', 0]]],
    ['a node with no id', { nodes: [{ kind: 'LLMAgent' }] }, [['nodes', 0, 'id']]],
    ['a node with an empty id', { nodes: [{ id: '', kind: 'LLMAgent' }] }, [['nodes', 0, 'id']]],
    ['a node with no kind', { nodes: [{ id: 'a' }] }, [['nodes', 0, 'kind']]],
    ['two nodes with one id', { nodes: [{ id: 'a', kind: 'LLMAgent' }, { id: 'a', kind: 'Join' }] }, [['nodes', 1, 'id']]],
    ['edges that are not a list', { nodes: [], edges: 'a→b' }, [['edges']]],
    ['an edge that is not an object', { nodes: [], edges: [null] }, [['edges', 0]]],
    ['an edge with no ends', { nodes: [], edges: [{ when: 'x' }] }, [['edges', 0, 'from'], ['edges', 0, 'to']]],
  ])('is refused when it has %s, at the path of each problem', (_what, spec, paths) => {
    const result = fromSpec(spec);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.map((p) => p.path)).toEqual(paths);
  });
});

describe('the empty document', () => {
  it('is a spec with nothing in it', () => {
    expect(toSpec(emptyDocument())).toEqual({});
  });
});

describe('assemble', () => {
  it('puts the keys in the order the spec had them, then new typed keys in the order given', () => {
    const out = assemble({ order: ['b', 'x', 'a'], rest: { x: 1 } }, [
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ]);
    expect(Object.keys(out)).toEqual(['b', 'x', 'a', 'c']);
  });

  it('leaves out a typed field set to null, unless a carried value of that key is there', () => {
    expect(assemble({ order: ['a', 'b'], rest: { b: 'kept' } }, [['a', null], ['b', null]])).toEqual({ b: 'kept' });
  });

  it('lets a typed value win over a carried one once the canvas sets it', () => {
    expect(assemble({ order: ['a'], rest: { a: 'old' } }, [['a', 'new']])).toEqual({ a: 'new' });
  });
});

describe('uncarry', () => {
  it('drops the named keys from what is carried but keeps their place in the order', () => {
    const carried = uncarry({ order: ['a', 'b'], rest: { a: 1, b: 2 } }, 'a');
    expect(carried).toEqual({ order: ['a', 'b'], rest: { b: 2 } });
  });

  it('returns the same object when nothing named is carried', () => {
    const carried = { order: ['a'], rest: { a: 1 } };
    expect(uncarry(carried, 'z')).toBe(carried);
  });
});

describe('sameSpec', () => {
  it.each([
    [{ a: 1, b: { c: [1, { d: 2, e: 3 }] } }, { b: { c: [1, { e: 3, d: 2 }] }, a: 1 }, true],
    [{ a: [1, 2] }, { a: [2, 1] }, false],
    [{ a: 1 }, { a: 1, b: null }, false],
    [{ a: '1' }, { a: 1 }, false],
  ])('says %j and %j are the same: %s', (a, b, same) => {
    expect(sameSpec(a, b)).toBe(same);
  });

  it('is built on canonical JSON with sorted keys', () => {
    expect(canonicalJson({ b: 1, a: { d: 1, c: 2 } })).toBe('{"a":{"c":2,"d":1},"b":1}');
  });
});
