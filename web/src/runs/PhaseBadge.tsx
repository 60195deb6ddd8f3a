import type { RunPhase } from '../api/runs.ts';
import { phaseLabel } from './filters.ts';

// Each phase has its words, a shape and a colour; the words alone say it (colour is never the
// only sign), the shape helps a glance, and both themes keep AA contrast.
const LOOKS: Readonly<Record<RunPhase | 'none', { readonly mark: string; readonly className: string }>> = {
  none: { mark: '○', className: 'border-slate-500 bg-slate-100 text-slate-800 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-100' },
  Pending: { mark: '○', className: 'border-slate-500 bg-slate-100 text-slate-800 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-100' },
  Running: { mark: '▶', className: 'border-sky-700 bg-sky-50 text-sky-900 dark:border-sky-400 dark:bg-sky-950 dark:text-sky-100' },
  AwaitingApproval: { mark: '‖', className: 'border-amber-700 bg-amber-50 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100' },
  Succeeded: { mark: '✓', className: 'border-emerald-700 bg-emerald-50 text-emerald-900 dark:border-emerald-400 dark:bg-emerald-950 dark:text-emerald-100' },
  Failed: { mark: '✕', className: 'border-red-700 bg-red-50 text-red-900 dark:border-red-400 dark:bg-red-950 dark:text-red-100' },
  Cancelled: { mark: '■', className: 'border-slate-500 bg-slate-100 text-slate-800 dark:border-slate-400 dark:bg-slate-800 dark:text-slate-100' },
  BudgetExhausted: { mark: '!', className: 'border-orange-700 bg-orange-50 text-orange-950 dark:border-orange-400 dark:bg-orange-950 dark:text-orange-100' },
  Rejected: { mark: '✕', className: 'border-rose-700 bg-rose-50 text-rose-900 dark:border-rose-400 dark:bg-rose-950 dark:text-rose-100' },
};

/** A run's phase as a badge: "✓ Succeeded", "⏸ Awaiting approval", "○ Not started". */
export function PhaseBadge({ phase }: { readonly phase: RunPhase | null }) {
  const look = LOOKS[phase ?? 'none'];
  return (
    <span className={`inline-flex items-center gap-1 rounded-full border px-2 py-0.5 text-sm font-medium whitespace-nowrap ${look.className}`}>
      <span aria-hidden="true">{look.mark}</span>
      {phaseLabel(phase)}
    </span>
  );
}
