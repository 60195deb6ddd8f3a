// Runs through the sidecar (docs/sidecar-api.md, "The rest of /api/v1"): list the caller's runs
// (owned or approved) with filters and pages, read one, start one owned by the caller, cancel
// one, and read the spec a run ran. Every call is made with the caller's own token; the
// apiserver's RBAC and admission decide, the sidecar holds no power of its own.

import { apiPath, callApi, isRecord, isStringArray, shapeProblem, type ApiOptions, type Problem } from './http.ts';
import { BUDGET_KEYS, type BudgetKey, type Outcome } from './trace.ts';

export type RunPhase = 'Pending' | 'Running' | 'AwaitingApproval' | Outcome;

export const RUN_PHASES: readonly RunPhase[] = ['Pending', 'Running', 'AwaitingApproval', 'Succeeded', 'Failed', 'Cancelled', 'BudgetExhausted', 'Rejected'];

/** Each phase in words, as every page writes it. */
export const PHASE_WORDS: Readonly<Record<RunPhase, string>> = {
  Pending: 'Pending',
  Running: 'Running',
  AwaitingApproval: 'Awaiting approval',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Cancelled: 'Cancelled',
  BudgetExhausted: 'Budget exhausted',
  Rejected: 'Rejected',
};

const TERMINAL: ReadonlySet<string> = new Set(['Succeeded', 'Failed', 'Cancelled', 'BudgetExhausted', 'Rejected']);

/** Whether a run in `phase` has ended (no more events will come). */
export function isTerminal(phase: RunPhase | null): boolean {
  return phase !== null && TERMINAL.has(phase);
}

export interface RunTotalsStatus {
  readonly tokens: number;
  readonly tokensByModel: Readonly<Record<string, number>>;
  readonly toolCalls: number;
  readonly delegations: number;
  readonly remoteCalls: number;
  readonly wallTimeMs: number;
}

/** An approval waiting in the run's status (the text itself is only in the approvals list). */
export interface PendingApproval {
  readonly id: string;
  readonly node: string;
  readonly kind: string;
  readonly digest: string;
  readonly expiresAt: string;
}

