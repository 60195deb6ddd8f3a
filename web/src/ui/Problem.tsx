import type { Problem } from '../api/http.ts';

interface Props {
  /** What was being done, e.g. "Listing runs". */
  readonly doing: string;
  readonly problem: Problem;
}

/** A failed call, in the sidecar's words (its message says what to do), announced to screen readers. */
export function ProblemAlert({ doing, problem }: Props) {
  return (
    <div role="alert" className="rounded-md border border-red-700 bg-red-50 p-3 text-red-950 dark:border-red-400 dark:bg-red-950 dark:text-red-100">
      <strong>{problemTitle(doing, problem)}</strong> {problem.message}
      {problem.retryAfterSeconds === null ? null : ` Try again in ${problem.retryAfterSeconds} s.`}
    </div>
  );
}

/** "Listing runs failed (404):", or "…: no answer" when nothing came back. */
export function problemTitle(doing: string, problem: Problem): string {
  return problem.status === 0 ? `${doing} failed, no answer:` : `${doing} failed (${problem.status}):`;
}
