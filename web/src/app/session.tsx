// Who is signed in, for every page: the token (memory only), who `/api/v1/me` said it is, and
// the namespace being looked at. Pages read it with `useSession()`; the token never leaves this
// context except as the `Authorization` header of a call to the sidecar.

import { createContext, useContext } from 'react';
import type { ApiOptions, Problem } from '../api/http.ts';
import type { Me } from '../api/me.ts';

export interface Session {
  readonly token: string;
  readonly me: Me;
  /** How pages call the API (tests give a fake `fetch`). */
  readonly api: ApiOptions;
  /** The namespace last looked at (remembered across visits; never the token). */
  readonly namespace: string;
  readonly setNamespace: (namespace: string) => void;
  /** Forgets the token: back to sign-in. */
  readonly signOut: () => void;
  /** The token was refused mid-session (401): back to sign-in, saying why ({@link tokenRefused}). */
  readonly expire: (problem: Pick<Problem, 'message'>) => void;
}

/** What sign-in says when the token was refused mid-session (401): the sidecar's reason. */
export function tokenRefused(problem: Pick<Problem, 'message'>): string {
  return `Your token is no longer accepted (401): ${problem.message}`;
}

export const SessionContext = createContext<Session | null>(null);

/** The signed-in session; only pages rendered after sign-in call this. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === null) throw new Error('useSession() outside a signed-in page');
  return session;
}

const NAMESPACE_KEY = 'orrery.console.namespace';

/** The namespace remembered from the last visit, if any. */
export function rememberedNamespace(): string {
  try {
    return window.localStorage.getItem(NAMESPACE_KEY) ?? '';
  } catch {
    return '';
  }
}

export function rememberNamespace(namespace: string): void {
  try {
    window.localStorage.setItem(NAMESPACE_KEY, namespace);
  } catch {
    // storage refused (a private window): the namespace is simply not remembered
  }
}

/** A Kubernetes namespace name (RFC 1123 label). */
export function isNamespaceName(text: string): boolean {
  return /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(text);
}
