// One approval card (rules 12.35–12.42 of docs/behaviour.md): the prompt, the node and kind, the
// text under review as the approvals call gives it (escapes visible, in a focusable region that
// scrolls by keyboard), the time left, the digest computed here and checked against the server's,
// and the decision: Approve (off, with its reason, until the text is read and checked, for text
// too long to show whole, and once expiring) or Reject with a comment; a remote agent's question
// takes an answer (Send answer, Decline) and is marked as written by an external agent.
//
// `ApprovalCardView` is the markup alone (rendered by the tests); `ApprovalCard` holds the state:
// the digest check, the countdown, whether the text was scrolled to its end, the fields, and the
// call in flight.

import { memo, useEffect, useId, useRef, useState, type Ref } from 'react';
import { decide, type Approval, type DecisionRequest } from '../api/approvals.ts';
import { checkApprovalDigest, digestSupport } from '../api/digest.ts';
import { useSession } from '../app/session.tsx';
import { dangerButton, focusRing, input, muted, primaryButton } from '../ui/classes.ts';
import { formatTime } from '../ui/format.ts';
import {
  approveBlocked,
  clockOf,
  decisionOutcome,
  digestText,
  escapeRuns,
  kindWords,
  rejectBlocked,
  secondsLeft,
  timeLeftText,
  type DecisionOutcome,
  type DigestStatus,
} from './rules.ts';

const SENDING = 'Sending your decision: the sidecar waits up to 30 s for the run to take it up.';

const warning = 'rounded-md border-2 border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-50';

const escapeMark = 'rounded bg-amber-200 px-0.5 text-amber-950 dark:bg-amber-800 dark:text-amber-50';

const blockedLook = 'aria-disabled:cursor-not-allowed aria-disabled:opacity-60 aria-disabled:hover:bg-inherit';

export interface CardViewProps {
  /** The run's name: it makes the text region's name unique on a page of several runs. */
  readonly run: string;
  readonly approval: Approval;
  readonly digest: DigestStatus;
  readonly seconds: number;
  readonly person: boolean;
  readonly read: boolean;
  /** A decision is being sent. */
  readonly busy: 'Approve' | 'Reject' | null;
  /** A decision was recorded and not taken up yet (202). */
  readonly recorded: boolean;
  readonly comment: string;
  readonly answer: string;
  readonly onComment?: (text: string) => void;
  readonly onAnswer?: (text: string) => void;
  readonly onDecide?: (decision: 'Approve' | 'Reject') => void;
  readonly textRef?: Ref<HTMLDivElement>;
  readonly onTextScroll?: () => void;
}

