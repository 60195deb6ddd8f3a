import { describe, expect, it } from 'vitest';
import { emptyDocument, fromSpec, nodeById, toSpec, type CanvasDocument, type CanvasNode } from './document.ts';
import { addNode, connect, freeId, removeEdge, repeatedEdges, removeNode, renameNode, routeLabels, setBudgets, setComposition, setEdgeFields, setNodeFields, swapRoutes, type EditResult } from './edit.ts';

function read(spec: unknown): CanvasDocument {
  const result = fromSpec(spec);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.doc;
}

function ok(result: EditResult): CanvasDocument {
  if (!result.ok) throw new Error(result.error.message);
  return result.doc;
}

function node(doc: CanvasDocument, id: string): CanvasNode {
  const found = nodeById(doc, id);
  if (found === undefined) throw new Error(`no node ${id}`);
  return found;
}

const key = (doc: CanvasDocument, id: string): string => node(doc, id).key;

/** The review loop of examples/compositions/human-review.yaml, with a supervisor on the side. */
const REVIEW = {
  pattern: 'CriticLoop',
  nodes: [
    { id: 'writer', kind: 'LLMAgent', instruction: 'write' },
    { id: 'review', kind: 'HumanApproval', prompt: 'ok?' },
    { id: 'publish', kind: 'LLMAgent' },
    { id: 'lead', kind: 'Supervisor', children: ['helper', 'writer2'] },
    { id: 'helper', kind: 'LLMAgent' },
  ],
  edges: [
    { from: 'writer', to: 'review' },
    { from: 'review', to: 'publish', when: 'approved' },
    { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2 },
  ],
};

describe('adding a node', () => {
  it('appends it after the last node with the first free id of its kind', () => {
    let doc = emptyDocument();
    doc = addNode(doc, 'LLMAgent').doc;
    doc = addNode(doc, 'LLMAgent').doc;
    const { doc: next, node: added } = addNode(doc, 'HumanApproval');
    expect(next.nodes.map((n) => n.id)).toEqual(['agent-1', 'agent-2', 'review-1']);
    expect(added.kind).toBe('HumanApproval');
    expect(toSpec(next)['nodes']).toEqual([
      { id: 'agent-1', kind: 'LLMAgent' },
      { id: 'agent-2', kind: 'LLMAgent' },
      { id: 'review-1', kind: 'HumanApproval' },
    ]);
  });

  it('fills the gap a removed node left', () => {
    const doc = read({ nodes: [{ id: 'agent-1', kind: 'LLMAgent' }, { id: 'agent-3', kind: 'LLMAgent' }] });
    expect(freeId(doc, 'agent')).toBe('agent-2');
  });

  it('takes fields, so "Remote agent" is an LLMAgent with one a2a tool (rule 12.12)', () => {
    const { node: added } = addNode(emptyDocument(), 'LLMAgent', { tools: ['a2a:writer.draft'] });
    expect(added.tools).toEqual(['a2a:writer.draft']);
    expect(added.id).toBe('agent-1');
  });

  it('takes a given id only when no node has it', () => {
    const doc = read({ nodes: [{ id: 'x', kind: 'Join' }] });
    expect(addNode(doc, 'Join', { id: 'y' }).node.id).toBe('y');
    expect(addNode(doc, 'Join', { id: 'x' }).node.id).toBe('join-1');
  });

  it('gives a kind the console does not know the stem node', () => {
    expect(addNode(emptyDocument(), 'Oracle').node.id).toBe('node-1');
  });

  it('gives each new node a key no other node or edge has', () => {
    const doc = read(REVIEW);
    const { node: added } = addNode(doc, 'Join');
    expect([...doc.nodes, ...doc.edges].map((x) => x.key)).not.toContain(added.key);
  });
});

describe('removing a node', () => {
  it('takes its edges with it', () => {
    const doc = read(REVIEW);
    const next = ok(removeNode(doc, key(doc, 'review')));
    expect(next.nodes.map((n) => n.id)).toEqual(['writer', 'publish', 'lead', 'helper']);
    expect(next.edges).toEqual([]);
  });

  it('takes it out of its supervisor\'s children, and the children list goes when it empties', () => {
    const doc = read({ nodes: [{ id: 'lead', kind: 'Supervisor', children: ['helper'] }, { id: 'helper', kind: 'LLMAgent' }] });
    const next = ok(removeNode(doc, key(doc, 'helper')));
    expect(toSpec(next)['nodes']).toEqual([{ id: 'lead', kind: 'Supervisor' }]);
  });

  it('refuses a node that is not there', () => {
    const result = removeNode(read(REVIEW), 'n99');
    expect(result.ok ? null : result.error.code).toBe('unknown_node');
  });
});

