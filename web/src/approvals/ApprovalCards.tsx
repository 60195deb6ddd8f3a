// The approval cards of one run: one card per approval that is pending, with the text read from
// the approvals call (never the stream), read again whenever the set of pending approvals changes
// and after every decision. A card goes when its approval is no longer pending (rule 12.39); what
// the person's decision came to stays in its place, and takes the focus when it arrives.
//
// `ApprovalCards` is what the live run panel renders (its `pending` is `RunModel.pendingApprovals()`);
// `RunApprovalCards` takes the pending ids directly (the Approvals page reads them from the run's
// status).

import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { listApprovals, type Approval } from '../api/approvals.ts';
import type { Problem } from '../api/http.ts';
import { useSession } from '../app/session.tsx';
import type { ApprovalView } from '../run/model.ts';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, focusRing, muted } from '../ui/classes.ts';
import { ApprovalCard } from './ApprovalCard.tsx';
import { kindWords, type DecisionOutcome } from './rules.ts';

interface Props {
  readonly namespace: string;
  readonly name: string;
  /** The run's UID: the approval digest binds it. */
  readonly uid: string;
  /** Approvals asked and not yet decided, as the run's events tell them. */
  readonly pending: readonly ApprovalView[];
  /** Called after any decision (whatever its answer), so the page reads the waiting count again. */
  readonly onDecided: () => void;
  /** A region of its own with a (screen-reader) heading, shown only while it holds something. */
  readonly headed?: boolean;
}

export function ApprovalCards({ namespace, name, uid, pending, onDecided, headed = false }: Props) {
  const key = pending.map((p) => p.requested.approvalId).join('\n');
  const pendingIds = useMemo(() => (key === '' ? [] : key.split('\n')), [key]);
  return <RunApprovalCards namespace={namespace} name={name} uid={uid} pendingIds={pendingIds} onDecided={onDecided} headed={headed} />;
}

interface ListProps {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly pendingIds: readonly string[];
  readonly onDecided: () => void;
  /** Say above the cards that a service account cannot decide (false where the page says it once). */
  readonly accountNote?: boolean;
  /** A region of its own with a (screen-reader) heading, shown only while it holds something. */
  readonly headed?: boolean;
}

interface Decided {
  readonly outcome: DecisionOutcome;
  /** Bumped by each decision, so the message takes the focus again. */
  readonly seq: number;
}

interface ListState {
  readonly items: readonly Approval[] | null;
  readonly problem: Problem | null;
}