export function ApprovalCardView(props: CardViewProps) {
  const { approval, digest, seconds, person, read, busy, recorded, comment, answer } = props;
  const ids = useId();
  const words = kindWords(approval.kind);
  const clock = clockOf(seconds);
  const sending = busy !== null;
  const approveOff = approveBlocked({ person, kind: approval.kind, complete: approval.complete, size: approval.size, digest, seconds, read, recorded, answer }) ?? (sending ? SENDING : null);
  const rejectOff = rejectBlocked({ person, recorded, seconds }) ?? (sending ? SENDING : null);
  const check = digestText(digest);
  const question = approval.kind === 'Input';
  const fieldId = `${ids}-field`;
  const approveReasonId = `${ids}-approve-reason`;
  const rejectReasonId = rejectOff !== null && rejectOff === approveOff ? approveReasonId : `${ids}-reject-reason`;
  const readOnly = recorded || sending;

  return (
    // A container: beside each other when the card is wide (the text on the left, the decision on
    // the right), one above the other when it is narrow (a side panel).
    <div className="@container">
      <div className="flex flex-col gap-3">
        <div className="flex flex-wrap items-start justify-between gap-x-4 gap-y-1">
          <h3 className="min-w-0 flex-1 text-lg font-semibold break-words">{approval.prompt === '' ? words.label : approval.prompt}</h3>
          <p
            className={`shrink-0 rounded-md px-2 py-0.5 font-medium tabular-nums ${
              clock === 'running' ? 'bg-slate-100 text-slate-800 dark:bg-slate-800 dark:text-slate-100' : 'bg-red-100 text-red-900 dark:bg-red-950 dark:text-red-100'
            }`}
          >
            <span className="sr-only">Time left: </span>
            {timeLeftText(seconds)}
          </p>
        </div>
        <dl className={`-mt-2 flex flex-wrap gap-x-6 gap-y-1 text-sm ${muted}`}>
          <div className="flex gap-1.5">
            <dt>Kind</dt>
            <dd className="font-medium text-slate-900 dark:text-slate-100">{words.label}</dd>
          </div>
          <div className="flex gap-1.5">
            <dt>Node</dt>
            <dd className="font-mono text-slate-900 dark:text-slate-100">{approval.node}</dd>
          </div>
          <div className="flex gap-1.5">
            <dt>Expires</dt>
            <dd className="text-slate-900 dark:text-slate-100">{formatTime(approval.expiresAt)}</dd>
          </div>
        </dl>
        {/* Announced once when it starts expiring, not every second. */}
        <p role="status" className="sr-only">
          {clock === 'running' ? '' : clock === 'expiring' ? `This request expires in seconds: it can no longer be ${question ? 'answered' : 'approved'}.` : 'This request has expired.'}
        </p>

        <div className="flex flex-col gap-4 @3xl:grid @3xl:grid-cols-[minmax(0,1fr)_22rem] @3xl:items-start">
          <div className="flex min-w-0 flex-col gap-2">
            {question ? (
              <p className={warning}>
                <strong>Written by an external agent, not by Orrery or your team: never answer with secrets</strong> (passwords, tokens, keys, personal data).
                Answer only what you would tell a stranger.
              </p>
            ) : null}
            {approval.kind === 'Action' ? (
              <p className={warning}>
                <strong>This call changes things outside the run.</strong> An acting remote agent (a tool the composition may use to act) will receive exactly the
                request below. Confirm only a request you would make yourself.
              </p>
            ) : null}
            <p id={`${ids}-text`} className="font-medium">
              {words.textLabel}
              <span className="sr-only">
                {' '}
                ({approval.id} of run {props.run})
              </span>
            </p>
            <ReviewText text={approval.text} escapes={approval.textNote !== null} labelledBy={`${ids}-text`} textRef={props.textRef} onScroll={props.onTextScroll} />
            {approval.textNote === null ? null : (
              <p className="text-sm text-amber-900 dark:text-amber-200">
                {approval.textNote}. Escapes are <mark className={escapeMark}>marked</mark> in the text.
              </p>
            )}
            {approval.complete ? null : (
              <p className="text-sm font-medium text-red-800 dark:text-red-300">
                Only the first part of the text is shown: it is {approval.size.toLocaleString('en')} bytes, too long to show whole. It can only be {words.rejected}.
              </p>
            )}
          </div>

          <div className="flex flex-col gap-3">
            <p className={`text-sm ${check.tone === 'ok' ? 'text-emerald-800 dark:text-emerald-300' : check.tone === 'bad' ? 'font-semibold text-red-800 dark:text-red-300' : muted}`}>
              {check.text}
              <span className={`mt-0.5 block font-mono text-xs break-all ${muted}`}>SHA-256 {approval.digest}</span>
            </p>
            {/* A service account cannot decide: no field to fill in vain. */}
            {person ? (
            <div className="flex flex-col gap-1">
              <label htmlFor={fieldId} className="font-medium">
                {question ? (
                  <>
                    Your answer <span className={`font-normal ${muted}`}>(sent to the remote agent)</span>
                  </>
                ) : (
                  <>
                    Comment <span className={`font-normal ${muted}`}>(optional, sent if you {words.reject.toLowerCase()})</span>
                  </>
                )}
              </label>
              <textarea
                id={fieldId}
                rows={question ? 3 : 2}
                className={`${input} resize-y`}
                value={question ? answer : comment}
                readOnly={readOnly}
                onChange={(event) => {
                  if (question) props.onAnswer?.(event.target.value);
                  else props.onComment?.(event.target.value);
                }}
              />
            </div>
            ) : null}
            <div className="flex flex-wrap items-center gap-3">
              <DecisionButton
                look={primaryButton}
                label={busy === 'Approve' ? 'Sending…' : words.approve}
                reason={approveOff}
                reasonId={approveReasonId}
                onPress={() => props.onDecide?.('Approve')}
              />
              <DecisionButton
                look={dangerButton}
                label={busy === 'Reject' ? 'Sending…' : words.reject}
                reason={rejectOff}
                reasonId={rejectReasonId}
                onPress={() => props.onDecide?.('Reject')}
              />
            </div>
            {approveOff === null ? null : (
              <p id={approveReasonId} className="text-sm text-slate-800 dark:text-slate-200">
                <span className="font-semibold">{words.approve} is off:</span> {approveOff}
              </p>
            )}
            {rejectOff === null || rejectOff === approveOff ? null : (
              <p id={rejectReasonId} className="text-sm text-slate-800 dark:text-slate-200">
                <span className="font-semibold">{words.reject} is off:</span> {rejectOff}
              </p>
            )}
            <p className={`text-sm ${muted}`}>
              {words.approveMeans} {words.rejectMeans}
            </p>
          </div>
        </div>
      </div>
    </div>
  );
}

