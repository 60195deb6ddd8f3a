// ELK runs here in Node (`elk.bundled.js`) with the options module the page's Worker uses.
import ELK from 'elkjs/lib/elk.bundled.js';
import { describe, expect, it } from 'vitest';
import { edgeLabelText, elkGraph, ELK_OPTIONS, layoutGraph, type Layout } from './layout.ts';
import { canonicalOrder, parseSpec, type GraphSpec } from './spec.ts';

const humanReview = {
  pattern: 'CriticLoop',
  nodes: [
    { id: 'research', kind: 'LLMAgent', model: 'scripted' },
    { id: 'writer', kind: 'LLMAgent', model: 'scripted' },
    { id: 'review', kind: 'HumanApproval', prompt: 'Approve these notes?' },
    { id: 'publish', kind: 'LLMAgent' },
  ],
  edges: [
    { from: 'research', to: 'writer' },
    { from: 'writer', to: 'review' },
    { from: 'review', to: 'publish', when: 'approved' },
    { from: 'review', to: 'writer', when: 'rejected', maxIterations: 2 },
  ],
};

const fanOut = {
  pattern: 'FanOutFanIn',
  nodes: [
    { id: 'gather', kind: 'Parallel' },
    { id: 'headlines', kind: 'LLMAgent' },
    { id: 'conversions', kind: 'LLMAgent' },
    { id: 'local_time', kind: 'LLMAgent' },
    { id: 'combine', kind: 'Join' },
    { id: 'briefing', kind: 'LLMAgent' },
  ],
  edges: [
    { from: 'gather', to: 'headlines' },
    { from: 'gather', to: 'conversions' },
    { from: 'gather', to: 'local_time' },
    { from: 'headlines', to: 'combine' },
    { from: 'conversions', to: 'combine' },
    { from: 'local_time', to: 'combine' },
    { from: 'combine', to: 'briefing' },
  ],
};

const supervisor = {
  pattern: 'Supervisor',
  nodes: [
    { id: 'lead', kind: 'Supervisor', children: ['researcher', 'analyst'] },
    { id: 'researcher', kind: 'LLMAgent' },
    { id: 'analyst', kind: 'LLMAgent' },
  ],
  edges: [],
};

const planAndExecute = {
  pattern: 'PlanAndExecute',
  nodes: [
    { id: 'planner', kind: 'LLMAgent' },
    { id: 'executor', kind: 'LLMAgent' },
    { id: 'checker', kind: 'LLMAgent', output: { labels: ['done', 'revise'] } },
    { id: 'reporter', kind: 'LLMAgent' },
  ],
  edges: [
    { from: 'planner', to: 'executor' },
    { from: 'executor', to: 'checker' },
    { from: 'checker', to: 'reporter', when: 'done' },
    { from: 'checker', to: 'executor', when: 'revise', maxIterations: 2 },
  ],
};

function graph(spec: unknown): GraphSpec {
  const g = parseSpec(spec);
  if (g === null) throw new Error('not a spec');
  return g;
}

/** A deterministic shuffle (a small LCG), so a failure can be reproduced. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i -= 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    const a = out[i];
    const b = out[j];
    if (a === undefined || b === undefined) continue;
    out[i] = b;
    out[j] = a;
  }
  return out;
}

function reordered(spec: { readonly nodes: readonly unknown[]; readonly edges: readonly unknown[] }, seed: number): unknown {
  return { ...spec, nodes: shuffled(spec.nodes, seed), edges: shuffled(spec.edges, seed + 7) };
}

/** A layout as plain, order-independent data, to compare two of them exactly. */
function plain(layout: Layout): unknown {
  return {
    width: layout.width,
    height: layout.height,
    nodes: [...layout.nodes.entries()].sort(([a], [b]) => (a < b ? -1 : 1)),
    edges: [...layout.edges.entries()].sort(([a], [b]) => (a < b ? -1 : 1)),
  };
}

const elk = new ELK();

