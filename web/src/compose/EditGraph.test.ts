import { describe, expect, it } from 'vitest';
import { fromSpec, type CanvasDocument } from '../canvas/document.ts';
import { renameNode, setNodeFields } from '../canvas/edit.ts';
import { fittedViewport, MIN_FIT_ZOOM, nodeDetail, nodeLabel, selectionAfter, structureOf } from './EditGraph.tsx';

function doc(spec: unknown): CanvasDocument {
  const read = fromSpec(spec);
  if (!read.ok) throw new Error(JSON.stringify(read.problems));
  return read.doc;
}

const review = doc({
  pattern: 'CriticLoop',
  nodes: [
    { id: 'writer', kind: 'LLMAgent', model: 'scripted', tools: ['a2a:demo-writer.draft'], instruction: 'Write.' },
    { id: 'review', kind: 'HumanApproval', prompt: 'Publish?' },
    { id: 'lead', kind: 'Supervisor', children: ['writer'] },
    { id: 'route', kind: 'Router', output: { labels: ['a', 'b'] } },
  ],
  edges: [
    { from: 'writer', to: 'review' },
    { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2 },
  ],
});

describe('the canvas graph', () => {
  it('fits a graph that fits at 75 % or more, centred and never enlarged past 100 % (12.23)', () => {
    const small = fittedViewport({ x: 24, y: 24, width: 400, height: 100 }, { width: 800, height: 600 });
    expect(small.zoom).toBe(1);
    expect(small.x + 24 + 200).toBeCloseTo(400);
    expect(small.y + 24 + 50).toBeCloseTo(300);
    const medium = fittedViewport({ x: 0, y: 0, width: 1000, height: 100 }, { width: 848, height: 600 });
    expect(medium.zoom).toBeCloseTo(0.8);
  });

  it('starts a graph too big for 75 % at its top-left corner, where its first node is (12.23)', () => {
    const big = fittedViewport({ x: 24, y: 40, width: 3000, height: 400 }, { width: 800, height: 600 });
    expect(big).toEqual({ x: 24 - 24 * MIN_FIT_ZOOM, y: 24 - 40 * MIN_FIT_ZOOM, zoom: MIN_FIT_ZOOM });
  });

  it('says what a node is besides its id and kind, and names its problems for a screen reader', () => {
    expect(review.nodes.map(nodeDetail)).toEqual(['model scripted · 1 tool', 'asks a person', 'delegates to writer', 'routes a, b']);
    expect(nodeLabel({ id: 'writer', kind: 'LLMAgent', detail: 'model scripted', errors: 2, warnings: 1 })).toBe('writer, LLMAgent, model scripted, 2 errors, 1 warning');
    expect(nodeLabel({ id: 'join', kind: 'Join', detail: '', errors: 0, warnings: 0 })).toBe('join, Join');
  });

  it('lays out again for a change of ids, ends or labels, never for a text field', () => {
    const writer = review.nodes[0]?.key ?? '';
    const before = structureOf(review);
    const instructed = setNodeFields(review, writer, { instruction: 'Write better.' });
    if (!instructed.ok) throw new Error(instructed.error.message);
    expect(structureOf(instructed.doc)).toBe(before);
    const renamed = renameNode(review, writer, 'author');
    if (!renamed.ok) throw new Error(renamed.error.message);
    expect(structureOf(renamed.doc)).not.toBe(before);
  });

  it('follows what a batch of select changes selects, whichever order it deselects the old one in', () => {
    const critic = { kind: 'node', key: 'n2' } as const;
    const selectWriter = { type: 'select', id: 'n1', selected: true };
    const dropCritic = { type: 'select', id: 'n2', selected: false };
    expect(selectionAfter([selectWriter, dropCritic], 'node', critic)).toEqual({ kind: 'node', key: 'n1' });
    expect(selectionAfter([dropCritic, selectWriter], 'node', critic)).toEqual({ kind: 'node', key: 'n1' });
    expect(selectionAfter([dropCritic], 'node', critic)).toBeNull();
    expect(selectionAfter([dropCritic], 'edge', critic)).toBeUndefined();
    expect(selectionAfter([{ type: 'position', id: 'n1' }], 'node', critic)).toBeUndefined();
  });
});
