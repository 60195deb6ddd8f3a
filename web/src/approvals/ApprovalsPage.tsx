// Every approval waiting for the signed-in person in the namespace looked at (rule 12.40): the
// runs they own or approve that wait, each with a link to its page and the same cards as the run
// panel. A run the person decided on here stays on the page with what the decision came to,
// until they leave it, so the message they are told does not vanish with the run. The most
// urgent run (the earliest expiry) comes first, and a run keeps its place once decided.

import { useCallback, useState } from 'react';
import type { Run } from '../api/runs.ts';
import { href } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { link, muted } from '../ui/classes.ts';
import { formatTime } from '../ui/format.ts';
import { RunApprovalCards, ServiceAccountNote } from './ApprovalCards.tsx';
import type { Waiting } from './waiting.ts';

export interface RunGroup {
  readonly run: Run;
  readonly pendingIds: readonly string[];
  /** The earliest expiry among its approvals: the most urgent run comes first. */
  readonly urgency: string;
}

/** A run decided on here, kept on the page where it was. */
export interface Kept {
  readonly run: Run;
  readonly urgency: string;
}

function runKey(run: Run): string {
  return `${run.namespace}/${run.name}`;
}

/**
 * The runs to show: each run with approvals waiting, and each run decided on here (kept, with no
 * pending ids once they are settled, at the place it had), the most urgent first.
 */
export function groupsOf(waiting: Waiting['items'], kept: ReadonlyMap<string, Kept>): RunGroup[] {
  const groups = new Map<string, { run: Run; pendingIds: string[]; urgency: string }>();
  for (const { run, approval } of waiting) {
    const key = runKey(run);
    const group = groups.get(key) ?? { run, pendingIds: [], urgency: kept.get(key)?.urgency ?? approval.expiresAt };
    group.pendingIds.push(approval.id);
    if (approval.expiresAt < group.urgency) group.urgency = approval.expiresAt;
    groups.set(key, group);
  }
  for (const [key, { run, urgency }] of kept) if (!groups.has(key)) groups.set(key, { run, pendingIds: [], urgency });
  return [...groups.values()].sort((a, b) => a.urgency.localeCompare(b.urgency) || a.run.name.localeCompare(b.run.name));
}

export function ApprovalsPage({ waiting }: { readonly waiting: Waiting }) {
  const { namespace, me } = useSession();
  const [kept, setKept] = useState<ReadonlyMap<string, Kept>>(new Map());
  const { refresh } = waiting;
  const decidedOn = useCallback(
    (group: RunGroup) => {
      const key = runKey(group.run);
      setKept((previous) => (previous.has(key) ? previous : new Map(previous).set(key, { run: group.run, urgency: group.urgency })));
      refresh();
    },
    [refresh],
  );
  const groups = groupsOf(waiting.items, kept);
  const count = waiting.count;

  return (
    <section className="flex flex-col gap-4" aria-labelledby="approvals-title">
      <PageHeading id="approvals-title">Approvals waiting for you</PageHeading>
      {namespace === '' ? (
        <p>
          Choose a namespace first:{' '}
          <a className={link} href="#/">
            go to the runs
          </a>
          .
        </p>
      ) : count === 0 && groups.length === 0 ? (
        <div className="flex flex-col gap-2">
          <p>Nothing is waiting for you in namespace {namespace}.</p>
          <p className={muted}>
            When a run you own or approve asks a person (a HumanApproval node, a remote agent&apos;s question, an acting remote&apos;s request), it appears
            here and its count shows beside Approvals in the navigation and in the tab&apos;s title. This page looks again every 10 seconds.{' '}
            <a className={link} href={href({ page: 'runs', namespace, query: new URLSearchParams() })}>
              Your runs in {namespace}
            </a>
          </p>
        </div>
      ) : (
        <p className={muted}>
          {count === null
            ? `Looking for approvals in namespace ${namespace}…`
            : count === 0
              ? `Nothing else is waiting for you in namespace ${namespace}.`
              : `${count} ${count === 1 ? 'approval waits' : 'approvals wait'} for you in namespace ${namespace}, in runs you own or approve.`}{' '}
          {me.person && count !== null && count > 0 ? 'Read each text to its end before you approve it.' : null}
        </p>
      )}
      {me.person ? null : <ServiceAccountNote username={me.username} />}
      {waiting.problem === null ? null : <ProblemAlert doing="Looking for approvals" problem={waiting.problem} />}
      {groups.map((group) => (
        <RunSection key={runKey(group.run)} group={group} onDecided={decidedOn} />
      ))}
    </section>
  );
}

function RunSection({ group, onDecided }: { readonly group: RunGroup; readonly onDecided: (group: RunGroup) => void }) {
  const { me } = useSession();
  const { run, pendingIds } = group;
  const titleId = `run-${run.uid === '' ? run.name : run.uid}`;
  const role = run.owner === me.username ? 'you own it' : 'you are an approver';
  const decided = useCallback(() => {
    onDecided(group);
  }, [onDecided, group]);
  return (
    <section aria-labelledby={titleId} className="flex flex-col gap-3 border-t border-slate-300 pt-4 dark:border-slate-700">
      <div className="flex flex-wrap items-baseline gap-x-4 gap-y-1">
        <h2 id={titleId} className="text-xl font-semibold">
          Run{' '}
          <a className={link} href={href({ page: 'run', namespace: run.namespace, name: run.name })}>
            {run.name}
          </a>
        </h2>
        <p className={`text-sm ${muted}`}>
          {run.composition?.name ?? run.compositionRef?.name ?? 'inline composition'} · owner <span className="font-mono">{run.owner}</span> ({role}) · started{' '}
          {formatTime(run.startTime ?? run.created)}
        </p>
      </div>
      {pendingIds.length === 0 ? <p className={`text-sm ${muted}`}>Nothing else waits in this run.</p> : null}
      <RunApprovalCards namespace={run.namespace} name={run.name} uid={run.uid} pendingIds={pendingIds} onDecided={decided} accountNote={false} />
    </section>
  );
}