/** A StudioRun as the console shows it: what the object says, read leniently. */
export interface Run {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly created: string;
  readonly owner: string;
  readonly approvers: { readonly users: readonly string[]; readonly groups: readonly string[] };
  /** The Composition by name (and revision), or null for an inline composition. */
  readonly compositionRef: { readonly name: string; readonly revision: number | null } | null;
  readonly input: string;
  readonly captureContent: boolean;
  readonly cancel: boolean;
  readonly budgets: Partial<Record<BudgetKey, number>>;
  readonly phase: RunPhase | null;
  /** What the run ran: the Composition's name, revision and spec digest, once it started. */
  readonly composition: { readonly name: string; readonly revision: number | null; readonly digest: string } | null;
  readonly startTime: string | null;
  readonly completionTime: string | null;
  readonly totals: RunTotalsStatus | null;
  readonly eventCount: number | null;
  readonly pendingApprovals: readonly PendingApproval[];
  readonly error: { readonly message: string; readonly node: string | null } | null;
  /** The Ready/Succeeded-style conditions' latest message, for a run that has not started. */
  readonly message: string | null;
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function rec(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function budgetsOf(value: unknown): Partial<Record<BudgetKey, number>> {
  const source = rec(value);
  const out: Partial<Record<BudgetKey, number>> = {};
  for (const key of BUDGET_KEYS) {
    const n = num(source[key]);
    if (n !== null) out[key] = n;
  }
  return out;
}

function totalsOf(value: unknown): RunTotalsStatus | null {
  if (!isRecord(value)) return null;
  const byModel: Record<string, number> = {};
  for (const [model, tokens] of Object.entries(rec(value['tokensByModel']))) {
    const n = num(tokens);
    if (n !== null) byModel[model] = n;
  }
  return {
    tokens: num(value['tokens']) ?? 0,
    tokensByModel: byModel,
    toolCalls: num(value['toolCalls']) ?? 0,
    delegations: num(value['delegations']) ?? 0,
    remoteCalls: num(value['remoteCalls']) ?? 0,
    wallTimeMs: num(value['wallTimeMs']) ?? 0,
  };
}

/** A StudioRun object as the API returns it, or null when it is not one. */
export function parseRun(value: unknown): Run | null {
  if (!isRecord(value)) return null;
  const meta = rec(value['metadata']);
  const spec = rec(value['spec']);
  const status = rec(value['status']);
  const name = str(meta['name']);
  if (name === '') return null;
  const ref = isRecord(spec['compositionRef']) ? spec['compositionRef'] : null;
  const ran = isRecord(status['composition']) ? status['composition'] : null;
  const approvers = rec(spec['approvers']);
  const error = isRecord(status['error']) ? status['error'] : null;
  const phase = str(status['phase']);
  const conditions = Array.isArray(status['conditions']) ? status['conditions'].filter(isRecord) : [];
  const latest = conditions
    .filter((c) => typeof c['message'] === 'string' && c['message'] !== '')
    .sort((a, b) => str(b['lastTransitionTime']).localeCompare(str(a['lastTransitionTime'])))[0];
  const pending = Array.isArray(status['pendingApprovals']) ? status['pendingApprovals'].filter(isRecord) : [];
  return {
    namespace: str(meta['namespace']),
    name,
    uid: str(meta['uid']),
    created: str(meta['creationTimestamp']),
    owner: str(spec['owner']),
    approvers: {
      users: isStringArray(approvers['users']) ? approvers['users'] : [],
      groups: isStringArray(approvers['groups']) ? approvers['groups'] : [],
    },
    compositionRef: ref === null ? null : { name: str(ref['name']), revision: num(ref['revision']) },
    input: str(spec['input']),
    captureContent: spec['captureContent'] === true,
    cancel: spec['cancel'] === true,
    budgets: budgetsOf(spec['budgets']),
    phase: (RUN_PHASES as readonly string[]).includes(phase) ? (phase as RunPhase) : null,
    composition: ran === null ? null : { name: str(ran['name']), revision: num(ran['revision']), digest: str(ran['digest']) },
    startTime: typeof status['startTime'] === 'string' ? status['startTime'] : null,
    completionTime: typeof status['completionTime'] === 'string' ? status['completionTime'] : null,
    totals: totalsOf(status['totals']),
    eventCount: num(status['eventCount']),
    pendingApprovals: pending.map((p) => ({
      id: str(p['id']),
      node: str(p['node']),
      kind: str(p['kind']),
      digest: str(p['digest']),
      expiresAt: str(p['expiresAt']),
    })),
    error: error === null ? null : { message: str(error['message']), node: typeof error['node'] === 'string' ? error['node'] : null },
    message: latest === undefined ? null : str(latest['message']),
  };
}

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: Problem };

export interface RunFilters {
  readonly composition?: string;
  /**
   * A `RunPhase`, or empty for any. Any other word (a hand-edited address) is sent as it is:
   * the sidecar refuses it with a 400 at `["query"]` whose message lists the phases.
   */
  readonly phase?: RunPhase | '' | (string & Record<never, never>);
  /** `owner`, `approver`, or empty for either; any other word is the sidecar's 400 too. */
  readonly role?: 'owner' | 'approver' | '' | (string & Record<never, never>);
  readonly limit?: number;
  readonly continue?: string;
}

export interface RunPage {
  readonly items: readonly Run[];
  /** Pass back as `continue` for the next page; null on the last. */
  readonly continue: string | null;
}

/** `GET /api/v1/runs/{ns}`: the caller's runs, newest first. */
export async function listRuns(token: string, namespace: string, filters: RunFilters = {}, options: ApiOptions = {}): Promise<Result<RunPage>> {
  const reply = await callApi(
    token,
    apiPath('runs', namespace),
    { query: { composition: filters.composition, phase: filters.phase, role: filters.role, limit: filters.limit, continue: filters.continue } },
    options,
  );
  if (!reply.ok) return reply;
  const body = rec(reply.body);
  if (!Array.isArray(body['items'])) return { ok: false, problem: shapeProblem(reply.status, 'a list of runs') };
  const items = body['items'].map(parseRun).filter((r): r is Run => r !== null);
  const next = body['continue'];
  return { ok: true, value: { items, continue: typeof next === 'string' && next !== '' ? next : null } };
}

/** `GET /api/v1/runs/{ns}/{name}`. */
export async function getRun(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<Run>> {
  const reply = await callApi(token, apiPath('runs', namespace, name), {}, options);
  if (!reply.ok) return reply;
  const run = parseRun(reply.body);
  return run === null ? { ok: false, problem: shapeProblem(reply.status, 'a run') } : { ok: true, value: run };
}

/** What `POST /api/v1/runs/{ns}` takes. */
export interface StartRequest {
  readonly name?: string;
  readonly compositionRef?: { readonly name: string; readonly revision?: number };
  readonly composition?: unknown;
  readonly input: string;
  readonly approvers?: { readonly users?: readonly string[]; readonly groups?: readonly string[] };
  readonly budgets?: Partial<Record<BudgetKey, number>>;
  readonly captureContent?: boolean;
}

/** A validation finding (422 `errors`, `/validate`'s `errors` and `warnings`). */
export interface Finding {
  readonly loc: readonly (string | number)[];
  readonly field: string;
  readonly code: string;
  readonly message: string;
}

export type StartResult =
  | { readonly ok: true; readonly run: Run }
  | { readonly ok: false; readonly problem: Problem; readonly findings: readonly Finding[] };

export function findingsOf(value: unknown): Finding[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((f) => ({
    loc: Array.isArray(f['loc']) ? f['loc'].filter((l): l is string | number => typeof l === 'string' || typeof l === 'number') : [],
    field: str(f['field']),
    code: str(f['code']),
    message: str(f['message']),
  }));
}

/** `POST /api/v1/runs/{ns}`: a run owned by the caller. A 422 carries every finding. */
export async function startRun(token: string, namespace: string, request: StartRequest, options: ApiOptions = {}): Promise<StartResult> {
  const reply = await callApi(token, apiPath('runs', namespace), { method: 'POST', body: request }, options);
  if (!reply.ok) return { ok: false, problem: reply.problem, findings: findingsOf(reply.problem.errors) };
  const run = parseRun(reply.body);
  return run === null ? { ok: false, problem: shapeProblem(reply.status, 'a run'), findings: [] } : { ok: true, run };
}

/** `POST /api/v1/runs/{ns}/{name}/cancel`: 202 when asked. */
export async function cancelRun(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<null>> {
  const reply = await callApi(token, apiPath('runs', namespace, name, 'cancel'), { method: 'POST' }, options);
  return reply.ok ? { ok: true, value: null } : reply;
}

/** The spec a run ran (`GET …/composition`). */
export interface RanSpec {
  readonly name: string;
  readonly revision: number | null;
  readonly digest: string;
  readonly spec: unknown;
}

export async function getRanSpec(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<RanSpec>> {
  const reply = await callApi(token, apiPath('runs', namespace, name, 'composition'), {}, options);
  if (!reply.ok) return reply;
  const body = rec(reply.body);
  if (!isRecord(body['spec'])) return { ok: false, problem: shapeProblem(reply.status, "a run's composition") };
  return { ok: true, value: { name: str(body['name']), revision: num(body['revision']), digest: str(body['digest']), spec: body['spec'] } };
}

