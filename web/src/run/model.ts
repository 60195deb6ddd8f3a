// A run as its trace events tell it, built one event at a time: the live panel feeds it from the
// stream, replay from stored pages at its own pace, compare from two finished runs. Applying an
// event is O(1) (a live run may send thousands a second); views read the model after each
// batch through `version`.
//
// What is counted while the run goes (the `run.end` totals replace these when they arrive):
// - tokens: each `node.exit`'s own tokens (a supervisor's children count in their own entries);
// - tool calls: each `tool.call` that was not refused (a refused call charged nothing);
// - delegations: each A2A tool call and each supervisor child's entry (`parentEntry` set);
// - remote calls: each outbound `a2a.message`;
// - time: from `run.start` to the latest event, less the time people took to decide (the
//   run's deadline is paused while a person decides, rule 12.39).
//
// Which edges were taken: a route (`route.taken`) and a loop's back edge (`loop.iteration`) say
// so themselves (a labelled back edge says it twice, counted once); a supervisor's child is
// reached from its parent's entry (`parentEntry`). For the other edges, given the spec's edges,
// an edge `a→b` is taken when `b` is entered after `a` exited (since `b` was last entered): so
// every branch of a fan-out, and every branch into its join, count once. Without the spec's
// edges, the last node that exited at the top level is taken as the way in.

import type { ApprovalDecided, ApprovalRequested, BudgetHit, BudgetKey, BudgetLimits, NodeStatus, Outcome, RunEnd, RunStart, TraceEvent } from '../api/trace.ts';

export type NodeState = 'idle' | 'running' | 'awaiting' | NodeStatus | 'skipped';

export interface NodeView {
  readonly id: string;
  kind: string;
  state: NodeState;
  /** How many times the node was entered. */
  entries: number;
  tokens: number;
  modelCalls: number;
  /** Time spent in the node, all entries. */
  durationMs: number;
  /** Tool, MCP and A2A calls made from the node. */
  calls: number;
  /** The label its last exit answered with (a router's route, an approval's outcome). */
  label: string | null;
  error: string | null;
  /** Captured content of the last entry, when the run captures content. */
  input: string | null;
  answer: string | null;
  model: string | null;
  /** Open entries (a parallel node or a supervisor's child can be in more than one). */
  open: number;
  /** The budget that ran out while this node ran (`budget.hit`), if one did. */
  budgetHit: BudgetKey | null;
}

/** An edge of the spec, as the model needs it to tell which edges were taken. */
export interface ModelEdge {
  readonly from: string;
  readonly to: string;
  /** A routed edge (taken by `route.taken`). */
  readonly when?: string | null;
  /** A loop's back edge (taken by `loop.iteration`). */
  readonly maxIterations?: number | null;
}

export interface LoopView {
  readonly head: string;
  readonly tail: string;
  iteration: number;
  max: number;
  stopped: boolean;
}

export interface ApprovalView {
  readonly requested: ApprovalRequested;
  decided: ApprovalDecided | null;
}

export type Used = Record<BudgetKey, number>;

/** The mutable model and its version as of a frame: a view holds a new one each time the model moved. */
export interface RunSnapshot {
  readonly model: RunModel;
  readonly version: number;
}

export class RunModel {
  /** Every event applied, in seq order (the timeline). */
  readonly events: TraceEvent[] = [];
  start: RunStart | null = null;
  end: RunEnd | null = null;
  readonly nodes = new Map<string, NodeView>();
  /** `from→to` of each edge a route or a node's exit went along, with how many times. */
  readonly edgesTaken = new Map<string, number>();
  /** The last edge taken into each node that is running: drawn live. */
  readonly liveEdges = new Set<string>();
  readonly loops = new Map<string, LoopView>();
  readonly budgetHits: BudgetHit[] = [];
  readonly approvals = new Map<string, ApprovalView>();
  /** Counted from events (see the top of this file); `run.end`'s totals replace them. */
  readonly used: Used = { maxTokens: 0, maxToolCalls: 0, maxDelegations: 0, maxRemoteCalls: 0, timeoutSeconds: 0 };
  /** Time people took to decide, in ms (left out of the timeout meter). */
  waitMs = 0;
  /** Bumped by every change: views re-read the model when it moves. */
  version = 0;
  /** The seq of the last event applied (0 before any). */
  lastSeq = 0;
  private readonly entryNode = new Map<number, string>();
  private lastNodeExited: string | null = null;
  private startMs: number | null = null;
  private readonly waitingSince = new Map<string, number>();
  /** For each node, the sources of the spec's plain edges into it (neither routed nor a loop's); null without the spec's edges. */
  private readonly plainInto: Map<string, string[]> | null;
  private readonly lastEnterSeq = new Map<string, number>();
  private readonly lastExitSeq = new Map<string, number>();
  /** The back edge the previous event (a `loop.iteration`) took: its `route.taken` is the same step. */
  private loopJustTaken: string | null = null;

