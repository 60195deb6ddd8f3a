// Validation while editing (rules 12.26–12.28): the spec on the canvas goes to
// `POST /api/v1/namespaces/{ns}/validate`, the one validator, against the namespace's
// RegistryEntries and the deployment's limits (no client-side copy of its rules, no WASM: the
// console's CSP has no 'wasm-unsafe-eval'). Debounced 300 ms after the last edit; a reply to an
// older spec than the newest one sent is dropped.

import { useEffect, useRef, useState } from 'react';
import { apiPath, callApi, shapeProblem, type ApiOptions, type Problem } from '../api/http.ts';
import type { Result } from '../api/runs.ts';
import { findingOfProblem, verdictOf, type Verdict } from '../canvas/findings.ts';

/** `POST …/validate`: the verdict (200 whatever it is); a 422 when the body is not a spec at all. */
export async function validateSpec(token: string, namespace: string, spec: unknown, options: ApiOptions = {}): Promise<Result<Verdict>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'validate'), { method: 'POST', body: { spec } }, options);
  if (!reply.ok) return reply;
  const verdict = verdictOf(reply.body);
  return verdict === null ? { ok: false, problem: shapeProblem(reply.status, 'a validation verdict') } : { ok: true, value: verdict };
}

/** The debounce before a spec is sent. */
export const VALIDATE_DELAY_MS = 300;

export type ValidationState<T> =
  | { readonly state: 'idle' }
  | { readonly state: 'checking'; readonly last: Checked<T> | null }
  | { readonly state: 'done'; readonly checked: Checked<T> }
  | { readonly state: 'failed'; readonly problem: Problem; readonly last: Checked<T> | null };

/** A verdict and what it was given for. */
export interface Checked<T> {
  readonly subject: T;
  readonly verdict: Verdict;
}

/** The verdict the state holds, current or the last one while a newer spec is checked. */
export function lastVerdict<T>(state: ValidationState<T>): Checked<T> | null {
  switch (state.state) {
    case 'idle':
      return null;
    case 'done':
      return state.checked;
    default:
      return state.last;
  }
}

/**
 * Keeps `subject` validated (its spec is `specOf(subject)`): each change is sent 300 ms after the
 * last one; only the newest one's reply is kept. `subject` is a new object exactly when the
 * spec may have changed; `namespace` '' sends nothing; a 401 goes to `expire` (back to sign-in).
 */
export function useValidation<T>(token: string, namespace: string, subject: T, specOf: (subject: T) => unknown, api: ApiOptions, expire: (problem: Problem) => void): ValidationState<T> {
  const [state, setState] = useState<ValidationState<T>>({ state: 'idle' });
  const sent = useRef(0);
  useEffect(() => {
    if (namespace === '') return undefined;
    const ticket = ++sent.current;
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      setState((s) => ({ state: 'checking', last: lastVerdict(s) }));
      void validateSpec(token, namespace, specOf(subject), { ...api, signal: controller.signal }).then((result) => {
        if (ticket !== sent.current) return;
        if (result.ok) setState({ state: 'done', checked: { subject, verdict: result.value } });
        // Not a spec at all (a field missing, of the wrong type): a finding at its field too.
        else if (result.problem.status === 422) setState({ state: 'done', checked: { subject, verdict: { valid: false, errors: [findingOfProblem(result.problem)], warnings: [] } } });
        else if (result.problem.status === 401) expire(result.problem);
        else if (result.problem.code !== 'aborted') setState((s) => ({ state: 'failed', problem: result.problem, last: lastVerdict(s) }));
      });
    }, VALIDATE_DELAY_MS);
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [token, namespace, subject, specOf, api, expire]);
  return state;
}