describe('the run graph layout', () => {
  it('pins the random seed and breaks cycles by the canonical order, in the one options set the Worker uses', () => {
    expect(ELK_OPTIONS['elk.randomSeed']).toBe('1');
    expect(ELK_OPTIONS['elk.layered.cycleBreaking.strategy']).toBe('MODEL_ORDER');
    expect(elkGraph(graph(humanReview)).layoutOptions).toBe(ELK_OPTIONS);
  });

  it.each([
    ['human-review', humanReview],
    ['fan-out-fan-in', fanOut],
    ['supervisor', supervisor],
    ['plan-and-execute', planAndExecute],
  ])('gives the %s spec the same positions whatever order its nodes and edges are listed in', async (_name, spec) => {
    const reference = plain(await layoutGraph(elk, graph(spec)));
    for (const seed of [1, 2, 3, 42, 1000]) {
      expect(plain(await layoutGraph(elk, graph(reordered(spec, seed))))).toEqual(reference);
    }
  });

  it('feeds ELK nodes in a topological order of the graph without its back edges, ties by id', () => {
    expect(canonicalOrder(graph(reordered(humanReview, 5)))).toEqual(['research', 'writer', 'review', 'publish']);
    expect(canonicalOrder(graph(reordered(fanOut, 9)))).toEqual(['gather', 'conversions', 'headlines', 'local_time', 'combine', 'briefing']);
  });

  it('routes a loop back around the nodes it closes, from the tail\'s right side to the head\'s left, with its label', async () => {
    const layout = await layoutGraph(elk, graph(humanReview));
    const writer = layout.nodes.get('writer');
    const review = layout.nodes.get('review');
    const back = layout.edges.get('review→writer');
    if (writer === undefined || review === undefined || back === undefined) throw new Error('missing from the layout');
    expect(writer.x).toBeLessThan(review.x);
    expect(back.points.length).toBeGreaterThan(2);
    const first = back.points[0];
    const last = back.points[back.points.length - 1];
    expect(first?.x).toBe(review.x + review.width);
    expect(last?.x).toBe(writer.x);
    // Around, not through: every bend lies outside both nodes' boxes, below them.
    const lowest = Math.max(...back.points.map((p) => p.y));
    expect(lowest).toBeGreaterThan(Math.max(writer.y + writer.height, review.y + review.height));
    expect(back.label).not.toBeNull();
    expect(edgeLabelText({ when: 'rejected', maxIterations: 2 })).toBe('rejected · max 2');
    expect(layout.edges.get('review→publish')?.label).not.toBeNull();
    expect(layout.edges.get('writer→review')?.label).toBeNull();
  });

  it('stands parallel branches side by side in one layer between the fan-out and the join', async () => {
    const layout = await layoutGraph(elk, graph(fanOut));
    const branches = ['headlines', 'conversions', 'local_time'].map((id) => layout.nodes.get(id));
    const xs = new Set(branches.map((b) => b?.x));
    const ys = new Set(branches.map((b) => b?.y));
    expect(xs.size).toBe(1);
    expect(ys.size).toBe(3);
    const [x] = [...xs];
    expect(layout.nodes.get('gather')?.x).toBeLessThan(x ?? 0);
    expect(layout.nodes.get('combine')?.x).toBeGreaterThan(x ?? 0);
  });

  it('draws a supervisor\'s children after it, on "delegates" edges named by their tool', async () => {
    const g = graph(supervisor);
    expect(g.edges.map((e) => [e.id, e.kind, e.when])).toEqual([
      ['lead→researcher', 'delegation', 'n_researcher'],
      ['lead→analyst', 'delegation', 'n_analyst'],
    ]);
    const layout = await layoutGraph(elk, g);
    expect(layout.nodes.get('lead')?.x).toBeLessThan(layout.nodes.get('analyst')?.x ?? 0);
  });

  it('lays the layers top to bottom when asked (a canvas taller than wide, rule 12.20), one spec one layout either way', async () => {
    const down = await layoutGraph(elk, graph(humanReview), 'DOWN');
    const again = await layoutGraph(elk, graph(humanReview), 'DOWN');
    expect([...again.nodes]).toEqual([...down.nodes]);
    const y = (id: string): number => down.nodes.get(id)?.y ?? Number.NaN;
    const x = (id: string): number => down.nodes.get(id)?.x ?? Number.NaN;
    expect(y('research')).toBeLessThan(y('writer'));
    expect(y('writer')).toBeLessThan(y('review'));
    expect(y('review')).toBeLessThan(y('publish'));
    expect(new Set(['research', 'writer', 'review', 'publish'].map(x)).size).toBeLessThan(4);
    expect(elkGraph(graph(humanReview), 'DOWN').layoutOptions?.['elk.direction']).toBe('DOWN');
    expect(elkGraph(graph(humanReview)).layoutOptions).toBe(ELK_OPTIONS);
  });
});
