// Validation while editing (rules 12.26–12.28): the spec on the canvas goes to
// `POST /api/v1/namespaces/{ns}/validate`, the one validator, against the namespace's
// RegistryEntries and the deployment's limits (no client-side copy of its rules, no WASM: the
// console's CSP has no 'wasm-unsafe-eval'). Debounced 300 ms after the last edit; a reply to an
// older spec than the newest one sent is dropped.

import { useEffect, useRef, useState } from 'react';
import { apiPath, callApi, shapeProblem, type ApiOptions, type Problem } from '../api/http.ts';
import type { Result } from '../api/runs.ts';
import { verdictOf, type Verdict } from '../canvas/findings.ts';

/** `POST …/validate`: the verdict (200 whatever it is); a 422 when the body is not a spec at all. */
export async function validateSpec(token: string, namespace: string, spec: unknown, options: ApiOptions = {}): Promise<Result<Verdict>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'validate'), { method: 'POST', body: { spec } }, options);
  if (!reply.ok) return reply;
  const verdict = verdictOf(reply.body);
  return verdict === null ? { ok: false, problem: shapeProblem(reply.status, 'a validation verdict') } : { ok: true, value: verdict };
}

/** The debounce before a spec is sent. */
export const VALIDATE_DELAY_MS = 300;

export type ValidationState =
  | { readonly state: 'idle' }
  | { readonly state: 'checking'; readonly last: Verdict | null }
  | { readonly state: 'done'; readonly verdict: Verdict }
  | { readonly state: 'failed'; readonly problem: Problem; readonly last: Verdict | null };

/** The verdict the state holds, current or the last one while a newer spec is checked. */
export function lastVerdict(state: ValidationState): Verdict | null {
  switch (state.state) {
    case 'idle':
      return null;
    case 'done':
      return state.verdict;
    default:
      return state.last;
  }
}

/**
 * Keeps `spec` validated: each change is sent 300 ms after the last one; only the newest spec's
 * reply is kept. `spec` is a new object exactly when the spec changed (memoize it); `namespace`
 * '' sends nothing; a 401 goes to `expire` (back to sign-in).
 */
export function useValidation(token: string, namespace: string, spec: unknown, api: ApiOptions, expire: (problem: Problem) => void): ValidationState {
  const [state, setState] = useState<ValidationState>({ state: 'idle' });
  const sent = useRef(0);
  useEffect(() => {
    if (namespace === '') return undefined;
    const ticket = ++sent.current;
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      setState((s) => ({ state: 'checking', last: lastVerdict(s) }));
      void validateSpec(token, namespace, spec, { ...api, signal: controller.signal }).then((result) => {
        if (ticket !== sent.current) return;
        if (result.ok) setState({ state: 'done', verdict: result.value });
        else if (result.problem.status === 401) expire(result.problem);
        else if (result.problem.code !== 'aborted') setState((s) => ({ state: 'failed', problem: result.problem, last: lastVerdict(s) }));
      });
    }, VALIDATE_DELAY_MS);
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [token, namespace, spec, api, expire]);
  return state;
}
