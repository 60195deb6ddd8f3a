// What every call to the sidecar's API shares (docs/sidecar-api.md, "Every reply"): the
// caller's bearer token as `Authorization`, never in a URL; errors as
// `{"loc": [...], "code": "...", "message": "..."}`, 429 and 503 with `Retry-After`.

/** The `fetch` the API functions call: the browser's, or a test's fake. */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/** Where and how to call the API. */
export interface ApiOptions {
  /** The sidecar's origin, empty for the page's own (the sidecar serves the console). */
  readonly base?: string;
  /** Defaults to the global `fetch`. */
  readonly fetch?: Fetch;
  readonly signal?: AbortSignal;
}

/** A reply that was not what was asked for, in the sidecar's own words when it gave them. */
export interface Problem {
  /** The HTTP status, or 0 when no reply came (the network, an abort). */
  readonly status: number;
  /** The sidecar's stable `code` (`unauthenticated`, `forbidden`…), or `network`, `reply`. */
  readonly code: string;
  /** What is wrong and what to do. */
  readonly message: string;
  /** Where in the request (`["query"]`, `["header", "Last-Event-ID"]`), or empty. */
  readonly loc: readonly (string | number)[];
  /** `Retry-After` in seconds, on 429 and 503. */
  readonly retryAfterSeconds: number | null;
  /** A 422's validation findings (`errors`), as sent: read them with `findingsOf` (runs.ts). */
  readonly errors?: readonly unknown[];
  /** The reply's other members, when it has any (a save's 409 carries `current`, `conflicts` or `merged`). */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** The members every problem reply has, read into `Problem`'s own fields. */
const PROBLEM_MEMBERS = new Set(['loc', 'code', 'message', 'errors']);

export function globalFetch(): Fetch {
  return (input, init) => fetch(input, init);
}

/** The request headers of an API call made as the holder of `token`. */
export function authorized(token: string, extra: Record<string, string> = {}): Headers {
  const headers = new Headers(extra);
  headers.set('Authorization', `Bearer ${token}`);
  return headers;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function retryAfter(response: Response): number | null {
  const value = response.headers.get('Retry-After');
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  return Number(value.trim());
}

/** The problem a non-2xx reply describes; its body when it is the sidecar's error JSON. */
export async function problemOf(response: Response): Promise<Problem> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: a proxy's page, an empty body
  }
  const fallback = `the sidecar answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  const record = isRecord(body) ? body : {};
  const code = record['code'];
  const message = record['message'];
  const loc = record['loc'];
  return {
    status: response.status,
    code: typeof code === 'string' ? code : 'reply',
    message: typeof message === 'string' && message !== '' ? message : fallback,
    loc: Array.isArray(loc) ? loc.filter((l): l is string | number => typeof l === 'string' || typeof l === 'number') : [],
    retryAfterSeconds: retryAfter(response),
    ...(Array.isArray(record['errors']) ? { errors: record['errors'] as unknown[] } : {}),
    ...(Object.keys(record).some((k) => !PROBLEM_MEMBERS.has(k)) ? { details: Object.fromEntries(Object.entries(record).filter(([k]) => !PROBLEM_MEMBERS.has(k))) } : {}),
  };
}

/** The problem of a call that got no reply at all. */
export function networkProblem(error: unknown): Problem {
  const detail = error instanceof Error ? error.message : String(error);
  return {
    status: 0,
    code: 'network',
    message: `the sidecar could not be reached (${detail}): check your connection (or your port-forward to the sidecar) and try again`,
    loc: [],
    retryAfterSeconds: null,
  };
}

/** `/api/v1/…` path segments, each percent-encoded. */
export function apiPath(...segments: string[]): string {
  return `/api/v1/${segments.map((s) => encodeURIComponent(s)).join('/')}`;
}

/** A call's outcome: the reply's status and JSON body, or what went wrong. */
export type CallResult =
  | { readonly ok: true; readonly status: number; readonly body: unknown }
  | { readonly ok: false; readonly problem: Problem };

/** What one API call sends besides the token. */
export interface CallRequest {
  readonly method?: 'GET' | 'POST' | 'PUT';
  /** Query parameters; empty strings and `undefined` are left out. */
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  /** Sent as JSON. */
  readonly body?: unknown;
}

/** The query string of `query` (with its `?`), or empty. */
export function queryString(query: Readonly<Record<string, string | number | undefined>> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === '') continue;
    params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/**
 * Calls `path` (an `apiPath`) as the holder of `token`; never throws: a non-2xx reply, no reply
 * and an abort are each a `Problem` (an abort has code `aborted`).
 */
export async function callApi(token: string, path: string, request: CallRequest = {}, options: ApiOptions = {}): Promise<CallResult> {
  const call = options.fetch ?? globalFetch();
  const headers = authorized(token, { Accept: 'application/json' });
  if (request.body !== undefined) headers.set('Content-Type', 'application/json');
  let response: Response;
  try {
    response = await call(`${options.base ?? ''}${path}${queryString(request.query)}`, {
      method: request.method ?? 'GET',
      headers,
      credentials: 'omit',
      cache: 'no-store',
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if (options.signal?.aborted === true) {
      return { ok: false, problem: { status: 0, code: 'aborted', message: 'the call was cancelled', loc: [], retryAfterSeconds: null } };
    }
    return { ok: false, problem: networkProblem(error) };
  }
  if (!response.ok) return { ok: false, problem: await problemOf(response) };
  let body: unknown = null;
  if (response.status !== 204) {
    try {
      body = await response.json();
    } catch {
      return {
        ok: false,
        problem: { status: response.status, code: 'reply', message: `the sidecar answered ${path} with something that is not JSON`, loc: [], retryAfterSeconds: null },
      };
    }
  }
  return { ok: true, status: response.status, body };
}

/** The problem of a reply whose body is not the shape the API documents. */
export function shapeProblem(status: number, what: string): Problem {
  return { status, code: 'reply', message: `the sidecar answered with something that is not ${what} (is this an Orrery sidecar of this version?)`, loc: [], retryAfterSeconds: null };
}
