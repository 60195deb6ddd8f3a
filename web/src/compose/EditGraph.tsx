// The canvas (loaded lazily with React Flow and ELK, apart from the console's first bundle): the
// document's nodes and edges, laid out by ELK in a Worker, edited by pointer or keyboard.
//
// - Layout (rules 12.20–12.24): left to right, or top to bottom when the canvas is taller than
//   wide; one spec always gives one layout (graph/layout.ts). The graph is laid out again when
//   its nodes or edges change or a resize crosses the two directions, only while nobody has
//   moved a node; after a drag, positions stay until Tidy or the next load. A loaded graph is
//   fitted to the view, never below 75 % zoom; one too big starts at its first node. The view
//   stays fitted as the canvas resizes until the person pans or zooms.
// - Editing (12.14, 12.29): an edge from a node's out handle to another's in handle; Tab moves
//   through nodes and edges, Enter or Space selects one (the inspector opens it), Delete or
//   Backspace removes it, arrows move a selected node. A palette entry dropped on the canvas
//   adds its node there.
// - Read-only (12.68, narrow screens): nothing moves, connects or is removed; selecting still
//   opens the inspector.

import {
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type NodeProps,
} from '@xyflow/react';
import { useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import type { CanvasDocument } from '../canvas/document.ts';
import { toSpec } from '../canvas/document.ts';
import { findingsOnEdge, findingsOnNode, type PlacedFindings } from '../canvas/findings.ts';
import { layoutInWorker } from '../graph/elk.ts';
import '../graph/graph.css';
import { edgeLabelText, NODE_HEIGHT, NODE_WIDTH, type Direction, type EdgeRoute } from '../graph/layout.ts';
import { RoutedEdge, type RunFlowEdge } from '../graph/RoutedEdge.tsx';
import { edgeKey, parseSpec } from '../graph/spec.ts';
import { itemFromData, PALETTE_MIME, type PaletteItem } from './palette.ts';
import { useColorMode } from '../graph/color-mode.ts';

/** What is selected on the canvas: a node or an edge, by its canvas key. */
export type Selection = { readonly kind: 'node' | 'edge'; readonly key: string } | null;

export interface XY {
  readonly x: number;
  readonly y: number;
}

export interface EditGraphProps {
  readonly doc: CanvasDocument;
  /** The Composition's name or "Untitled", for the canvas's label. */
  readonly title: string;
  readonly findings: PlacedFindings;
  readonly selection: Selection;
  readonly onSelect: (selection: Selection) => void;
  readonly onConnect: (fromKey: string, toKey: string) => void;
  readonly onDelete: (selection: NonNullable<Selection>) => void;
  /** A palette entry dropped at a point of the graph. */
  readonly onDropItem: (item: PaletteItem, at: XY) => void;
  readonly readOnly: boolean;
  /** A new value lays the graph out afresh and fits it (Tidy, a load). */
  readonly layoutEpoch: number;
}

interface EditNodeData extends Record<string, unknown> {
  readonly id: string;
  readonly kind: string;
  readonly detail: string;
  readonly errors: number;
  readonly warnings: number;
  readonly direction: Direction;
  readonly readOnly: boolean;
}

type EditFlowNode = Node<EditNodeData, 'edit'>;

/** The fewest zoom a loaded graph is fitted at (rule 12.23). */
export const MIN_FIT_ZOOM = 0.75;

/** What a node says besides its id and kind: its model and tools, a router's labels, a supervisor's children. */
export function nodeDetail(node: CanvasDocument['nodes'][number]): string {
  const parts: string[] = [];
  if (node.model !== null) parts.push(`model ${node.model}`);
  if (node.tools !== null && node.tools.length > 0) parts.push(`${node.tools.length} ${node.tools.length === 1 ? 'tool' : 'tools'}`);
  if (node.labels !== null && node.labels.length > 0) parts.push(`routes ${node.labels.join(', ')}`);
  if (node.children !== null && node.children.length > 0) parts.push(`delegates to ${node.children.join(', ')}`);
  if (node.prompt !== null) parts.push('asks a person');
  return parts.join(' · ');
}

/** What a node is called for a screen reader: id, kind, and its problems. */
export function nodeLabel(data: Pick<EditNodeData, 'id' | 'kind' | 'detail' | 'errors' | 'warnings'>): string {
  const problems = [data.errors > 0 ? `${data.errors} ${data.errors === 1 ? 'error' : 'errors'}` : '', data.warnings > 0 ? `${data.warnings} ${data.warnings === 1 ? 'warning' : 'warnings'}` : '']
    .filter((p) => p !== '')
    .join(', ');
  return [data.id, data.kind, data.detail, problems].filter((p) => p !== '').join(', ');
}

/** The nodes and edges as text: when it changes, the layout may (ids and ends, never texts). */
export function structureOf(doc: CanvasDocument): string {
  const graph = parseSpec(toSpec(doc));
  if (graph === null) return '';
  return JSON.stringify([graph.nodes.map((n) => n.id), graph.edges.map((e) => [e.id, edgeLabelText(e)])]);
}

function EditNode({ data, selected }: NodeProps<EditFlowNode>) {
  const across = data.direction === 'RIGHT';
  const frame =
    data.errors > 0
      ? 'border-red-700 bg-red-50 dark:border-red-400 dark:bg-red-950'
      : data.warnings > 0
        ? 'border-amber-700 bg-amber-50 dark:border-amber-300 dark:bg-amber-950'
        : 'border-slate-500 bg-white dark:border-slate-400 dark:bg-slate-900';
  return (
    <>
      <Handle type="target" position={across ? Position.Left : Position.Top} isConnectable={!data.readOnly} />
      <div
        className={`flex h-full w-full flex-col justify-between gap-1 rounded-lg border-2 px-3 py-2 text-left text-slate-900 shadow-sm dark:text-slate-100 ${frame} ${selected ? 'outline-3 outline-offset-2 outline-sky-700 dark:outline-sky-300' : ''}`}
      >
        <div className="flex items-baseline justify-between gap-2">
          <span className="truncate font-mono text-sm font-semibold" title={data.id}>
            {data.id}
          </span>
          <span className="shrink-0 text-xs text-slate-700 dark:text-slate-300">{data.kind}</span>
        </div>
        <div className="line-clamp-2 text-xs text-slate-700 dark:text-slate-300">{data.detail === '' ? ' ' : data.detail}</div>
        <div className="flex gap-2 text-xs font-semibold">
          {data.errors > 0 ? (
            <span className="text-red-800 dark:text-red-200">
              <span aria-hidden="true">✗ </span>
              {data.errors} {data.errors === 1 ? 'error' : 'errors'}
            </span>
          ) : null}
          {data.warnings > 0 ? (
            <span className="text-amber-800 dark:text-amber-200">
              <span aria-hidden="true">! </span>
              {data.warnings} {data.warnings === 1 ? 'warning' : 'warnings'}
            </span>
          ) : null}
        </div>
      </div>
      <Handle type="source" position={across ? Position.Right : Position.Bottom} isConnectable={!data.readOnly} />
    </>
  );
}

const nodeTypes = { edit: EditNode };
const edgeTypes = { routed: RoutedEdge };

const HELP = 'Press Enter or Space to open this node in the inspector, Delete to remove it, and the arrow keys to move it.';
const ariaLabelConfig = {
  'node.a11yDescription.default': HELP,
  'node.a11yDescription.keyboardDisabled': HELP,
  'edge.a11yDescription.default': 'Press Enter or Space to open this edge in the inspector, and Delete to remove it.',
};

interface Placement {
  readonly positions: ReadonlyMap<string, XY>;
  /** ELK's routes of the edges, by the layout's edge id (`from→to`, `#2`…), while no node was moved. */
  readonly routes: ReadonlyMap<string, EdgeRoute>;
  /** The laid-out graph's size, edges and labels included (ELK's, with its padding). */
  readonly extent: { readonly width: number; readonly height: number };
  /** Someone dragged or moved a node since the last layout. */
  readonly moved: boolean;
  readonly direction: Direction;
  /** What was laid out: the structure and the layout epoch. */
  readonly structure: string;
  readonly epoch: number;
}

/**
 * The selection after React Flow's select changes of nodes or edges (`kind`): what one of them
 * selects, else nothing when the selected one was deselected, else unchanged (undefined). One
 * batch may deselect the old and select the new in either order.
 */
export function selectionAfter(changes: readonly { readonly type: string; readonly id?: string; readonly selected?: boolean }[], kind: 'node' | 'edge', current: Selection): Selection | undefined {
  const selects = changes.filter((c): c is { type: 'select'; id: string; selected: boolean } => c.type === 'select' && typeof c.id === 'string');
  const chosen = selects.find((c) => c.selected);
  if (chosen !== undefined) return { kind, key: chosen.id };
  if (current?.kind === kind && selects.some((c) => c.id === current.key && !c.selected)) return null;
  return undefined;
}

/**
 * The viewport that shows `bounds` in a `width`×`height` frame: fitted and centred, never above
 * 100 % nor below 75 % zoom; a graph too big for that starts at its top-left corner, where ELK
 * puts its first layer and so its first node (rule 12.23).
 */
export function fittedViewport(
  bounds: { readonly x: number; readonly y: number; readonly width: number; readonly height: number },
  frame: { readonly width: number; readonly height: number },
  padding = 24,
): { readonly x: number; readonly y: number; readonly zoom: number } {
  if (bounds.width <= 0 || bounds.height <= 0 || frame.width <= 0 || frame.height <= 0) return { x: padding, y: padding, zoom: 1 };
  const zoom = Math.min(1, (frame.width - 2 * padding) / bounds.width, (frame.height - 2 * padding) / bounds.height);
  if (zoom >= MIN_FIT_ZOOM) {
    return { x: (frame.width - bounds.width * zoom) / 2 - bounds.x * zoom, y: (frame.height - bounds.height * zoom) / 2 - bounds.y * zoom, zoom };
  }
  return { x: padding - bounds.x * MIN_FIT_ZOOM, y: padding - bounds.y * MIN_FIT_ZOOM, zoom: MIN_FIT_ZOOM };
}

export default function EditGraph(props: EditGraphProps) {
  return (
    <ReactFlowProvider>
      <Canvas {...props} />
    </ReactFlowProvider>
  );
}

function Canvas(props: EditGraphProps) {
  const { doc, title, findings, selection, onSelect, onConnect, onDelete, onDropItem, readOnly, layoutEpoch } = props;
  const flow = useReactFlow<EditFlowNode>();
  const frame = useRef<HTMLDivElement>(null);
  const theme = useColorMode();
  const [size, setSize] = useState({ width: 0, height: 0 });
  const direction: Direction = size.height > size.width ? 'DOWN' : 'RIGHT';
  const [placement, setPlacement] = useState<Placement>({ positions: new Map(), routes: new Map(), extent: { width: 0, height: 0 }, moved: false, direction: 'RIGHT', structure: '', epoch: -1 });
  const [failure, setFailure] = useState<string | null>(null);
  /** Bumped when a layout should be fitted to the view (a load, Tidy, the first layout). */
  const [fitRequest, setFitRequest] = useState(0);
  /** The person panned or zoomed since the last fit: resizes no longer refit (rule 12.24). */
  const [userMoved, setUserMoved] = useState(false);
  /** Where nodes without a layout position go, by key (a drop). */
  const [dropped, setDropped] = useState<ReadonlyMap<string, XY>>(new Map());
  const pendingDrop = useRef<XY | null>(null);

  useEffect(() => {
    const element = frame.current;
    if (element === null) return undefined;
    const observer = new ResizeObserver(() => {
      setSize({ width: element.clientWidth, height: element.clientHeight });
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
    };
  }, []);

  const structure = useMemo(() => structureOf(doc), [doc]);
  const keyOf = useMemo(() => new Map(doc.nodes.map((n) => [n.id, n.key])), [doc]);

  // A node just added by a drop takes the dropped point.
  useEffect(() => {
    const at = pendingDrop.current;
    if (at === null) return;
    const unplaced = doc.nodes.filter((n) => !placement.positions.has(n.key) && !dropped.has(n.key));
    const last = unplaced.at(-1);
    if (last === undefined) return;
    pendingDrop.current = null;
    setDropped((d) => new Map(d).set(last.key, at));
  }, [doc, placement, dropped]);

  // Lay out again when the structure, the direction or the epoch changed, unless a node was
  // moved by hand (then only Tidy or a load, which change the epoch, lay out again).
  useEffect(() => {
    if (size.width === 0) return undefined;
    const fresh = placement.epoch !== layoutEpoch;
    const changed = placement.structure !== structure || placement.direction !== direction;
    if (!fresh && (!changed || placement.moved)) return undefined;
    const graph = parseSpec(toSpec(doc));
    if (graph === null) return undefined;
    let alive = true;
    layoutInWorker(graph, direction).then(
      (layout) => {
        if (!alive) return;
        const positions = new Map<string, XY>();
        for (const [id, box] of layout.nodes) {
          const key = keyOf.get(id);
          if (key !== undefined) positions.set(key, { x: box.x, y: box.y });
        }
        setFailure(null);
        setDropped(new Map());
        setPlacement({ positions, routes: layout.edges, extent: { width: layout.width, height: layout.height }, moved: false, direction, structure, epoch: layoutEpoch });
        if (fresh || !userMoved) {
          setUserMoved(false);
          setFitRequest((n) => n + 1);
        }
      },
      (error: unknown) => {
        if (alive) setFailure(error instanceof Error ? error.message : String(error));
      },
    );
    return () => {
      alive = false;
    };
  }, [doc, structure, direction, layoutEpoch, keyOf, placement, size.width, userMoved]);

  const nodes = useMemo<EditFlowNode[]>(() => {
    const known = placement.positions;
    let right = 0;
    let top = 24;
    for (const p of known.values()) {
      if (p.x + NODE_WIDTH > right) {
        right = p.x + NODE_WIDTH;
        top = p.y;
      }
    }
    return doc.nodes.map((node) => {
      const placed = known.get(node.key) ?? dropped.get(node.key) ?? { x: right + 64, y: top };
      const mine = findingsOnNode(findings, node.key);
      const data: EditNodeData = {
        id: node.id,
        kind: node.kind,
        detail: nodeDetail(node),
        errors: mine.errors.length,
        warnings: mine.warnings.length,
        direction: placement.direction,
        readOnly,
      };
      return {
        id: node.key,
        type: 'edit',
        position: placed,
        width: NODE_WIDTH,
        height: NODE_HEIGHT,
        data,
        selected: selection?.kind === 'node' && selection.key === node.key,
        ariaLabel: nodeLabel(data),
        draggable: !readOnly,
        connectable: !readOnly,
        deletable: !readOnly,
      };
    });
  }, [doc, placement, dropped, findings, selection, readOnly]);

  const edges = useMemo<Edge[]>(() => {
    // ELK's routes hold while the graph is as it was laid out and no node was moved.
    const routed = !placement.moved && placement.structure === structure;
    const seen = new Map<string, number>();
    const layoutId = (from: string, to: string): string => {
      const key = edgeKey(from, to);
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      return n === 1 ? key : `${key}#${n}`;
    };
    const out: Edge[] = [];
    for (const edge of doc.edges) {
      const source = keyOf.get(edge.from);
      const target = keyOf.get(edge.to);
      const id = layoutId(edge.from, edge.to);
      if (source === undefined || target === undefined) continue;
      const text = edgeLabelText(edge);
      const mine = findingsOnEdge(findings, edge.key);
      const problems = mine.errors.length + mine.warnings.length;
      const selected = selection?.kind === 'edge' && selection.key === edge.key;
      const tone = selected ? 'selected' : mine.errors.length > 0 ? 'error' : mine.warnings.length > 0 ? 'warning' : null;
      const route = routed ? placement.routes.get(id) : undefined;
      const common = {
        id: edge.key,
        source,
        target,
        selected,
        ariaLabel: `${edge.from} to ${edge.to}${text === null ? '' : ` (${text})`}${problems > 0 ? `, ${problems} ${problems === 1 ? 'problem' : 'problems'}` : ''}`,
        deletable: !readOnly,
      };
      if (route !== undefined) {
        const routedEdge: RunFlowEdge = { ...common, type: 'routed', data: { points: route.points, label: route.label, text, count: 0, live: false, kind: edge.maxIterations === null ? 'forward' : 'back', tone } };
        out.push(routedEdge);
      } else {
        out.push({
          ...common,
          type: 'smoothstep',
          ...(text === null ? {} : { label: text, labelBgPadding: [4, 2] as [number, number] }),
          markerEnd: { type: MarkerType.ArrowClosed },
          className: tone === 'error' ? 'edit-edge-error' : tone === 'warning' ? 'edit-edge-warning' : '',
        });
      }
    }
    // A supervisor's children: drawn, not edited here (the inspector sets them).
    for (const node of doc.nodes) {
      for (const child of node.children ?? []) {
        const target = keyOf.get(child);
        if (target === undefined) continue;
        const route = routed ? placement.routes.get(layoutId(node.id, child)) : undefined;
        const common = { id: `delegates:${node.key}:${target}`, source: node.key, target, selectable: false, focusable: false, deletable: false, ariaLabel: `${node.id} delegates to ${child}` };
        if (route !== undefined) {
          const routedEdge: RunFlowEdge = { ...common, type: 'routed', data: { points: route.points, label: route.label, text: `n_${child}`, count: 0, live: false, kind: 'delegation' } };
          out.push(routedEdge);
        } else {
          out.push({ ...common, type: 'smoothstep', label: `n_${child}`, className: 'run-edge-delegation' });
        }
      }
    }
    return out;
  }, [doc, keyOf, findings, selection, readOnly, placement, structure]);

  // Fit a fresh layout, and keep fitting on resizes until the person pans or zooms.
  useEffect(() => {
    if (fitRequest === 0 || size.width === 0) return undefined;
    if (userMoved) return undefined;
    const handle = window.requestAnimationFrame(() => {
      const placed = [...placement.positions.values()];
      if (placed.length === 0) return;
      // As laid out, the graph is ELK's extent (its edges and labels too, padded); once moved,
      // the nodes' bounds.
      if (!placement.moved && placement.extent.width > 0) {
        void flow.setViewport(fittedViewport({ x: 0, y: 0, ...placement.extent }, size, 8));
        return;
      }
      const xs = placed.map((p) => p.x);
      const ys = placed.map((p) => p.y);
      const bounds = { x: Math.min(...xs), y: Math.min(...ys), width: Math.max(...xs) + NODE_WIDTH - Math.min(...xs), height: Math.max(...ys) + NODE_HEIGHT - Math.min(...ys) };
      void flow.setViewport(fittedViewport(bounds, size));
    });
    return () => {
      window.cancelAnimationFrame(handle);
    };
  }, [flow, fitRequest, size, userMoved, placement.positions, placement.moved, placement.extent]);

  // React Flow sends a node's and an edge's select changes in separate calls of one event: each
  // reads what the one before chose, not the selection of the last render.
  const latestSelection = useRef(selection);
  useEffect(() => {
    latestSelection.current = selection;
  }, [selection]);
  const choose = (next: Selection | undefined): void => {
    if (next === undefined) return;
    latestSelection.current = next;
    onSelect(next);
  };

  const onNodesChange = (changes: NodeChange<EditFlowNode>[]): void => {
    let moved: Map<string, XY> | null = null;
    for (const change of changes) {
      if (change.type === 'position' && change.position !== undefined && !readOnly) {
        moved ??= new Map(placement.positions);
        moved.set(change.id, change.position);
      }
    }
    choose(selectionAfter(changes, 'node', latestSelection.current));
    if (moved !== null) {
      const positions = moved;
      setPlacement((p) => ({ ...p, positions, moved: true }));
    }
  };

  const onEdgesChange = (changes: EdgeChange[]): void => {
    choose(
      selectionAfter(
        changes.filter((c) => !('id' in c && c.id.startsWith('delegates:'))),
        'edge',
        latestSelection.current,
      ),
    );
  };

  const onDragOver = (event: DragEvent<HTMLDivElement>): void => {
    if (readOnly || !event.dataTransfer.types.includes(PALETTE_MIME)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
  };

  const onDrop = (event: DragEvent<HTMLDivElement>): void => {
    const item = itemFromData(event.dataTransfer.getData(PALETTE_MIME));
    if (readOnly || item === null) return;
    event.preventDefault();
    const at = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
    const point = { x: at.x - NODE_WIDTH / 2, y: at.y - NODE_HEIGHT / 2 };
    pendingDrop.current = point;
    onDropItem(item, point);
  };

  return (
    <div
      ref={frame}
      className="relative h-full min-h-80 w-full overflow-hidden rounded-lg border border-slate-300 bg-slate-50 dark:border-slate-700 dark:bg-slate-950"
      onDragOver={onDragOver}
      onDrop={onDrop}
      onKeyDown={(event) => {
        // Enter or Space on a node or an edge opens it in the inspector, also when it is selected
        // already (React Flow sends no change then).
        if (event.key !== 'Enter' && event.key !== ' ') return;
        const target = event.target instanceof Element ? event.target.closest('.react-flow__node, .react-flow__edge') : null;
        const id = target?.getAttribute('data-id');
        if (target === null || id === null || id === undefined || id.startsWith('delegates:')) return;
        choose({ kind: target.classList.contains('react-flow__node') ? 'node' : 'edge', key: id });
      }}
      data-direction={placement.direction}
      data-moved={placement.moved ? 'true' : 'false'}
    >
      {failure === null ? null : (
        <p role="alert" className="absolute top-2 left-2 z-10 rounded bg-red-50 p-2 text-red-900 dark:bg-red-950 dark:text-red-100">
          The graph could not be laid out: {failure}
        </p>
      )}
      <ReactFlow<EditFlowNode>
        aria-label={`Canvas of ${title}: ${doc.nodes.length} ${doc.nodes.length === 1 ? 'node' : 'nodes'} and ${doc.edges.length} ${doc.edges.length === 1 ? 'edge' : 'edges'}${readOnly ? ', read-only on a screen this narrow' : ''}. Tab to a node or an edge and press Enter to open it in the inspector.`}
        ariaLabelConfig={ariaLabelConfig}
        colorMode={theme}
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={(c: Connection) => {
          if (!readOnly && c.source !== c.target) onConnect(c.source, c.target);
        }}
        isValidConnection={(c) => c.source !== c.target}
        onDelete={({ nodes: gone, edges: cut }) => {
          if (readOnly) return;
          for (const e of cut) if (!e.id.startsWith('delegates:')) onDelete({ kind: 'edge', key: e.id });
          for (const n of gone) onDelete({ kind: 'node', key: n.id });
        }}
        onPaneClick={() => {
          onSelect(null);
        }}
        onMoveStart={(event) => {
          // Only a person's pan or zoom carries an event; ours (a fit) does not.
          if (event !== null) setUserMoved(true);
        }}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        nodesFocusable
        edgesFocusable
        elementsSelectable
        deleteKeyCode={readOnly ? null : ['Delete', 'Backspace']}
        selectionKeyCode={null}
        multiSelectionKeyCode={null}
        zoomOnDoubleClick={false}
        minZoom={0.2}
        maxZoom={1.5}
      />
    </div>
  );
}