describe('renaming a node', () => {
  it('moves every edge and every supervisor child that names it', () => {
    const doc = read({ ...REVIEW, nodes: [...REVIEW.nodes, { id: 'lead2', kind: 'Supervisor', children: ['helper'] }] });
    const next = ok(renameNode(ok(renameNode(doc, key(doc, 'review'), 'approval')), key(doc, 'helper'), 'aide'));
    const spec = toSpec(next);
    expect(spec['edges']).toEqual([
      { from: 'writer', to: 'approval' },
      { from: 'approval', to: 'publish', when: 'approved' },
      { from: 'approval', to: 'writer', when: 'rejected', maxIterations: 2 },
    ]);
    expect(node(next, 'lead').children).toEqual(['aide', 'writer2']);
    expect(node(next, 'lead2').children).toEqual(['aide']);
  });

  it('keeps the node\'s key, so what holds on to it follows', () => {
    const doc = read(REVIEW);
    const next = ok(renameNode(doc, key(doc, 'review'), 'approval'));
    expect(node(next, 'approval').key).toBe(key(doc, 'review'));
  });

  it('keeps the node in its place and its fields as they were', () => {
    const doc = read(REVIEW);
    const next = ok(renameNode(doc, key(doc, 'review'), 'approval'));
    expect(toSpec(next)['nodes']).toContainEqual({ id: 'approval', kind: 'HumanApproval', prompt: 'ok?' });
    expect(next.nodes.map((n) => n.id)).toEqual(['writer', 'approval', 'publish', 'lead', 'helper']);
  });

  it.each([
    ['an id another node has', 'publish', 'duplicate_id'],
    ['an empty id', '', 'empty_id'],
  ])('refuses %s', (_what, id, code) => {
    const doc = read(REVIEW);
    const result = renameNode(doc, key(doc, 'review'), id);
    expect(result.ok ? null : result.error.code).toBe(code);
  });

  it('is nothing at all when the id is the same', () => {
    const doc = read(REVIEW);
    expect(ok(renameNode(doc, key(doc, 'review'), 'review'))).toBe(doc);
  });
});

describe('connecting two nodes', () => {
  const PLAIN = { nodes: [{ id: 'a', kind: 'LLMAgent' }, { id: 'b', kind: 'LLMAgent' }, { id: 'c', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'b' }] };

  it.each<[string, unknown, string, string, { when: string | null; maxIterations: number | null }]>([
    ['a plain edge between two agents', PLAIN, 'b', 'c', { when: null, maxIterations: null }],
    ['an edge back to an earlier node as a loop capped at 2', PLAIN, 'b', 'a', { when: null, maxIterations: 2 }],
    ['an edge from a node to itself as a loop capped at 2', PLAIN, 'c', 'c', { when: null, maxIterations: 2 }],
    ['the first edge out of an approval as approved', { nodes: [{ id: 'r', kind: 'HumanApproval' }, { id: 'p', kind: 'LLMAgent' }] }, 'r', 'p', { when: 'approved', maxIterations: null }],
    [
      'the second edge out of an approval as rejected',
      { nodes: [{ id: 'r', kind: 'HumanApproval' }, { id: 'p', kind: 'LLMAgent' }, { id: 'q', kind: 'LLMAgent' }], edges: [{ from: 'r', to: 'p', when: 'approved' }] },
      'r',
      'q',
      { when: 'rejected', maxIterations: null },
    ],
    [
      'an edge out of a node whose labels are all taken with no label',
      { nodes: [{ id: 'r', kind: 'Router', output: { labels: ['x'] } }, { id: 'p', kind: 'LLMAgent' }, { id: 'q', kind: 'LLMAgent' }], edges: [{ from: 'r', to: 'p', when: 'x' }] },
      'r',
      'q',
      { when: null, maxIterations: null },
    ],
    ['the first edge out of a router as its first label', { nodes: [{ id: 'r', kind: 'Router', output: { labels: ['x', 'y'] } }, { id: 'p', kind: 'LLMAgent' }] }, 'r', 'p', { when: 'x', maxIterations: null }],
    [
      'an edge past a loop as a plain edge (only forward edges lead back)',
      { nodes: [{ id: 'a', kind: 'LLMAgent' }, { id: 'b', kind: 'LLMAgent' }], edges: [{ from: 'b', to: 'a', maxIterations: 2 }] },
      'a',
      'b',
      { when: null, maxIterations: null },
    ],
  ])('draws %s', (_what, spec, from, to, expected) => {
    const doc = read(spec);
    const result = connect(doc, key(doc, from), key(doc, to));
    if (!result.ok) throw new Error(result.error.message);
    expect(result.edge).toMatchObject({ from, to, ...expected });
    expect(result.doc.edges.at(-1)).toBe(result.edge);
  });

  it('takes the label and cap it is given over the defaults', () => {
    const doc = read(REVIEW);
    const result = connect(doc, key(doc, 'review'), key(doc, 'publish'), { when: null, maxIterations: 4 });
    expect(result.ok ? result.edge : null).toMatchObject({ when: null, maxIterations: 4 });
  });

  it.each([
    ['the same edge twice', 'writer', 'review', 'duplicate_edge'],
    ['an edge into a supervisor\'s child', 'publish', 'helper', 'supervisor_child'],
    ['an edge out of a supervisor\'s child', 'helper', 'publish', 'supervisor_child'],
  ])('refuses %s', (_what, from, to, code) => {
    const doc = read(REVIEW);
    const result = connect(doc, key(doc, from), key(doc, to));
    expect(result.ok ? null : result.error.code).toBe(code);
  });

  it('refuses an end that is not on the canvas', () => {
    const doc = read(REVIEW);
    const result = connect(doc, key(doc, 'writer'), 'n404');
    expect(result.ok ? null : result.error.code).toBe('unknown_node');
  });
});

