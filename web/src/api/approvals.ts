// A run's approvals through the sidecar (docs/sidecar-api.md, "GET …/approvals" and "POST
// …/approvals/{id}"): the text under review, which only the sidecar holds (never the stream,
// never etcd), to the run's owner and approvers; and a decision, which the sidecar appends to the
// run's `status.decisions` with the caller's own token, then waits (up to 30 s) for the run to
// take it up. The list is read strictly: a reply that is not the documented shape is a problem,
// never a card with made-up fields.

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions, type Problem } from './http.ts';
import type { Result } from './runs.ts';
import type { ApprovalKind } from './trace.ts';

export type ApprovalState = 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled';

const KINDS: readonly ApprovalKind[] = ['Approval', 'Input', 'Action'];
const STATES: readonly ApprovalState[] = ['pending', 'approved', 'rejected', 'expired', 'cancelled'];

/** One approval of a run, as the approvals call gives it. */
export interface Approval {
  readonly id: string;
  /** `Approval` (a HumanApproval node), `Input` (a remote agent's question), `Action` (an acting remote's request). */
  readonly kind: ApprovalKind;
  readonly node: string;
  /** What the person is asked, control characters shown as escapes. */
  readonly prompt: string;
  /** The text under review with control and invisible characters shown as escapes (empty once settled). */
  readonly text: string;
  /** How many characters were shown as escapes, when some were. */
  readonly textNote: string | null;
  /** The text exactly as asked (empty once settled): what the page hashes to check the digest. */
  readonly exactText: string;
  /** The server's digest of `exactText` (lowercase hex SHA-256, docs/sidecar-api.md). */
  readonly digest: string;
  /** The text's size in bytes. */
  readonly size: number;
  /** False when the text is too long to show whole: it can then only be rejected. */
  readonly complete: boolean;
  /** RFC 3339. */
  readonly expiresAt: string;
  readonly state: ApprovalState;
}

function oneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return typeof value === 'string' && (values as readonly string[]).includes(value);
}

/** One item of the approvals list, or null when any field is missing or of another type. */
export function parseApproval(value: unknown): Approval | null {
  if (!isRecord(value)) return null;
  const { id, kind, node, prompt, text, textNote, exactText, digest, size, complete, expiresAt, state } = value;
  if (typeof id !== 'string' || id === '' || !oneOf(KINDS, kind) || typeof node !== 'string' || typeof prompt !== 'string') return null;
  if (typeof text !== 'string' || typeof exactText !== 'string' || !(textNote === null || textNote === undefined || typeof textNote === 'string')) return null;
  if (typeof digest !== 'string' || typeof size !== 'number' || !Number.isInteger(size) || size < 0 || typeof complete !== 'boolean') return null;
  if (typeof expiresAt !== 'string' || Number.isNaN(Date.parse(expiresAt)) || !oneOf(STATES, state)) return null;
  return { id, kind, node, prompt, text, textNote: textNote ?? null, exactText, digest, size, complete, expiresAt, state };
}

/** `GET /api/v1/runs/{ns}/{name}/approvals`: every approval of the run, in the order asked. */
export async function listApprovals(token: string, namespace: string, name: string, options: ApiOptions = {}): Promise<Result<readonly Approval[]>> {
  const reply = await callApi(token, apiPath('runs', namespace, name, 'approvals'), {}, options);
  if (!reply.ok) return reply;
  const items = isRecord(reply.body) ? reply.body['items'] : undefined;
  if (!Array.isArray(items)) return { ok: false, problem: shapeProblem(reply.status, "a run's approvals") };
  const parsed = items.map(parseApproval);
  if (parsed.some((a) => a === null)) return { ok: false, problem: shapeProblem(reply.status, "a run's approvals") };
  return { ok: true, value: parsed as Approval[] };
}

/** What `POST …/approvals/{id}` takes. */
export interface DecisionRequest {
  readonly decision: 'Approve' | 'Reject';
  /** The digest of the text read: required to approve. */
  readonly digest?: string;
  /** Sent with a rejection (a rejected edge's node receives it). */
  readonly comment?: string;
  /** A remote agent's question: the answer sent to it. */
  readonly answer?: string;
}

export type DecisionResult =
  /** 200: the run took this decision. */
  | { readonly ok: true; readonly taken: true; readonly id: string; readonly index: number; readonly outcome: 'approved' | 'rejected' }
  /** 202: recorded in the run's status; the run has not taken it up yet. */
  | { readonly ok: true; readonly taken: false; readonly id: string; readonly index: number; readonly message: string }
  | { readonly ok: false; readonly problem: Problem };

export const NOT_TAKEN_UP = "recorded in the run's status; the run has not taken it up yet";

/** `POST /api/v1/runs/{ns}/{name}/approvals/{id}`: a decision, made as the holder of `token`. */
export async function decide(
  token: string,
  namespace: string,
  name: string,
  id: string,
  request: DecisionRequest,
  options: ApiOptions = {},
): Promise<DecisionResult> {
  const reply = await callApi(token, apiPath('runs', namespace, name, 'approvals', id), { method: 'POST', body: request }, options);
  if (!reply.ok) return reply;
  const body = isRecord(reply.body) ? reply.body : {};
  const index = body['index'];
  const replyId = typeof body['id'] === 'string' ? body['id'] : id;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) return { ok: false, problem: shapeProblem(reply.status, 'a decision') };
  if (reply.status === 202) {
    const message = body['message'];
    return { ok: true, taken: false, id: replyId, index, message: typeof message === 'string' && message !== '' ? message : NOT_TAKEN_UP };
  }
  const outcome = body['outcome'];
  if (reply.status !== 200 || (outcome !== 'approved' && outcome !== 'rejected')) return { ok: false, problem: shapeProblem(reply.status, 'a decision') };
  return { ok: true, taken: true, id: replyId, index, outcome };
}
