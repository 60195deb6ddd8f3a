// The run graph's layout: ELK layered, left to right, one options set for the Web Worker the
// page uses (`elk.ts`) and for the test that runs ELK in Node (`layout.test.ts`), so what is
// tested is what is drawn. One spec always gives one layout: the random seed is pinned and the
// nodes and edges are fed in a canonical order (`canonicalOrder`, then edges by that order and
// id), whatever order the spec lists them in. Loops: with model-order cycle breaking, ELK
// reverses exactly the back edges (they point to a node earlier in the canonical order) and
// routes them around, and the edge's `sections` (start, bend points, end) are drawn as they are.
// The parallel branches of a fan-out share a layer, so they stand side by side.

import type { ElkExtendedEdge, ElkNode, ElkPoint, LayoutOptions } from 'elkjs/lib/elk-api.js';
import { canonicalOrder, compare, type GraphSpec } from './spec.ts';

export const NODE_WIDTH = 200;
export const NODE_HEIGHT = 112;

export const ELK_OPTIONS: LayoutOptions = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.randomSeed': '1',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.spacing.nodeNode': '36',
  'elk.layered.spacing.nodeNodeBetweenLayers': '64',
  'elk.layered.spacing.edgeNodeBetweenLayers': '28',
  'elk.spacing.edgeNode': '24',
  'elk.spacing.edgeEdge': '16',
  'elk.spacing.edgeLabel': '4',
  'elk.layered.feedbackEdges': 'true',
  'elk.padding': '[top=24,left=24,bottom=24,right=24]',
};

/** The size a label's text needs, estimated (12 px sans-serif, 6.5 px a character, with padding). */
export function labelSize(text: string): { readonly width: number; readonly height: number } {
  return { width: Math.ceil(text.length * 6.5 + 12), height: 20 };
}

/** What an edge's label says: its `when`, and a loop's cap. */
export function edgeLabelText(edge: { readonly when: string | null; readonly maxIterations: number | null }): string | null {
  const parts: string[] = [];
  if (edge.when !== null) parts.push(edge.when);
  if (edge.maxIterations !== null) parts.push(`max ${edge.maxIterations}`);
  return parts.length === 0 ? null : parts.join(' · ');
}

/** Which way the layers run: left to right, or top to bottom (the canvas, when it is taller than wide: rule 12.20). */
export type Direction = 'RIGHT' | 'DOWN';

/** The ELK graph of a spec, in canonical order. */
export function elkGraph(graph: GraphSpec, direction: Direction = 'RIGHT'): ElkNode {
  const order = canonicalOrder(graph);
  const rank = new Map(order.map((id, i) => [id, i]));
  const at = (id: string): number => rank.get(id) ?? Number.MAX_SAFE_INTEGER;
  const edges = [...graph.edges].sort((a, b) => at(a.from) - at(b.from) || at(a.to) - at(b.to) || compare(a.id, b.id));
  return {
    id: 'root',
    layoutOptions: direction === 'RIGHT' ? ELK_OPTIONS : { ...ELK_OPTIONS, 'elk.direction': direction },
    children: order.map((id) => ({ id, width: NODE_WIDTH, height: NODE_HEIGHT })),
    edges: edges.map((edge): ElkExtendedEdge => {
      const label = edgeLabelText(edge);
      return {
        id: edge.id,
        sources: [edge.from],
        targets: [edge.to],
        ...(label === null ? {} : { labels: [{ id: `${edge.id}:label`, text: label, ...labelSize(label), layoutOptions: { 'elk.edgeLabels.placement': 'TAIL' } }] }),
      };
    }),
  };
}

export interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export interface EdgeRoute {
  /** The route from the source's side to the target's, through ELK's bend points. */
  readonly points: readonly ElkPoint[];
  /** Where the label goes (its top-left corner and size), if the edge has one. */
  readonly label: Box | null;
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly nodes: ReadonlyMap<string, Box>;
  readonly edges: ReadonlyMap<string, EdgeRoute>;
}

/** The positions ELK gave, read into the shape the canvas draws. */
export function readLayout(result: ElkNode): Layout {
  const nodes = new Map<string, Box>();
  for (const child of result.children ?? []) {
    nodes.set(child.id, { x: child.x ?? 0, y: child.y ?? 0, width: child.width ?? NODE_WIDTH, height: child.height ?? NODE_HEIGHT });
  }
  const edges = new Map<string, EdgeRoute>();
  for (const edge of result.edges ?? []) {
    const points: ElkPoint[] = [];
    for (const section of edge.sections ?? []) {
      points.push(section.startPoint, ...(section.bendPoints ?? []), section.endPoint);
    }
    const label = edge.labels?.[0];
    edges.set(edge.id, {
      points: points.map((p) => ({ x: p.x, y: p.y })),
      label: label === undefined ? null : { x: label.x ?? 0, y: label.y ?? 0, width: label.width ?? 0, height: label.height ?? 0 },
    });
  }
  return { width: result.width ?? 0, height: result.height ?? 0, nodes, edges };
}

/** What lays a graph out: ELK in a Worker in the page, ELK bundled in the tests. */
export interface Layouter {
  layout(graph: ElkNode): Promise<ElkNode>;
}

/** Lays a spec out. */
export async function layoutGraph(elk: Layouter, graph: GraphSpec, direction: Direction = 'RIGHT'): Promise<Layout> {
  if (graph.nodes.length === 0) return { width: 0, height: 0, nodes: new Map(), edges: new Map() };
  return readLayout(await elk.layout(elkGraph(graph, direction)));
}