interface ButtonProps {
  readonly look: string;
  readonly label: string;
  /** Why it is off, or null when it is on. */
  readonly reason: string | null;
  readonly reasonId: string;
  readonly onPress: () => void;
}

/**
 * A decision button. Off, it stays focusable (`aria-disabled`, not `disabled`) and names its
 * reason (`aria-describedby`), so a keyboard or screen reader user finds out why.
 */
function DecisionButton({ look, label, reason, reasonId, onPress }: ButtonProps) {
  const off = reason !== null;
  return (
    <button
      type="button"
      className={`${look} ${blockedLook}`}
      aria-disabled={off ? true : undefined}
      aria-describedby={off ? reasonId : undefined}
      onClick={() => {
        if (!off) onPress();
      }}
    >
      {label}
    </button>
  );
}

interface TextProps {
  readonly text: string;
  /** The sidecar escaped some characters: mark its escapes. */
  readonly escapes: boolean;
  /** The id of the region's label. */
  readonly labelledBy: string;
  readonly textRef?: Ref<HTMLDivElement> | undefined;
  readonly onScroll?: (() => void) | undefined;
}

/** The text under review: a focusable region the keyboard scrolls (arrows, Page Up/Down, Home/End). Rendered again only when the text changes. */
const ReviewText = memo(function ReviewText({ text, escapes, labelledBy, textRef, onScroll }: TextProps) {
  return (
    <div
      ref={textRef}
      role="region"
      aria-labelledby={labelledBy}
      tabIndex={0}
      onScroll={onScroll}
      className={`max-h-64 overflow-auto rounded-md border border-slate-400 bg-slate-50 p-3 dark:border-slate-600 dark:bg-slate-950 ${focusRing}`}
    >
      <pre className="font-mono text-sm break-words whitespace-pre-wrap">
        {text === '' ? (
          <span className={muted}>(empty)</span>
        ) : escapes ? (
          escapeRuns(text).map((run, i) =>
            run.escape ? (
              <mark key={i} className={escapeMark}>
                {run.text}
              </mark>
            ) : (
              run.text
            ),
          )
        ) : (
          text
        )}
      </pre>
    </div>
  );
});

