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

  /** Nodes known before any event: the spec's, so the graph shows them idle. */
  constructor(nodes: readonly { readonly id: string; readonly kind: string }[] = []) {
    for (const node of nodes) this.nodes.set(node.id, blankNode(node.id, node.kind));
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
        if (event.parentEntry != null) this.used.maxDelegations += 1;
        if (this.lastNodeExited !== null && this.lastNodeExited !== event.nodeId && event.depth === 0) {
          this.take(this.lastNodeExited, event.nodeId);
        }
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
        if (event.depth === 0) this.lastNodeExited = event.nodeId;
        for (const edge of this.liveEdges) if (edge.endsWith(`→${event.nodeId}`)) this.liveEdges.delete(edge);
        break;
      }
      case 'route.taken':
        if (event.to != null) {
          this.take(event.nodeId, event.to);
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
  return { id, kind, state: 'idle', entries: 0, tokens: 0, modelCalls: 0, durationMs: 0, calls: 0, label: null, error: null, input: null, answer: null, model: null, open: 0 };
}

/** The share of a budget used, 0 to 1 (a limit of 0 counts as full once anything is used). */
export function share(used: number, limit: number): number {
  if (limit <= 0) return used > 0 ? 1 : 0;
  return Math.min(1, used / limit);
}