  /**
   * Nodes known before any event (the spec's, so the graph shows them idle) and, optionally,
   * the spec's edges, which tell which edge a node was entered by.
   */
  constructor(nodes: readonly { readonly id: string; readonly kind: string }[] = [], edges?: readonly ModelEdge[]) {
    for (const node of nodes) this.nodes.set(node.id, blankNode(node.id, node.kind));
    if (edges === undefined) {
      this.plainInto = null;
    } else {
      this.plainInto = new Map();
      for (const edge of edges) {
        if ((edge.when ?? null) !== null || (edge.maxIterations ?? null) !== null) continue;
        const into = this.plainInto.get(edge.to) ?? [];
        into.push(edge.from);
        this.plainInto.set(edge.to, into);
      }
    }
  }

  get outcome(): Outcome | null {
    return this.end?.outcome ?? null;
  }

  get budgets(): BudgetLimits | null {
    return this.start?.budgets ?? null;
  }

  /** Approvals asked and not yet decided, oldest first. */
  pendingApprovals(): ApprovalView[] {
    return [...this.approvals.values()].filter((a) => a.decided === null).sort((a, b) => a.requested.seq - b.requested.seq);
  }

  /** Applies one event; an event at or below `lastSeq` (a duplicate) is ignored. Returns whether it applied. */
  apply(event: TraceEvent): boolean {
    if (event.seq <= this.lastSeq) return false;
    this.lastSeq = event.seq;
    this.events.push(event);
    this.version += 1;
    const at = Date.parse(event.ts);
    switch (event.type) {
      case 'run.start':
        this.start = event;
        this.startMs = Number.isNaN(at) ? null : at;
        break;
      case 'run.end':
        this.applyEnd(event);
        break;
      case 'node.enter': {
        const node = this.node(event.nodeId, event.kind);
        node.entries += 1;
        node.open += 1;
        node.state = 'running';
        if (event.model != null) node.model = event.model;
        if (event.input != null) node.input = event.input;
        this.entryNode.set(event.entry, event.nodeId);
        const parent = event.parentEntry == null ? undefined : this.entryNode.get(event.parentEntry);
        if (event.parentEntry != null) this.used.maxDelegations += 1;
        if (parent !== undefined) {
          this.take(parent, event.nodeId);
        } else if (this.plainInto !== null) {
          const since = this.lastEnterSeq.get(event.nodeId) ?? 0;
          for (const from of this.plainInto.get(event.nodeId) ?? []) {
            if ((this.lastExitSeq.get(from) ?? 0) > since) this.take(from, event.nodeId);
          }
        } else if (this.lastNodeExited !== null && this.lastNodeExited !== event.nodeId && event.depth === 0) {
          this.take(this.lastNodeExited, event.nodeId);
        }
        this.lastEnterSeq.set(event.nodeId, event.seq);
        break;
      }
      case 'node.exit': {
        const node = this.node(event.nodeId, event.kind);
        node.open = Math.max(0, node.open - 1);
        node.tokens += event.tokens;
        node.modelCalls += event.modelCalls;
        node.durationMs += event.durationMs;
        node.label = event.label ?? node.label;
        node.error = event.error ?? null;
        if (event.answer != null) node.answer = event.answer;
        if (node.open === 0) node.state = event.status;
        this.used.maxTokens += event.tokens;
        this.entryNode.delete(event.entry);
        this.lastExitSeq.set(event.nodeId, event.seq);
        if (event.depth === 0) this.lastNodeExited = event.nodeId;
        for (const edge of this.liveEdges) if (edge.endsWith(`→${event.nodeId}`)) this.liveEdges.delete(edge);
        break;
      }
      case 'route.taken':
        if (event.to != null) {
          if (this.loopJustTaken !== `${event.nodeId}→${event.to}`) this.take(event.nodeId, event.to);
          this.lastNodeExited = null;
        }
        break;
      case 'loop.iteration': {
        const key = `${event.tail}→${event.head}`;
        const loop = this.loops.get(key) ?? { head: event.head, tail: event.tail, iteration: 0, max: event.max, stopped: false };
        loop.iteration = event.iteration;
        loop.max = event.max;
        loop.stopped = event.stopped;
        this.loops.set(key, loop);
        if (!event.stopped) {
          this.take(event.tail, event.head);
          this.lastNodeExited = null;
        }
        this.loopJustTaken = event.stopped ? null : key;
        break;
      }
      case 'tool.call':
        this.node(event.nodeId).calls += 1;
        if (event.status !== 'refused') {
          this.used.maxToolCalls += 1;
          if (event.reference?.startsWith('a2a:') === true) this.used.maxDelegations += 1;
        }
        break;
      case 'mcp.call':
        break;
      case 'a2a.message':
        if (event.direction === 'outbound') this.used.maxRemoteCalls += 1;
        break;
      case 'budget.hit':
        this.budgetHits.push(event);
        if (event.nodeId != null) this.node(event.nodeId).budgetHit = event.budget;
        break;
      case 'approval.requested':
        this.approvals.set(event.approvalId, { requested: event, decided: null });
        this.node(event.nodeId).state = 'awaiting';
        if (!Number.isNaN(at)) this.waitingSince.set(event.approvalId, at);
        break;
      case 'approval.decided': {
        const view = this.approvals.get(event.approvalId);
        if (view !== undefined) view.decided = event;
        this.waitMs += event.waitMs;
        this.waitingSince.delete(event.approvalId);
        const node = this.nodes.get(event.nodeId);
        if (node?.state === 'awaiting') node.state = node.open > 0 ? 'running' : 'idle';
        break;
      }
    }
    if (event.type !== 'loop.iteration') this.loopJustTaken = null;
    if (!Number.isNaN(at) && this.startMs !== null && this.end === null) {
      this.used.timeoutSeconds = Math.max(0, (at - this.startMs - this.waitMs - this.openWaitMs(at)) / 1000);
    }
    return true;
  }