describe('the labels a node routes on', () => {
  it.each<[string, CanvasNode['kind'], readonly string[] | null, readonly string[]]>([
    ['an approval', 'HumanApproval', null, ['approved', 'rejected']],
    ['a router', 'Router', ['a', 'b'], ['a', 'b']],
    ['a critic', 'LLMAgent', ['ok', 'no'], ['ok', 'no']],
    ['a plain agent', 'LLMAgent', null, []],
  ])('of %s are %j', (_what, kind, labels, expected) => {
    const { node: added } = addNode(emptyDocument(), kind, { labels });
    expect(routeLabels(added)).toEqual(expected);
  });
});

describe('an edge listed twice', () => {
  it('is an edge with the same ends and label as one before it', () => {
    const doc = read({
      nodes: [{ id: 'a', kind: 'Router' }, { id: 'b', kind: 'LLMAgent' }],
      edges: [{ from: 'a', to: 'b', when: 'x' }, { from: 'a', to: 'b', when: 'y' }, { from: 'a', to: 'b', when: 'x', note: 1 }, { from: 'a', to: 'b' }, { from: 'b', to: 'a' }],
    });
    expect(repeatedEdges(doc).map((e) => e.key)).toEqual([doc.edges[2]?.key]);
  });
});

describe('removing an edge', () => {
  it('leaves the others as they were', () => {
    const doc = read(REVIEW);
    const [first, ...others] = doc.edges;
    if (first === undefined) throw new Error('no edge');
    expect(ok(removeEdge(doc, first.key)).edges).toEqual(others);
  });

  it('refuses an edge that is not there', () => {
    const result = removeEdge(read(REVIEW), 'e404');
    expect(result.ok ? null : result.error.code).toBe('unknown_edge');
  });
});

describe('setting an edge\'s fields', () => {
  const doc = read(REVIEW);
  const back = doc.edges[2]?.key ?? '';

  it.each([
    ['a new label', { when: 'retry' }, { from: 'review', to: 'writer', when: 'retry', maxIterations: 2 }],
    ['no label', { when: null }, { from: 'review', to: 'writer', maxIterations: 2 }],
    ['an empty label as none', { when: '' }, { from: 'review', to: 'writer', maxIterations: 2 }],
    ['a new loop cap', { maxIterations: 5 }, { from: 'review', to: 'writer', when: 'rejected', maxIterations: 5 }],
    ['no loop cap', { maxIterations: null }, { from: 'review', to: 'writer', when: 'rejected' }],
    ['the screen on', { screen: true }, { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2, screen: true }],
    ['the screen off', { screen: false }, { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2 }],
  ])('writes %s', (_what, fields, expected) => {
    const next = ok(setEdgeFields(doc, back, fields));
    expect((toSpec(next)['edges'] as unknown[])[2]).toStrictEqual(expected);
  });

  it('replaces a value of the wrong type once it is set', () => {
    const odd = read({ nodes: [{ id: 'a', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'a', maxIterations: 'three', note: 1 }] });
    const next = ok(setEdgeFields(odd, odd.edges[0]?.key ?? '', { maxIterations: 3 }));
    expect(toSpec(next)['edges']).toStrictEqual([{ from: 'a', to: 'a', maxIterations: 3, note: 1 }]);
  });
});

describe('swapping an approval\'s routes', () => {
  it('exchanges the labels of its two routed edges (rule 12.15)', () => {
    const doc = read(REVIEW);
    const next = ok(swapRoutes(doc, key(doc, 'review')));
    expect(next.edges.map((e) => [e.to, e.when])).toEqual([
      ['review', null],
      ['publish', 'rejected'],
      ['writer', 'approved'],
    ]);
  });

  it('refuses a node without exactly two routed edges', () => {
    const doc = read(REVIEW);
    const result = swapRoutes(doc, key(doc, 'writer'));
    expect(result.ok ? null : result.error.code).toBe('not_two_routes');
  });
});