export function RunApprovalCards({ namespace, name, uid, pendingIds, onDecided, accountNote = true, headed = false }: ListProps) {
  const headingId = useId();
  const { token, api, me, expire } = useSession();
  const key = pendingIds.join('\n');
  const [reads, setReads] = useState(0);
  const [list, setList] = useState<ListState>({ items: null, problem: null });
  const [decided, setDecided] = useState<ReadonlyMap<string, Decided>>(new Map());
  const seq = useRef(0);

  useEffect(() => {
    // Nothing waits and nothing was decided here: nothing to read. After a decision (reads > 0)
    // the list is read again even when nothing waits any more, so the card's summary is current.
    if (key === '' && reads === 0) return undefined;
    const abort = new AbortController();
    void listApprovals(token, namespace, name, { ...api, signal: abort.signal }).then((result) => {
      if (abort.signal.aborted) return;
      if (result.ok) {
        setList({ items: result.value, problem: null });
      } else if (result.problem.status === 401) {
        expire(result.problem);
      } else {
        setList((previous) => ({ items: previous.items, problem: result.problem }));
      }
    });
    return () => {
      abort.abort();
    };
  }, [key, reads, token, api, namespace, name, expire]);

  const onOutcome = useCallback(
    (id: string, outcome: DecisionOutcome) => {
      seq.current += 1;
      const entry = { outcome, seq: seq.current };
      setDecided((previous) => new Map(previous).set(id, entry));
      setReads((r) => r + 1);
      onDecided();
    },
    [onDecided],
  );
  const onSending = useCallback((id: string) => {
    setDecided((previous) => {
      if (!previous.has(id)) return previous;
      const next = new Map(previous);
      next.delete(id);
      return next;
    });
  }, []);

  const pending = new Set(pendingIds);
  const items = list.items ?? [];
  const listed = new Set(items.map((a) => a.id));
  // In the order the run asked: the approvals the sidecar listed, then those it has not listed yet.
  const entries: { readonly id: string; readonly approval: Approval | null }[] = [
    ...items.filter((a) => pending.has(a.id) || decided.has(a.id)).map((a) => ({ id: a.id, approval: a })),
    ...pendingIds.filter((id) => !listed.has(id)).map((id) => ({ id, approval: null })),
  ];

  if (entries.length === 0 && list.problem === null) return null;
  const cards = (
    <div className="flex flex-col gap-4">
      {me.person || !accountNote ? null : <ServiceAccountNote username={me.username} />}
      {list.problem === null ? null : (
        <div className="flex flex-col items-start gap-2">
          <ProblemAlert doing="Reading the text under review" problem={list.problem} />
          <button
            type="button"
            className={button}
            onClick={() => {
              setReads((r) => r + 1);
            }}
          >
            Read the approvals again
          </button>
        </div>
      )}
      {entries.map(({ id, approval }) => {
        const outcome = decided.get(id);
        // A decision the run took closes the card at once, before the stream or the list says so.
        const open = approval !== null && approval.state === 'pending' && pending.has(id) && outcome?.outcome.tone !== 'success';
        if (approval === null) {
          return (
            <article key={id} className={card}>
              <p className={muted}>{list.items === null ? `Reading the text under review of ${id}…` : `The sidecar lists no approval ${id} yet.`}</p>
            </article>
          );
        }
        if (!open && outcome === undefined) return null;
        return (
          <article key={id} className={card}>
            {open ? (
              <ApprovalCard namespace={namespace} name={name} uid={uid} approval={approval} onOutcome={onOutcome} onSending={onSending} />
            ) : (
              <SettledSummary approval={approval} />
            )}
            {outcome === undefined ? null : <OutcomeMessage outcome={outcome.outcome} seq={outcome.seq} />}
          </article>
        );
      })}
    </div>
  );
  if (!headed) return cards;
  return (
    <section aria-labelledby={headingId} className="flex flex-col gap-2">
      <h2 id={headingId} className="sr-only">
        {pendingIds.length > 0 ? 'Approvals waiting for a decision' : 'Approvals decided here'}
      </h2>
      {cards}
    </section>
  );
}

/** Said once where cards are shown to a service account. */
export function ServiceAccountNote({ username }: { readonly username: string }) {
  return (
    <p className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100">
      Signed in as <span className="font-mono">{username}</span>, a service account: approvals are decided by people only (the cluster refuses a service account&apos;s
      decision). You can read these requests, not decide them.
    </p>
  );
}

/** What is left of a card once its approval is no longer pending. */
function SettledSummary({ approval }: { readonly approval: Approval }) {
  return (
    <h3 className="font-semibold">
      {approval.prompt === '' ? kindWords(approval.kind).label : approval.prompt}{' '}
      <span className={`font-normal ${muted}`}>
        (node <span className="font-mono">{approval.node}</span>, {approval.state === 'pending' ? 'waiting' : approval.state})
      </span>
    </h3>
  );
}

const TONES: Readonly<Record<DecisionOutcome['tone'], string>> = {
  success: 'border-emerald-700 bg-emerald-50 text-emerald-950 dark:border-emerald-400 dark:bg-emerald-950 dark:text-emerald-50',
  info: 'border-sky-700 bg-sky-50 text-sky-950 dark:border-sky-400 dark:bg-sky-950 dark:text-sky-50',
  error: 'border-red-700 bg-red-50 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50',
};

/** What a decision came to; it takes the focus when it arrives, so the person hears it. */
export function OutcomeMessage({ outcome, seq }: { readonly outcome: DecisionOutcome; readonly seq: number }) {
  const self = useRef<HTMLDivElement>(null);
  useEffect(() => {
    self.current?.focus();
  }, [seq]);
  return (
    <div ref={self} tabIndex={-1} data-outcome={outcome.tone} className={`mt-3 rounded-md border p-3 ${TONES[outcome.tone]} ${focusRing}`}>
      <p className="font-semibold">{outcome.title}</p>
      <p className="text-sm break-words">{outcome.detail}</p>
    </div>
  );
}
