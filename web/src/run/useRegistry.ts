// The namespace's registry for the run panel's A2A and MCP tabs (rules 12.49–12.51): read once,
// the first time one of those tabs is shown, with the person's own token (`GET …/registry`). It
// is the registry as it is now; the run used it as it was when the run started (5.55).

import { useEffect, useState } from 'react';
import type { Problem } from '../api/http.ts';
import { listRegistry, type RegistryItem } from '../api/registry.ts';
import { useSession } from '../app/session.tsx';

export type RegistryState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'loading' }
  | { readonly kind: 'ok'; readonly items: readonly RegistryItem[] }
  | { readonly kind: 'problem'; readonly problem: Problem };

/** The registry of `namespace`, read once `wanted` is first true. */
export function useRegistry(namespace: string, wanted: boolean): RegistryState {
  const { token, api, expire } = useSession();
  const [asked, setAsked] = useState(false);
  const [state, setState] = useState<RegistryState>({ kind: 'loading' });
  if (wanted && !asked) setAsked(true);

  useEffect(() => {
    if (!asked) return undefined;
    const abort = new AbortController();
    void listRegistry(token, namespace, { ...api, signal: abort.signal }).then((reply) => {
      if (abort.signal.aborted) return;
      if (reply.ok) setState({ kind: 'ok', items: reply.value });
      else if (reply.problem.status === 401) expire(reply.problem);
      else setState({ kind: 'problem', problem: reply.problem });
    });
    return () => {
      abort.abort();
    };
  }, [asked, token, namespace, api, expire]);

  return asked ? state : { kind: 'idle' };
}