describe('setting a node\'s fields', () => {
  const doc = read({
    nodes: [
      { id: 'a', kind: 'LLMAgent', instruction: 'old', tools: ['mcp:x.y'], future: 1 },
      { id: 'c', kind: 'Router', output: { labels: ['x'], schema: 's' } },
    ],
  });

  it.each<[string, Parameters<typeof setNodeFields>[2], Record<string, unknown>]>([
    ['a new instruction in its place', { instruction: 'new' }, { id: 'a', kind: 'LLMAgent', instruction: 'new', tools: ['mcp:x.y'], future: 1 }],
    ['a description, model and prompt after the fields it had', { description: 'd', model: 'm', prompt: 'p' }, { id: 'a', kind: 'LLMAgent', instruction: 'old', tools: ['mcp:x.y'], future: 1, description: 'd', model: 'm', prompt: 'p' }],
    ['an empty instruction as none', { instruction: '' }, { id: 'a', kind: 'LLMAgent', tools: ['mcp:x.y'], future: 1 }],
    ['no tools for an empty list', { tools: [] }, { id: 'a', kind: 'LLMAgent', instruction: 'old', future: 1 }],
    ['labels as output.labels', { labels: ['ok', 'no'] }, { id: 'a', kind: 'LLMAgent', instruction: 'old', tools: ['mcp:x.y'], future: 1, output: { labels: ['ok', 'no'] } }],
    ['children', { children: ['b'] }, { id: 'a', kind: 'LLMAgent', instruction: 'old', tools: ['mcp:x.y'], future: 1, children: ['b'] }],
  ])('writes %s', (_what, fields, expected) => {
    const next = ok(setNodeFields(doc, key(doc, 'a'), fields));
    expect(JSON.stringify((toSpec(next)['nodes'] as unknown[])[0])).toBe(JSON.stringify(expected));
  });

  it('keeps an output\'s own fields when its labels are cleared', () => {
    const next = ok(setNodeFields(doc, key(doc, 'c'), { labels: null }));
    expect((toSpec(next)['nodes'] as unknown[])[1]).toStrictEqual({ id: 'c', kind: 'Router', output: { schema: 's' } });
  });

  it('drops an output with nothing left in it', () => {
    const labelled = ok(setNodeFields(doc, key(doc, 'a'), { labels: ['ok'] }));
    const next = ok(setNodeFields(labelled, key(doc, 'a'), { labels: [] }));
    expect((toSpec(next)['nodes'] as Record<string, unknown>[])[0]).not.toHaveProperty('output');
  });

  it('refuses a node that is not there', () => {
    const result = setNodeFields(doc, 'n404', { instruction: 'x' });
    expect(result.ok ? null : result.error.code).toBe('unknown_node');
  });
});

describe('setting budgets', () => {
  it('sets and clears budgets and leaves the others and unknown ones alone', () => {
    const doc = read({ budgets: { maxTokens: 100, maxCost: 3, timeoutSeconds: 60 }, nodes: [] });
    const next = setBudgets(doc, { maxTokens: 200, timeoutSeconds: null, maxToolCalls: 4 });
    expect(JSON.stringify(toSpec(next)['budgets'])).toBe(JSON.stringify({ maxTokens: 200, maxCost: 3, maxToolCalls: 4 }));
  });

  it('writes a budgets object once there is a budget, and none when all are cleared', () => {
    const doc = setBudgets(emptyDocument(), { maxTokens: 5 });
    expect(toSpec(doc)['budgets']).toEqual({ maxTokens: 5 });
    expect(toSpec(setBudgets(doc, { maxTokens: null }))).not.toHaveProperty('budgets');
  });
});

describe('setting the composition\'s fields', () => {
  it('sets the pattern and clears the description', () => {
    const doc = read({ description: 'd', pattern: 'Pipeline', nodes: [] });
    expect(toSpec(setComposition(doc, { pattern: 'Router', description: '' }))).toStrictEqual({ pattern: 'Router', nodes: [] });
  });
});

describe('every edit', () => {
  it('leaves the document it was given as it was', () => {
    const doc = read(REVIEW);
    const before = JSON.stringify(doc);
    addNode(doc, 'Join');
    ok(removeNode(doc, key(doc, 'review')));
    ok(renameNode(doc, key(doc, 'review'), 'x'));
    ok(connect(doc, key(doc, 'publish'), key(doc, 'writer')));
    ok(setNodeFields(doc, key(doc, 'writer'), { labels: ['x'], tools: ['mcp:a.b'] }));
    ok(setEdgeFields(doc, doc.edges[0]?.key ?? '', { when: 'x' }));
    setBudgets(doc, { maxTokens: 1 });
    setComposition(doc, { pattern: 'Router' });
    expect(JSON.stringify(doc)).toBe(before);
  });
});
