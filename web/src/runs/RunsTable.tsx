// The caller's runs as a table: one row a run, its name a link to the run's page, its phase in
// words, and, for a live run, Cancel with a confirm step (Escape or "Keep running" backs out).

import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import type { Run } from '../api/runs.ts';
import { href } from '../app/route.ts';
import { button, dangerButton, focusRing, link, muted } from '../ui/classes.ts';
import { formatTime } from '../ui/format.ts';
import { PhaseBadge } from './PhaseBadge.tsx';
import { compositionOf, durationText, isLive, reasonOf, tokensText } from './rows.ts';

/** How asking to cancel went: asked (the run ends shortly), it had already ended, or it failed. */
export type CancelOutcome = 'asked' | 'ended' | 'failed';

interface Props {
  readonly runs: readonly Run[];
  readonly caption: string;
  readonly username: string;
  /** Now, in epoch milliseconds, for the duration of live runs. */
  readonly now: number;
  /** The id of a run's name link (to move the focus to a row). */
  readonly linkId: (name: string) => string;
  readonly onCancel: (run: Run) => Promise<CancelOutcome>;
  /** True while the rows shown are being replaced (other filters are loading). */
  readonly stale?: boolean;
}

const th = 'px-2.5 py-2 text-left font-semibold whitespace-nowrap';
const td = 'px-2.5 py-2 align-top';

