// The trace events a run's stream carries, as `orrery schema events` publishes them (the JSON
// Schema of `orrery_crds::events`): every event has `seq` (1, 2, … within the run, no gaps),
// `runId` and `ts`, and one `type` among those below. Nullable fields are `null` or absent;
// content fields (`input`, `output`, `text`…) are present only when the run captures content.

export type Outcome = 'Succeeded' | 'Failed' | 'Cancelled' | 'BudgetExhausted' | 'Rejected';
export type NodeStatus = 'ok' | 'failed' | 'stopped' | 'expired';
export type CallStatus = 'ok' | 'error' | 'refused' | 'cancelled';
export type ApprovalKind = 'Approval' | 'Input' | 'Action';
export type DecisionKind = 'approved' | 'rejected' | 'expired' | 'cancelled';
export type BudgetKey = 'maxTokens' | 'maxToolCalls' | 'maxDelegations' | 'maxRemoteCalls' | 'timeoutSeconds';

/** Every budget, in the order of a spec's `budgets` (`BudgetKey::ALL`): the one list the console keeps. */
export const BUDGET_KEYS: readonly BudgetKey[] = ['maxTokens', 'maxToolCalls', 'maxDelegations', 'maxRemoteCalls', 'timeoutSeconds'];
export type Direction = 'outbound' | 'inbound';

export type BudgetLimits = Readonly<Record<BudgetKey, number>>;

export interface RunTotals {
  readonly tokens?: number;
  readonly tokensByModel?: Readonly<Record<string, number>>;
  readonly toolCalls?: number;
  readonly delegations?: number;
  readonly remoteCalls?: number;
  readonly wallTimeMs?: number;
}

interface Base {
  readonly seq: number;
  readonly runId: string;
  /** RFC 3339 with milliseconds, UTC. */
  readonly ts: string;
}

export interface RunStart extends Base {
  readonly type: 'run.start';
  readonly composition: string;
  readonly pattern: string;
  readonly nodes: number;
  readonly budgets: BudgetLimits;
  readonly captureContent: boolean;
  readonly dryRunTools: boolean;
  readonly inputSize: number;
  readonly input?: string | null;
}

export interface RunEnd extends Base {
  readonly type: 'run.end';
  readonly outcome: Outcome;
  readonly error?: { readonly message: string; readonly node?: string | null } | null;
  readonly totals: RunTotals;
  readonly dropped: number;
  readonly outputSize: number;
  readonly output?: string | null;
}

export interface NodeEnter extends Base {
  readonly type: 'node.enter';
  readonly nodeId: string;
  readonly kind: string;
  readonly entry: number;
  readonly depth: number;
  readonly inputSize: number;
  readonly input?: string | null;
  readonly model?: string | null;
  readonly parentEntry?: number | null;
  readonly screenFlags?: readonly string[];
}

export interface NodeExit extends Base {
  readonly type: 'node.exit';
  readonly nodeId: string;
  readonly kind: string;
  readonly entry: number;
  readonly depth: number;
  readonly status: NodeStatus;
  readonly tokens: number;
  readonly modelCalls: number;
  /** Each model call of the entry (absent from events of runners that predate it). */
  readonly calls?: readonly ModelCall[];
  readonly durationMs: number;
  readonly answerSize: number;
  readonly answer?: string | null;
  readonly error?: string | null;
  readonly label?: string | null;
}

/** One model call of a node's entry, as its `node.exit` lists it. */
export interface ModelCall {
  /** `anthropic`, `openai`, `gcp.gemini` or `orrery.scripted`. */
  readonly provider: string;
  readonly model: string;
  /** Milliseconds after the entry began. */
  readonly startMs: number;
  readonly durationMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly error?: string | null;
}

export interface LoopIteration extends Base {
  readonly type: 'loop.iteration';
  readonly head: string;
  readonly tail: string;
  readonly iteration: number;
  readonly max: number;
  readonly stopped: boolean;
}

