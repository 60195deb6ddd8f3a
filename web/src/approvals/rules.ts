// What an approval card decides without a browser (rules 12.35–12.42 of docs/behaviour.md): when
// Approve is off and why, how the time left reads, what each kind of request asks and offers,
// and what every answer of the sidecar means to the person, in plain words (with the sidecar's
// own message kept beside them).

import type { DecisionResult } from '../api/approvals.ts';
import type { DigestCheck } from '../api/digest.ts';
import type { Problem } from '../api/http.ts';
import type { ApprovalKind } from '../api/trace.ts';

/** The last seconds of an approval, when it can no longer be approved (rule 12.37). */
export const EXPIRING_SECONDS = 10;

/** The digest check of one card: still computing, or its outcome. */
export type DigestStatus = { readonly state: 'checking' } | DigestCheck;

/** Whole seconds left before `expiresAt` at `nowMs` (rounded up: 0.2 s left is 1 s). */
export function secondsLeft(expiresAt: string, nowMs: number): number {
  const at = Date.parse(expiresAt);
  if (Number.isNaN(at)) return 0;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

export type Clock = 'running' | 'expiring' | 'expired';

export function clockOf(seconds: number): Clock {
  if (seconds <= 0) return 'expired';
  return seconds <= EXPIRING_SECONDS ? 'expiring' : 'running';
}

/** 9 s, 4 min 05 s, 1 h 02 min 09 s. */
export function formatSecondsLeft(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  const rest = String(s % 60).padStart(2, '0');
  if (minutes < 60) return `${minutes} min ${rest} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min ${rest} s`;
}

/** The countdown as the card shows it. */
export function timeLeftText(seconds: number): string {
  switch (clockOf(seconds)) {
    case 'expired':
      return 'Expired: nothing can be decided any more.';
    case 'expiring':
      return `Expiring: ${formatSecondsLeft(seconds)} left.`;
    case 'running':
      return `${formatSecondsLeft(seconds)} left`;
  }
}

/** The words of each kind of request: what it is, what its two buttons say and do. */
export interface KindWords {
  /** A short name of the kind, shown as a badge. */
  readonly label: string;
  readonly approve: string;
  readonly reject: string;
  /** The past tense of `reject`. */
  readonly rejected: string;
  /** What approving does, in one sentence. */
  readonly approveMeans: string;
  /** What rejecting does, in one sentence. */
  readonly rejectMeans: string;
  /** The label of the text under review. */
  readonly textLabel: string;
}

export function kindWords(kind: ApprovalKind): KindWords {
  switch (kind) {
    case 'Approval':
      return {
        label: 'Review (HumanApproval node)',
        approve: 'Approve',
        reject: 'Reject',
        rejected: 'rejected',
        approveMeans: 'Approve sends exactly this text on to the next node.',
        rejectMeans: 'Reject sends your comment back along the rejected route, or ends the run Rejected where there is none.',
        textLabel: 'Text under review',
      };
    case 'Input':
      return {
        label: "A remote agent's question",
        approve: 'Send answer',
        reject: 'Decline',
        rejected: 'declined',
        approveMeans: 'Send answer gives your answer to the remote agent, which goes on with the same task.',
        rejectMeans: 'Decline sends nothing: the node goes on without an answer.',
        textLabel: 'Question from the remote agent',
      };
    case 'Action':
      return {
        label: "An acting remote's request",
        approve: 'Confirm and send',
        reject: 'Refuse',
        rejected: 'refused',
        approveMeans: 'Confirm and send sends exactly this request to the remote agent, which will act on it: it changes things outside the run.',
        rejectMeans: 'Refuse sends nothing: the model is told the call was blocked and the run goes on.',
        textLabel: 'Request the remote agent would receive',
      };
  }
}

/** Everything that decides whether Approve (or Send answer) is on. */
export interface ApproveInputs {
  /** False for a service account, which may not decide (rule 4.53). */
  readonly person: boolean;
  readonly kind: ApprovalKind;
  readonly complete: boolean;
  readonly size: number;
  readonly digest: DigestStatus;
  readonly seconds: number;
  /** Whether the text under review was scrolled to its end (or fits without scrolling). */
  readonly read: boolean;
  /** A decision of this person is recorded and the run has not taken it up yet (202). */
  readonly recorded: boolean;
  readonly answer: string;
}

export const SERVICE_ACCOUNT_REASON = 'You are signed in as a service account: approvals are decided by people only. You can read this request, not decide it.';

/** Why Approve is off, or null when it is on (rule 12.37): the most decisive reason first. */
export function approveBlocked(inputs: ApproveInputs): string | null {
  const words = kindWords(inputs.kind);
  const clock = clockOf(inputs.seconds);
  if (!inputs.person) return SERVICE_ACCOUNT_REASON;
  if (inputs.recorded) return 'Your decision is recorded; the run has not taken it up yet.';
  if (clock === 'expired') return 'This request has expired.';
  if (clock === 'expiring') return `Too little time is left to ${words.approve.toLowerCase()} safely: it expires in seconds. You can still ${words.reject.toLowerCase()}.`;
  if (!inputs.complete) {
    return `The text is too long to show whole (${inputs.size.toLocaleString('en')} bytes): what you cannot read cannot be approved. ${words.reject} it.`;
  }
  if (inputs.digest.state === 'mismatch') return 'The digest does not match: do not approve. The text shown is not the text the run asked about.';
  if (inputs.digest.state === 'checking') return 'Checking the digest of the text…';
  if (!inputs.read) return 'Scroll the text to its end first (or focus it and press End): approve only what you have read.';
  if (inputs.kind === 'Input' && inputs.answer.trim() === '') return 'Write an answer first.';
  return null;
}

/** Why Reject (or Decline, Refuse) is off, or null when it is on. */
export function rejectBlocked(inputs: Pick<ApproveInputs, 'person' | 'recorded' | 'seconds'>): string | null {
  if (!inputs.person) return SERVICE_ACCOUNT_REASON;
  if (inputs.recorded) return 'Your decision is recorded; the run has not taken it up yet.';
  if (clockOf(inputs.seconds) === 'expired') return 'This request has expired.';
  return null;
}

/** The digest check as the card states it. */
export function digestText(digest: DigestStatus): { readonly tone: 'ok' | 'bad' | 'note'; readonly text: string } {
  switch (digest.state) {
    case 'checking':
      return { tone: 'note', text: 'Checking the digest…' };
    case 'match':
      return { tone: 'ok', text: 'Digest checked: this page computed the same SHA-256 of the text as the server.' };
    case 'mismatch':
      return { tone: 'bad', text: 'Digest does not match: do not approve. This page computed another SHA-256 of the text than the server gave.' };
    case 'unchecked':
      return { tone: 'note', text: `Digest not checked here: ${digest.reason}` };
  }
}

/** What a decision came to, as the card says it: a title in plain words and the sidecar's own message. */
export interface DecisionOutcome {
  readonly tone: 'success' | 'info' | 'error';
  readonly title: string;
  /** The sidecar's message, or what to do next. */
  readonly detail: string;
}

const SETTLED_WORDS: Readonly<Record<string, string>> = {
  approved: 'it was already approved',
  rejected: 'it was already rejected',
  expired: 'it expired',
  cancelled: 'the run was cancelled',
};

/** A 409's plain words, read from the sidecar's message (operator/src/sidecar/approvals.rs). */
export function conflictTitle(message: string): string {
  const settled = /is already settled: (\w+)/.exec(message);
  if (settled !== null) {
    const state = settled[1] ?? '';
    return `Already settled: ${SETTLED_WORDS[state] ?? `it was ${state}`} before your decision arrived. Nothing more was decided.`;
  }
  if (/the digest .* is not the digest of approval/.test(message)) {
    return 'Digest mismatch: the digest sent is not the digest of the text the run asked about. Nothing was decided; read the text again.';
  }
  const late = /settled first \((\w+)\)/.exec(message);
  if (late !== null) {
    const state = late[1] ?? '';
    const why = state === 'expired' ? 'the approval expired' : state === 'cancelled' ? 'the run was cancelled' : `another decision was taken first (${state})`;
    return `Too late: ${why} before the run took up your decision. Your decision was not taken.`;
  }
  const refused = /the run refused this decision: (.*)$/s.exec(message);
  if (refused !== null) return `The run refused your decision: ${refused[1] ?? ''}`;
  return 'Your decision conflicts with the state of the run; it was not taken.';
}

/** A 403's plain words: a service account, or the cluster's admission refusing the person. */
export function forbiddenTitle(message: string): string {
  if (message.includes('is not a person')) return 'Refused: you are signed in as a service account, and approvals are decided by people only.';
  if (message.startsWith('the cluster refuses')) return 'The cluster refused your decision (its admission policy):';
  return 'Refused (403):';
}

/** Everything a decision can come to, for a request of `kind`. */
export function decisionOutcome(kind: ApprovalKind, result: DecisionResult): DecisionOutcome {
  if (result.ok && result.taken) {
    const approved = result.outcome === 'approved';
    const title =
      kind === 'Input'
        ? approved
          ? 'Answer sent.'
          : 'Declined.'
        : kind === 'Action'
          ? approved
            ? 'Confirmed: the request is sent.'
            : 'Refused: nothing was sent.'
          : approved
            ? 'Approved.'
            : 'Rejected.';
    return { tone: 'success', title, detail: `The run took your decision: ${result.outcome}.` };
  }
  if (result.ok) {
    return { tone: 'info', title: 'Recorded; the run has not taken it up yet.', detail: `${result.message}. It will, or the approval settles otherwise (it expires, or the run is cancelled).` };
  }
  return problemOutcome(result.problem);
}

function problemOutcome(problem: Problem): DecisionOutcome {
  const retry = problem.retryAfterSeconds === null ? '' : ` Try again in ${problem.retryAfterSeconds} s.`;
  switch (problem.status) {
    case 409:
      return { tone: 'error', title: conflictTitle(problem.message), detail: problem.message };
    case 403:
      return { tone: 'error', title: forbiddenTitle(problem.message), detail: problem.message };
    case 404:
      return { tone: 'error', title: 'Not found: this run or request is gone, or it is not yours to decide.', detail: problem.message };
    case 422:
      return { tone: 'error', title: 'The decision was not accepted as sent:', detail: problem.message };
    case 429:
      return { tone: 'error', title: 'Too many decisions in a minute: slow down.', detail: `${problem.message}${retry}` };
    case 0:
      return {
        tone: 'error',
        title: 'No answer from the sidecar: your decision may or may not be recorded.',
        detail: `${problem.message}. The card is read again and shows where the request stands.`,
      };
    default:
      return { tone: 'error', title: `The decision failed (${problem.status}):`, detail: `${problem.message}${retry}` };
  }
}

/** The text split around the escapes the sidecar wrote for control and invisible characters. */
export function escapeRuns(text: string): { readonly text: string; readonly escape: boolean }[] {
  const out: { text: string; escape: boolean }[] = [];
  const pattern = /\\(?:x[0-9a-f]{2}|u\{[0-9a-f]{1,6}\}|r)/g;
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > at) out.push({ text: text.slice(at, match.index), escape: false });
    out.push({ text: match[0], escape: true });
    at = match.index + match[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), escape: false });
  return out;
}