export function RunsTable({ runs, caption, username, now, linkId, onCancel, stale = false }: Props) {
  return (
    <div className="overflow-x-auto rounded-lg border border-slate-300 bg-white dark:border-slate-700 dark:bg-slate-900">
      <table className={`w-full border-collapse text-sm ${stale ? 'opacity-60' : ''}`} aria-busy={stale}>
        <caption className="px-3 py-2 text-left text-base font-medium">{caption}</caption>
        <thead className="border-y border-slate-300 bg-slate-100 dark:border-slate-700 dark:bg-slate-800">
          <tr>
            <th scope="col" className={th}>
              Run
            </th>
            <th scope="col" className={th}>
              Phase
            </th>
            <th scope="col" className={th}>
              Composition
            </th>
            <th scope="col" className={th}>
              Owner
            </th>
            <th scope="col" className={`${th} text-right`}>
              Tokens
            </th>
            <th scope="col" className={th}>
              Started
            </th>
            <th scope="col" className={th}>
              Duration
            </th>
            <th scope="col" className={`${th} w-24 whitespace-normal`}>
              Approvals waiting
            </th>
            <th scope="col" className={`${th} w-36`}>
              Actions
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <RunRow key={run.uid === '' ? run.name : run.uid} run={run} username={username} now={now} linkId={linkId} onCancel={onCancel} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RunRow({ run, username, now, linkId, onCancel }: { readonly run: Run; readonly username: string; readonly now: number; readonly linkId: (name: string) => string; readonly onCancel: (run: Run) => Promise<CancelOutcome> }) {
  const runHref = href({ page: 'run', namespace: run.namespace, name: run.name });
  const composition = compositionOf(run);
  const reason = reasonOf(run);
  const waiting = run.pendingApprovals.length;
  return (
    <tr className="border-t border-slate-200 dark:border-slate-700">
      <th scope="row" className={`${td} text-left font-normal`}>
        <a id={linkId(run.name)} href={runHref} className={`${link} font-mono font-medium break-words`}>
          {run.name}
        </a>
        {reason === null ? null : <p className={`${muted} mt-1 line-clamp-2 max-w-52 text-xs`}>{reason}</p>}
      </th>
      <td className={td}>
        <PhaseBadge phase={run.phase} />
      </td>
      <td className={td}>
        {composition === null ? (
          <span className={`${muted} italic`}>inline</span>
        ) : (
          <>
            <span className="font-mono break-words">{composition.name}</span>{' '}
            <span className={`${muted} whitespace-nowrap`}>{composition.revision === null ? '(newest)' : `rev ${composition.revision}`}</span>
          </>
        )}
      </td>
      <td className={`${td} break-words`}>
        {run.owner === username ? <span title={run.owner}>you</span> : run.owner}
      </td>
      <td className={`${td} text-right tabular-nums`}>{tokensText(run)}</td>
      <td className={`${td} whitespace-nowrap tabular-nums`}>{formatTime(run.startTime)}</td>
      <td className={`${td} whitespace-nowrap tabular-nums`}>{durationText(run, now)}</td>
      <td className={td}>
        {waiting === 0 ? (
          <span className={muted}>0</span>
        ) : (
          <a href={runHref} className={`${link} font-medium whitespace-nowrap`}>
            {waiting} waiting<span className="sr-only"> in run {run.name}</span>
          </a>
        )}
      </td>
      <td className={td}>
        <CancelCell run={run} onCancel={onCancel} />
      </td>
    </tr>
  );
}

type Step = 'idle' | 'confirm' | 'sending' | 'asked';

const small = 'px-2 py-0.5 text-sm';

/** Cancel, then "Cancel run X?" with Cancel run / Keep running; the focus never falls off the row. */
function CancelCell({ run, onCancel }: { readonly run: Run; readonly onCancel: (run: Run) => Promise<CancelOutcome> }) {
  const [step, setStep] = useState<Step>('idle');
  const box = useRef<HTMLDivElement>(null);
  const ask = useRef<HTMLButtonElement>(null);
  const keep = useRef<HTMLButtonElement>(null);
  const focusNext = useRef<'keep' | 'ask' | 'box' | null>(null);

  useEffect(() => {
    const target = focusNext.current;
    focusNext.current = null;
    if (target === 'keep') keep.current?.focus();
    else if (target === 'ask') (ask.current ?? box.current)?.focus();
    else if (target === 'box') box.current?.focus();
  }, [step]);

  // The same focusable box as a live run's, so the focus stays on the row when it ends.
  if (!isLive(run)) {
    return (
      <div ref={box} tabIndex={-1} className={`rounded ${focusRing}`}>
        <span className={muted}>{step === 'asked' ? 'Ended' : '–'}</span>
      </div>
    );
  }

  const backOut = () => {
    focusNext.current = 'ask';
    setStep('idle');
  };
  const confirm = async () => {
    setStep('sending');
    const outcome = await onCancel(run);
    focusNext.current = outcome === 'failed' ? 'ask' : 'box';
    setStep(outcome === 'asked' ? 'asked' : 'idle');
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Escape' && step === 'confirm') {
      event.preventDefault();
      backOut();
    }
  };

  return (
    <div ref={box} tabIndex={-1} className={`flex flex-col items-start gap-1 rounded ${focusRing}`} onKeyDown={onKeyDown}>
      {run.cancel || step === 'asked' ? (
        <span className={`${muted} whitespace-nowrap`}>Cancelling…</span>
      ) : step === 'idle' ? (
        <button
          ref={ask}
          type="button"
          className={`${dangerButton} ${small}`}
          onClick={() => {
            focusNext.current = 'keep';
            setStep('confirm');
          }}
        >
          Cancel<span className="sr-only"> run {run.name}</span>
        </button>
      ) : (
        <div role="group" aria-label={`Cancel run ${run.name}?`} className="flex flex-col items-start gap-1">
          <span className="font-medium break-words">
            Cancel run <span className="font-mono">{run.name}</span>?
          </span>
          <div className="flex flex-wrap gap-1">
            <button
              type="button"
              className={`${dangerButton} ${small}`}
              aria-disabled={step === 'sending'}
              onClick={() => {
                if (step !== 'sending') void confirm();
              }}
            >
              {step === 'sending' ? 'Cancelling…' : 'Cancel run'}
            </button>
            <button
              ref={keep}
              type="button"
              className={`${button} ${small}`}
              aria-disabled={step === 'sending'}
              onClick={() => {
                if (step !== 'sending') backOut();
              }}
            >
              Keep running
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
