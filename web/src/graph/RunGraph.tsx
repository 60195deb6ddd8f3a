// The run graph's canvas (loaded lazily with ELK's API and React Flow, apart from the page's
// first bundle): the spec's nodes and edges laid out by ELK in a Worker, drawn from the run
// model as events arrive. Read-only: nothing is dragged, connected or deleted; Tab reaches each
// node (edges are not stops), Enter or Space selects it and the details below follow the
// selection, Escape clears it. The page scrolls over the canvas; the buttons zoom and fit.

import { Panel, ReactFlow, useReactFlow, type NodeChange } from '@xyflow/react';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { RunSnapshot } from '../run/model.ts';
import { button } from '../ui/classes.ts';
import { FlowNode, type RunFlowNode } from './FlowNode.tsx';
import { RoutedEdge, type RunFlowEdge } from './RoutedEdge.tsx';
import { layoutInWorker } from './elk.ts';
import './graph.css';
import { edgeLabelText, type Layout } from './layout.ts';
import { loopRoundsOf } from './loops.ts';
import { nodeAriaLabel, nodeCardData } from './node-card.ts';
import { edgeKey, type GraphSpec } from './spec.ts';
import { useColorMode } from './color-mode.ts';

const nodeTypes = { run: FlowNode };
const edgeTypes = { routed: RoutedEdge };

/** What a focused node's hidden description says (both keys: React Flow 12.12 reads the "keyboardDisabled" one with keyboard access on). */
const NODE_HELP = 'Press Enter or Space to show this node\'s details below the graph; Escape clears the selection.';
const ariaLabelConfig = {
  'node.a11yDescription.default': NODE_HELP,
  'node.a11yDescription.keyboardDisabled': NODE_HELP,
  'edge.a11yDescription.default': 'An edge of the run graph.',
};

export interface RunGraphProps {
  readonly graph: GraphSpec;
  /** The composition's name, for the canvas's label. */
  readonly title: string;
  /** The run model as of the page's last frame: a new object each time the model moved. */
  readonly run: RunSnapshot;
  readonly selected: string | null;
  readonly onSelect: (id: string | null) => void;
}

