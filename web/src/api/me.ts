// `GET /api/v1/me`: who the cluster says the holder of a token is (docs/sidecar-api.md, "The
// rest of /api/v1"). The sign-in form calls it with the token a person pasted.

import { apiPath, authorized, globalFetch, isRecord, isStringArray, networkProblem, problemOf, type ApiOptions, type Problem } from './http.ts';

/** The caller, as `/api/v1/me` names them. */
export interface Me {
  readonly username: string;
  readonly groups: readonly string[];
  /** False for a service account, which cannot decide approvals (the sidecar answers 403). */
  readonly person: boolean;
  /** The one namespace a single-namespace install serves, else empty (the person types one). */
  readonly namespaces: readonly string[];
}

export type MeResult = { readonly ok: true; readonly me: Me } | { readonly ok: false; readonly problem: Problem };

/** A `/api/v1/me` body, or null when it is not one. */
export function parseMe(body: unknown): Me | null {
  if (!isRecord(body)) return null;
  const { username, groups, person, namespaces } = body;
  if (typeof username !== 'string' || username === '') return null;
  if (!isStringArray(groups) || typeof person !== 'boolean' || !isStringArray(namespaces)) return null;
  return { username, groups, person, namespaces };
}

/** Asks the sidecar who `token` is. Never throws: every failure is a `Problem`. */
export async function fetchMe(token: string, options: ApiOptions = {}): Promise<MeResult> {
  const call = options.fetch ?? globalFetch();
  let response: Response;
  try {
    response = await call(`${options.base ?? ''}${apiPath('me')}`, {
      method: 'GET',
      headers: authorized(token, { Accept: 'application/json' }),
      credentials: 'omit',
      cache: 'no-store',
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    return { ok: false, problem: networkProblem(error) };
  }
  if (!response.ok) return { ok: false, problem: await problemOf(response) };
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const me = parseMe(body);
  if (me === null) {
    return {
      ok: false,
      problem: {
        status: response.status,
        code: 'reply',
        message: 'the sidecar answered /api/v1/me with something that is not who you are (is this an Orrery sidecar?)',
        loc: [],
        retryAfterSeconds: null,
      },
    };
  }
  return { ok: true, me };
}
