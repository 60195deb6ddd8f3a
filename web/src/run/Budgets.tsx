// The run's budgets as meters filling as events arrive (rule 12.33), each limit from `run.start`
// against what the model counted; the time meter leaves out the time people took to decide
// (the run's deadline waits for them, rule 12.39) and says so. A budget that ran out is its own
// card naming the budget, its limit and the node that was running (rule 12.34).

import type { BudgetHit, BudgetKey } from '../api/trace.ts';
import { share, type Used } from './model.ts';
import { button, muted } from '../ui/classes.ts';
import { formatDuration } from '../ui/format.ts';
import { BUDGET_NAMES, BUDGET_ORDER, BUDGET_UNITS, budgetAmount, OUTCOME_WORDS } from './summary.ts';

/** "1,234 of 100,000" */
export function meterText(key: BudgetKey, used: number, limit: number): string {
  return `${budgetAmount(key, used)} of ${budgetAmount(key, limit)}`;
}

function fill(fraction: number, hit: boolean): string {
  if (hit || fraction >= 0.9) return 'bg-red-700 dark:bg-red-400';
  if (fraction >= 0.7) return 'bg-amber-600 dark:bg-amber-300';
  return 'bg-sky-700 dark:bg-sky-400';
}

interface BudgetsProps {
  readonly limits: Partial<Record<BudgetKey, number>> | null;
  readonly used: Used;
  /** Time people took to decide so far, in ms. */
  readonly waitMs: number;
  readonly hits: readonly BudgetHit[];
  /** Whether the limits are the run's own (`run.start`), or only what its spec asked for. */
  readonly started: boolean;
}

export function Budgets({ limits, used, waitMs, hits, started }: BudgetsProps) {
  const shown = BUDGET_ORDER.filter((key) => limits?.[key] !== undefined);
  return (
    <section aria-labelledby="budgets-heading" className="flex flex-col gap-3">
      <h2 id="budgets-heading" className="text-lg font-semibold">
        Budgets
      </h2>
      {shown.length === 0 ? (
        <p className={muted}>The budgets show once the run starts.</p>
      ) : (
        <ul className="flex flex-col gap-3">
          {shown.map((key) => {
            const limit = limits?.[key] ?? 0;
            const value = used[key];
            const hit = hits.some((h) => h.budget === key);
            const fraction = share(value, limit);
            const labelId = `budget-${key}`;
            const text = meterText(key, value, limit);
            return (
              <li key={key} className="flex flex-col gap-1">
                <div className="flex items-baseline justify-between gap-2 text-sm">
                  <span id={labelId} className="font-medium">
                    {BUDGET_NAMES[key]}
                    {hit ? <span className="ml-2 font-semibold text-red-800 dark:text-red-300">spent</span> : null}
                  </span>
                  <span className="font-mono tabular-nums">{text}</span>
                </div>
                <div
                  role="meter"
                  aria-labelledby={labelId}
                  aria-valuemin={0}
                  aria-valuemax={limit}
                  aria-valuenow={Math.min(value, limit)}
                  aria-valuetext={`${text}${hit ? ', spent' : ''}`}
                  className="h-2 overflow-hidden rounded-full bg-slate-200 dark:bg-slate-700"
                >
                  <div className={`h-full rounded-full ${fill(fraction, hit)}`} style={{ width: `${Math.round(fraction * 1000) / 10}%` }} />
                </div>
                {key === 'timeoutSeconds' ? (
                  <p className={`text-xs ${muted}`}>
                    Counted to the latest event, leaving out the time people took to decide
                    {waitMs > 0 ? ` (${formatDuration(waitMs)} so far)` : ''}: the deadline waits for them.
                  </p>
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
      {!started && shown.length > 0 ? <p className={`text-xs ${muted}`}>The limits the run asked for; the run's own arrive when it starts.</p> : null}
    </section>
  );
}

/** One card for each budget that ran out: which, its limit, what was used and the node that was running. */
export function BudgetHitCards({ hits, onShowNode }: { readonly hits: readonly BudgetHit[]; readonly onShowNode: (id: string) => void }) {
  if (hits.length === 0) return null;
  return (
    <div className="flex flex-col gap-2">
      {hits.map((hit) => (
        <section key={hit.seq} aria-label={`${BUDGET_NAMES[hit.budget]} budget spent`} className="rounded-lg border-2 border-red-700 bg-red-50 p-3 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-50">
          <h2 className="font-semibold">{BUDGET_NAMES[hit.budget]} budget spent</h2>
          <p className="text-sm">
            The run used {budgetAmount(hit.budget, hit.used)} {BUDGET_UNITS[hit.budget]}, over its limit of {budgetAmount(hit.budget, hit.limit)}
            {hit.nodeId == null ? '' : `, while node ${hit.nodeId} ran`}, so it stops: its outcome is {OUTCOME_WORDS.BudgetExhausted}.
          </p>
          {hit.nodeId == null ? null : (
            <button
              type="button"
              className={`${button} mt-2 !py-0.5 text-sm`}
              onClick={() => {
                if (hit.nodeId != null) onShowNode(hit.nodeId);
              }}
            >
              Show node {hit.nodeId}
            </button>
          )}
        </section>
      ))}
    </div>
  );
}