  /** Applies events in order; returns how many applied (duplicates skipped). */
  applyAll(events: Iterable<TraceEvent>): number {
    let applied = 0;
    for (const event of events) if (this.apply(event)) applied += 1;
    return applied;
  }

  private openWaitMs(now: number): number {
    let total = 0;
    for (const since of this.waitingSince.values()) total += Math.max(0, now - since);
    return total;
  }

  private applyEnd(event: RunEnd): void {
    this.end = event;
    const t = event.totals;
    this.used.maxTokens = t.tokens ?? this.used.maxTokens;
    this.used.maxToolCalls = t.toolCalls ?? this.used.maxToolCalls;
    this.used.maxDelegations = t.delegations ?? this.used.maxDelegations;
    this.used.maxRemoteCalls = t.remoteCalls ?? this.used.maxRemoteCalls;
    if (t.wallTimeMs !== undefined) this.used.timeoutSeconds = Math.max(0, (t.wallTimeMs - this.waitMs) / 1000);
    this.liveEdges.clear();
    this.waitingSince.clear();
    for (const node of this.nodes.values()) {
      if (node.entries === 0) node.state = 'skipped';
      else if (node.state === 'running' || node.state === 'awaiting') node.state = 'stopped';
    }
  }

  private node(id: string, kind = ''): NodeView {
    let node = this.nodes.get(id);
    if (node === undefined) {
      node = blankNode(id, kind);
      this.nodes.set(id, node);
    } else if (node.kind === '' && kind !== '') {
      node.kind = kind;
    }
    return node;
  }

  private take(from: string, to: string): void {
    const key = `${from}→${to}`;
    this.edgesTaken.set(key, (this.edgesTaken.get(key) ?? 0) + 1);
    this.liveEdges.add(key);
  }
}

function blankNode(id: string, kind: string): NodeView {
  return { id, kind, state: 'idle', entries: 0, tokens: 0, modelCalls: 0, durationMs: 0, calls: 0, label: null, error: null, input: null, answer: null, model: null, open: 0, budgetHit: null };
}

/** The share of a budget used, 0 to 1 (a limit of 0 counts as full once anything is used). */
export function share(used: number, limit: number): number {
  if (limit <= 0) return used > 0 ? 1 : 0;
  return Math.min(1, used / limit);
}
