// The run's totals, once it ended: from `run.end`, or from the run's status when the stream
// gave up before `run.end` came (rule 12.44).

import type { RunTotalsStatus } from '../api/runs.ts';
import type { RunTotals } from '../api/trace.ts';
import { muted } from '../ui/classes.ts';
import { formatCount, formatDuration } from '../ui/format.ts';

interface Props {
  readonly totals: RunTotals | RunTotalsStatus | null;
  /** Events the run could not send (over its cap), from `run.end`; null when not known. */
  readonly dropped: number | null;
  /** Where the totals come from, when not `run.end`. */
  readonly source: 'events' | 'run';
}

export function Totals({ totals, dropped, source }: Props) {
  return (
    <section aria-labelledby="totals-heading" className="flex flex-col gap-2">
      <h2 id="totals-heading" className="text-lg font-semibold">
        Totals
      </h2>
      {totals === null ? (
        <p className={muted}>The totals arrive when the run ends; until then the budgets above count as events arrive.</p>
      ) : (
        <>
          <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1 text-sm">
            <dt className="font-medium">Tokens</dt>
            <dd className="font-mono tabular-nums">{formatCount(totals.tokens ?? 0)}</dd>
            {Object.entries(totals.tokensByModel ?? {})
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([model, tokens]) => (
                <div key={model} className="contents">
                  <dt className={`pl-3 ${muted}`}>model {model}</dt>
                  <dd className="font-mono tabular-nums">{formatCount(tokens)}</dd>
                </div>
              ))}
            <dt className="font-medium">Tool calls</dt>
            <dd className="font-mono tabular-nums">{formatCount(totals.toolCalls ?? 0)}</dd>
            <dt className="font-medium">Delegations</dt>
            <dd className="font-mono tabular-nums">{formatCount(totals.delegations ?? 0)}</dd>
            <dt className="font-medium">Remote calls</dt>
            <dd className="font-mono tabular-nums">{formatCount(totals.remoteCalls ?? 0)}</dd>
            <dt className="font-medium">Wall time</dt>
            <dd className="font-mono tabular-nums">{totals.wallTimeMs === undefined ? '–' : formatDuration(totals.wallTimeMs)}</dd>
            {dropped === null ? null : (
              <>
                <dt className="font-medium">Events dropped</dt>
                <dd className="font-mono tabular-nums">{formatCount(dropped)}</dd>
              </>
            )}
          </dl>
          {source === 'run' ? <p className={`text-xs ${muted}`}>From the run's status: the stream stopped before the run's last event.</p> : null}
        </>
      )}
    </section>
  );
}
