import { describe, expect, it } from 'vitest';
import { describeDiff, diffSpecs, isEmptyDiff, shortValue } from './diff.ts';

const BASE = {
  description: 'notes',
  pattern: 'CriticLoop',
  budgets: { maxTokens: 100, timeoutSeconds: 60 },
  nodes: [
    { id: 'writer', kind: 'LLMAgent', instruction: 'write', tools: ['mcp:a.b'] },
    { id: 'critic', kind: 'LLMAgent', output: { labels: ['approved', 'rejected'] } },
  ],
  edges: [
    { from: 'writer', to: 'critic' },
    { from: 'critic', to: 'writer', when: 'rejected', maxIterations: 3 },
  ],
};

type Spec = typeof BASE;

function changed(change: (spec: Spec) => unknown): string[] {
  return describeDiff(diffSpecs(BASE, change(structuredClone(BASE))));
}

describe('the diff of two specs', () => {
  it('is empty for the same spec, whatever the order of its keys', () => {
    const shuffled = { edges: BASE.edges.map((e) => ({ ...e })), nodes: BASE.nodes, budgets: { timeoutSeconds: 60, maxTokens: 100 }, pattern: 'CriticLoop', description: 'notes' };
    expect(isEmptyDiff(diffSpecs(BASE, shuffled))).toBe(true);
    expect(describeDiff(diffSpecs(BASE, shuffled))).toEqual([]);
  });

  it.each<[string, (spec: Spec) => unknown, string[]]>([
    ['a new pattern', (s) => ({ ...s, pattern: 'Pipeline' }), ['pattern: "CriticLoop" → "Pipeline"']],
    ['a description removed', (s) => ({ ...s, description: undefined }), ['description removed (was "notes")']],
    ['each budget on its own', (s) => ({ ...s, budgets: { maxTokens: 200, maxToolCalls: 3 } }), ['budgets.maxTokens: 100 → 200', 'budgets.timeoutSeconds removed (was 60)', 'budgets.maxToolCalls set to 3']],
    ['an unknown field', (s) => ({ ...s, colour: 'red' }), ['colour set to "red"']],
    ['a node added', (s) => ({ ...s, nodes: [...s.nodes, { id: 'publish', kind: 'LLMAgent' }] }), ['node publish added']],
    ['a node removed with its edges', (s) => ({ ...s, nodes: s.nodes.slice(1), edges: [] }), ['node writer removed', 'edge writer → critic removed', 'edge critic → writer (rejected) removed']],
    ['a node\'s changed fields by id', (s) => ({ ...s, nodes: [{ ...s.nodes[0], instruction: 'draft', model: 'm' }, s.nodes[1]] }), ['node writer: instruction: "write" → "draft"', 'node writer: model set to "m"']],
    ['a label inside a node\'s output', (s) => ({ ...s, nodes: [s.nodes[0], { ...s.nodes[1], output: { labels: ['ok', 'no'] } }] }), ['node critic: output.labels: ["approved","rejected"] → ["ok","no"]']],
    ['nodes listed in another order', (s) => ({ ...s, nodes: [s.nodes[1], s.nodes[0]] }), ['nodes reordered']],
    ['an edge added', (s) => ({ ...s, edges: [...s.edges, { from: 'critic', to: 'writer', when: 'approved' }] }), ['edge critic → writer (approved) added']],
    ['an edge\'s cap changed', (s) => ({ ...s, edges: [s.edges[0], { ...s.edges[1], maxIterations: 5 }] }), ['edge critic → writer (rejected): maxIterations: 3 → 5']],
    ['an edge\'s label changed', (s) => ({ ...s, edges: [s.edges[0], { ...s.edges[1], when: 'retry' }] }), ['edge critic → writer (retry): when: "rejected" → "retry"']],
    ['an edge moved to another node as removed and added', (s) => ({ ...s, edges: [{ from: 'writer', to: 'writer' }, s.edges[1]] }), ['edge writer → writer added', 'edge writer → critic removed']],
    ['edges listed in another order', (s) => ({ ...s, edges: [s.edges[1], s.edges[0]] }), ['edges reordered']],
  ])('shows %s', (_what, change, lines) => {
    expect(changed(change)).toEqual(lines);
  });

  it('tells two edges between the same two nodes apart by their place', () => {
    const two = { nodes: [], edges: [{ from: 'r', to: 'w', when: 'a' }, { from: 'r', to: 'w', when: 'b' }] };
    const diff = diffSpecs(two, { nodes: [], edges: [{ from: 'r', to: 'w', when: 'a' }] });
    expect(diff.edgesRemoved).toEqual([{ id: 'r→w#2', from: 'r', to: 'w', when: 'b' }]);
    expect(diff.edgesChanged).toEqual([]);
  });

  it('gives the structure behind the lines', () => {
    const diff = diffSpecs(BASE, { ...BASE, nodes: [{ ...BASE.nodes[0], instruction: 'draft' }, BASE.nodes[1]] });
    expect(diff.nodesChanged).toEqual([{ id: 'writer', changes: [{ path: 'instruction', before: 'write', after: 'draft' }] }]);
  });

  it('reads anything, a spec or not', () => {
    expect(describeDiff(diffSpecs(null, { pattern: 'Pipeline', nodes: [{ kind: 'Join' }, 'x'] }))).toEqual(['pattern set to "Pipeline"', 'node #0 added', 'node #1 added']);
  });
});

describe('a value in a line', () => {
  it.each([
    ['short', '"short"'],
    ['x'.repeat(60), `"${'x'.repeat(38)}…`],
    [[1, 2], '[1,2]'],
  ])('of %j reads %s', (value, shown) => {
    expect(shortValue(value)).toBe(shown);
  });
});