export interface RouteTaken extends Base {
  readonly type: 'route.taken';
  readonly nodeId: string;
  readonly label: string;
  readonly to?: string | null;
}

export interface ToolCall extends Base {
  readonly type: 'tool.call';
  readonly nodeId: string;
  readonly entry: number;
  readonly tool: string;
  readonly callId: string;
  readonly status: CallStatus;
  readonly durationMs: number;
  readonly resultSize: number;
  readonly reference?: string;
  readonly dryRun?: boolean;
  readonly arguments?: string | null;
  readonly result?: string | null;
  readonly error?: string | null;
}

export interface BudgetHit extends Base {
  readonly type: 'budget.hit';
  readonly budget: BudgetKey;
  readonly limit: number;
  readonly used: number;
  readonly nodeId?: string | null;
}

export interface ApprovalRequested extends Base {
  readonly type: 'approval.requested';
  readonly approvalId: string;
  readonly nodeId: string;
  readonly kind: ApprovalKind;
  readonly digest: string;
  readonly size: number;
  /** False when the text is over 128 KiB: it can then only be rejected. */
  readonly complete: boolean;
  readonly expiresAt: string;
  readonly text?: string | null;
}

export interface ApprovalDecided extends Base {
  readonly type: 'approval.decided';
  readonly approvalId: string;
  readonly nodeId: string;
  readonly kind: ApprovalKind;
  readonly decision: DecisionKind;
  readonly waitMs: number;
  readonly digest?: string | null;
  readonly comment?: string | null;
}

export interface McpCall extends Base {
  readonly type: 'mcp.call';
  readonly nodeId: string;
  readonly entry: string;
  readonly tool: string;
  readonly callId: string;
  readonly status: CallStatus;
  readonly durationMs: number;
  readonly resultSize: number;
  readonly arguments?: string | null;
  readonly result?: string | null;
}

export interface A2aMessage extends Base {
  readonly type: 'a2a.message';
  readonly nodeId: string;
  readonly entry: string;
  readonly skill: string;
  readonly callId: string;
  readonly direction: Direction;
  readonly size: number;
  /** Outbound: the JSON-RPC method it went by (`SendMessage` or `SendStreamingMessage`). */
  readonly method?: string | null;
  readonly taskState?: string | null;
  readonly text?: string | null;
}

/** One trace event. */
export type TraceEvent =
  | RunStart
  | RunEnd
  | NodeEnter
  | NodeExit
  | LoopIteration
  | RouteTaken
  | ToolCall
  | BudgetHit
  | ApprovalRequested
  | ApprovalDecided
  | McpCall
  | A2aMessage;

export type TraceEventType = TraceEvent['type'];

const TYPES: ReadonlySet<string> = new Set<TraceEventType>([
  'run.start',
  'run.end',
  'node.enter',
  'node.exit',
  'loop.iteration',
  'route.taken',
  'tool.call',
  'budget.hit',
  'approval.requested',
  'approval.decided',
  'mcp.call',
  'a2a.message',
]);

/**
 * A trace event from its JSON, or why it is not one. Only the envelope (`seq`, `runId`, `ts`)
 * and the `type` are checked here; the rest is the sidecar's, which stores what the runner's
 * ingest contract (`orrery_crds::events::ingest`) accepted.
 */
export function parseTraceEvent(data: string): { readonly event: TraceEvent } | { readonly error: string } {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return { error: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'not an object' };
  const { seq, runId, ts, type } = value as Record<string, unknown>;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return { error: 'no whole `seq` of 1 or more' };
  if (typeof runId !== 'string' || typeof ts !== 'string') return { error: 'no `runId` or `ts`' };
  if (typeof type !== 'string' || !TYPES.has(type)) return { error: `an unknown type ${JSON.stringify(type)}` };
  return { event: value as TraceEvent };
}