interface CardProps {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly approval: Approval;
  /** A decision came back (any answer): the list shows it and reads the approvals again. */
  readonly onOutcome: (id: string, outcome: DecisionOutcome) => void;
  /** A decision is being sent: an earlier outcome of this card is stale. */
  readonly onSending: (id: string) => void;
}

const support = digestSupport();

function scrolledToEnd(el: HTMLElement): boolean {
  return el.clientHeight > 0 && el.scrollTop + el.clientHeight >= el.scrollHeight - 2;
}

/** An approval card with its state; see the top of this file. */
export function ApprovalCard({ namespace, name, uid, approval, onOutcome, onSending }: CardProps) {
  const { token, api, me, expire } = useSession();
  const [digest, setDigest] = useState<{ readonly key: string; readonly status: DigestStatus } | null>(null);
  const [now, setNow] = useState(() => Date.now());
  const [read, setRead] = useState(false);
  const [busy, setBusy] = useState<'Approve' | 'Reject' | null>(null);
  const [recorded, setRecorded] = useState(false);
  const [comment, setComment] = useState('');
  const [answer, setAnswer] = useState('');
  const text = useRef<HTMLDivElement>(null);

  const digestKey = `${uid}\n${approval.id}\n${approval.digest}\n${approval.exactText}`;
  useEffect(() => {
    // Without the run's UID (not read yet) any digest would differ: wait for it.
    if (uid === '') return undefined;
    let current = true;
    void checkApprovalDigest(support, uid, approval.id, approval.exactText, approval.digest).then((status) => {
      if (current) setDigest({ key: digestKey, status });
    });
    return () => {
      current = false;
    };
  }, [digestKey, uid, approval.id, approval.exactText, approval.digest]);

  useEffect(() => {
    const timer = window.setInterval(() => {
      setNow(Date.now());
    }, 1000);
    return () => {
      window.clearInterval(timer);
    };
  }, []);

  // Read: the text was scrolled to its end, or it fits whole without scrolling. A region not laid
  // out (in a hidden panel) has no height and proves nothing.
  const measure = () => {
    const el = text.current;
    if (el !== null && scrolledToEnd(el)) setRead(true);
  };
  useEffect(() => {
    const el = text.current;
    if (el === null || typeof ResizeObserver === 'undefined') return undefined;
    const observer = new ResizeObserver(() => {
      if (scrolledToEnd(el)) setRead(true);
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
    };
  }, [approval.text]);

  const status: DigestStatus = digest !== null && digest.key === digestKey ? digest.status : { state: 'checking' };
  const seconds = secondsLeft(approval.expiresAt, now);

  const send = async (decision: 'Approve' | 'Reject') => {
    if (busy !== null) return;
    let request: DecisionRequest;
    if (decision === 'Approve') {
      // The page's own digest when it checked one, else (no Web Crypto here) the server's, as the card says.
      const sent = status.state === 'match' ? status.digest : approval.digest;
      request = approval.kind === 'Input' ? { decision, digest: sent, answer } : { decision, digest: sent };
    } else {
      request = approval.kind !== 'Input' && comment.trim() !== '' ? { decision, comment } : { decision };
    }
    setBusy(decision);
    onSending(approval.id);
    const result = await decide(token, namespace, name, approval.id, request, api);
    setBusy(null);
    if (!result.ok && result.problem.status === 401) {
      expire(result.problem);
      return;
    }
    if (result.ok && !result.taken) setRecorded(true);
    onOutcome(approval.id, decisionOutcome(approval.kind, result));
  };

  return (
    <ApprovalCardView
      run={name}
      approval={approval}
      digest={status}
      seconds={seconds}
      person={me.person}
      read={read}
      busy={busy}
      recorded={recorded}
      comment={comment}
      answer={answer}
      onComment={setComment}
      onAnswer={setAnswer}
      onDecide={(decision) => {
        void send(decision);
      }}
      textRef={text}
      onTextScroll={measure}
    />
  );
}