export default function RunGraph({ graph, title, run, selected, onSelect }: RunGraphProps) {
  const [layout, setLayout] = useState<{ readonly graph: GraphSpec; readonly layout: Layout } | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [width, setWidth] = useState(1200);
  const frame = useRef<HTMLDivElement>(null);
  const theme = useColorMode();

  useEffect(() => {
    let alive = true;
    layoutInWorker(graph).then(
      (result) => {
        if (alive) setLayout({ graph, layout: result });
      },
      (error: unknown) => {
        if (alive) setFailure(error instanceof Error ? error.message : String(error));
      },
    );
    return () => {
      alive = false;
    };
  }, [graph]);

  useEffect(() => {
    const element = frame.current;
    if (element === null) return undefined;
    const observer = new ResizeObserver(() => {
      setWidth(element.clientWidth);
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
    };
  }, []);

  const placed = layout?.layout ?? null;
  const nodes = useMemo<RunFlowNode[]>(() => {
    if (placed === null) return [];
    const { model } = run;
    const rounds = loopRoundsOf(graph, model);
    const out: RunFlowNode[] = [];
    for (const spec of graph.nodes) {
      const box = placed.nodes.get(spec.id);
      const view = model.nodes.get(spec.id);
      if (box === undefined || view === undefined) continue;
      const data = nodeCardData(view, rounds.get(spec.id) ?? null);
      out.push({
        id: spec.id,
        type: 'run',
        position: { x: box.x, y: box.y },
        width: box.width,
        height: box.height,
        data,
        selected: spec.id === selected,
        ariaLabel: nodeAriaLabel(data),
        draggable: false,
        connectable: false,
        deletable: false,
      });
    }
    return out;
  }, [placed, graph, run, selected]);

  const edges = useMemo<RunFlowEdge[]>(() => {
    if (placed === null) return [];
    const { model } = run;
    const out: RunFlowEdge[] = [];
    for (const edge of graph.edges) {
      const route = placed.edges.get(edge.id);
      if (route === undefined) continue;
      const key = edgeKey(edge.from, edge.to);
      const count = model.edgesTaken.get(key) ?? 0;
      const live = model.liveEdges.has(key);
      const text = edgeLabelText(edge);
      out.push({
        id: edge.id,
        type: 'routed',
        source: edge.from,
        target: edge.to,
        selectable: false,
        focusable: false,
        deletable: false,
        ariaLabel: `${edge.from} to ${edge.to}${text === null ? '' : ` (${text})`}${edge.kind === 'delegation' ? ', a delegation' : ''}: ${count === 0 ? 'not taken' : `taken ${count} ${count === 1 ? 'time' : 'times'}`}${live ? ', into the running node' : ''}`,
        data: { points: route.points, label: route.label, text, count, live, kind: edge.kind },
      });
    }
    return out;
  }, [placed, graph, run]);

  const onNodesChange = (changes: NodeChange<RunFlowNode>[]): void => {
    let next: string | null | undefined;
    for (const change of changes) {
      if (change.type !== 'select') continue;
      if (change.selected) next = change.id;
      else if (change.id === selected && next === undefined) next = null;
    }
    if (next !== undefined && next !== selected) onSelect(next);
  };

  const scale = placed === null || placed.width === 0 ? 1 : Math.min(1, (width - 16) / placed.width);
  const height = placed === null ? 240 : Math.round(Math.min(480, Math.max(220, placed.height * scale + 56)));

  return (
    <div ref={frame} className="relative w-full overflow-hidden rounded-lg border border-slate-300 bg-slate-50 dark:border-slate-700 dark:bg-slate-950" style={{ height }}>
      {failure !== null ? (
        <p role="alert" className="p-4 text-red-800 dark:text-red-200">
          The graph could not be laid out: {failure}
        </p>
      ) : placed === null ? (
        <p role="status" className="p-4 text-slate-600 dark:text-slate-400">
          Laying out the graph…
        </p>
      ) : (
        <ReactFlow<RunFlowNode, RunFlowEdge>
          aria-label={`Graph of ${title}: ${graph.nodes.length} ${graph.nodes.length === 1 ? 'node' : 'nodes'}. Tab to a node and press Enter to see its details.`}
          ariaLabelConfig={ariaLabelConfig}
          colorMode={theme}
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          onNodesChange={onNodesChange}
          nodesDraggable={false}
          nodesConnectable={false}
          nodesFocusable
          edgesFocusable={false}
          elementsSelectable
          deleteKeyCode={null}
          selectionKeyCode={null}
          multiSelectionKeyCode={null}
          zoomOnScroll={false}
          zoomOnDoubleClick={false}
          panOnScroll={false}
          preventScrolling={false}
          fitView
          fitViewOptions={{ padding: 0.06, maxZoom: 1, minZoom: 0.3 }}
          minZoom={0.3}
          maxZoom={1.5}
        >
          <ViewButtons layout={placed} />
        </ReactFlow>
      )}
    </div>
  );
}

/** Zoom and fit, as plain buttons (React Flow's Controls have no role to carry a label); refits when the layout changes. */
function ViewButtons({ layout }: { readonly layout: Layout }) {
  const flow = useReactFlow();
  useEffect(() => {
    const handle = window.requestAnimationFrame(() => {
      void flow.fitView({ padding: 0.06, maxZoom: 1, minZoom: 0.3 });
    });
    return () => {
      window.cancelAnimationFrame(handle);
    };
  }, [flow, layout]);
  const small = `${button} !px-2 !py-0.5 text-sm`;
  return (
    <Panel position="top-right" role="group" aria-label="Graph view" className="flex gap-1">
      <button type="button" className={small} aria-label="Zoom in" onClick={() => void flow.zoomIn()}>
        +
      </button>
      <button type="button" className={small} aria-label="Zoom out" onClick={() => void flow.zoomOut()}>
        −
      </button>
      <button type="button" className={small} onClick={() => void flow.fitView({ padding: 0.06, maxZoom: 1 })}>
        Fit
      </button>
    </Panel>
  );
}
