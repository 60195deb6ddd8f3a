// The console's pages live in the URL's fragment (`#/runs/team-a/notes-1`): the sidecar serves
// index.html for page paths only when their last segment has no dot, and run names may have
// dots, so the path stays `/` and the fragment names the page. Nothing secret ever enters it.

import { useEffect, useState } from 'react';
import { isNamespaceName } from './session.tsx';

export type Route =
  | { readonly page: 'home' }
  | { readonly page: 'runs'; readonly namespace: string; readonly query: URLSearchParams }
  | { readonly page: 'run'; readonly namespace: string; readonly name: string }
  | { readonly page: 'replay'; readonly namespace: string; readonly name: string }
  | { readonly page: 'approvals' }
  | { readonly page: 'me' }
  | { readonly page: 'history' }
  | { readonly page: 'compose' }
  | { readonly page: 'compare'; readonly a: RunKey | null; readonly b: RunKey | null }
  | { readonly page: 'not-found'; readonly hash: string };

/** A run by namespace and name. */
export interface RunKey {
  readonly namespace: string;
  readonly name: string;
}

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** `ns/name` as compare's query carries it. */
export function parseRunKey(text: string | null): RunKey | null {
  if (text === null) return null;
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) return null;
  return { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}

export function formatRunKey(key: RunKey): string {
  return `${key.namespace}/${key.name}`;
}

/** The page a fragment names (`#/…`, or empty for the home page). */
export function parseRoute(hash: string): Route {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  const [path = '', search = ''] = raw.split('?', 2);
  const query = new URLSearchParams(search);
  const parts = path.split('/').filter((p) => p !== '');
  const segments = parts.map(decode);
  if (segments.some((s) => s === null)) return { page: 'not-found', hash };
  const s = segments as string[];
  if (s.length === 0) return { page: 'home' };
  if (s[0] === 'runs' && s[1] !== undefined) {
    if (s.length === 2) return { page: 'runs', namespace: s[1], query };
    if (s.length === 3 && s[2] !== undefined) return { page: 'run', namespace: s[1], name: s[2] };
    if (s.length === 4 && s[2] !== undefined && s[3] === 'replay') return { page: 'replay', namespace: s[1], name: s[2] };
  }
  if (s.length === 1 && s[0] === 'approvals') return { page: 'approvals' };
  if (s.length === 1 && s[0] === 'me') return { page: 'me' };
  if (s.length === 1 && s[0] === 'history') return { page: 'history' };
  if (s.length === 1 && s[0] === 'compose') return { page: 'compose' };
  if (s.length === 1 && s[0] === 'compare') return { page: 'compare', a: parseRunKey(query.get('a')), b: parseRunKey(query.get('b')) };
  return { page: 'not-found', hash };
}

/**
 * The namespace a route looks at, when it names one as a valid namespace name (the runs of a
 * namespace, a run, its replay); '' otherwise. The session's namespace follows it.
 */
export function routeNamespace(route: Route): string {
  const namespace = route.page === 'runs' || route.page === 'run' || route.page === 'replay' ? route.namespace : '';
  return isNamespaceName(namespace) ? namespace : '';
}

/** The fragment of a page, with its `#`. */
export function href(route: Route): string {
  const e = encodeURIComponent;
  switch (route.page) {
    case 'home':
      return '#/';
    case 'runs': {
      const search = route.query.toString();
      return `#/runs/${e(route.namespace)}${search === '' ? '' : `?${search}`}`;
    }
    case 'run':
      return `#/runs/${e(route.namespace)}/${e(route.name)}`;
    case 'replay':
      return `#/runs/${e(route.namespace)}/${e(route.name)}/replay`;
    case 'approvals':
      return '#/approvals';
    case 'me':
      return '#/me';
    case 'history':
      return '#/history';
    case 'compose':
      return '#/compose';
    case 'compare': {
      const query = new URLSearchParams();
      if (route.a !== null) query.set('a', formatRunKey(route.a));
      if (route.b !== null) query.set('b', formatRunKey(route.b));
      const search = query.toString();
      return `#/compare${search === '' ? '' : `?${search}`}`;
    }
    case 'not-found':
      return route.hash;
  }
}

export function runsRoute(namespace: string, query: Record<string, string> = {}): Route {
  return { page: 'runs', namespace, query: new URLSearchParams(query) };
}

/** Goes to a page (a new history entry). */
export function navigate(route: Route): void {
  window.location.hash = href(route);
}

/** Goes to `route` in place of this page (no history entry: Back skips it), for redirects. */
export function redirect(route: Route): void {
  window.location.replace(href(route));
}

/** The page the address bar names, following back, forward and links. */
export function useRoute(): Route {
  const [hash, setHash] = useState(() => window.location.hash);
  useEffect(() => {
    const update = () => {
      setHash(window.location.hash);
    };
    window.addEventListener('hashchange', update);
    return () => {
      window.removeEventListener('hashchange', update);
    };
  }, []);
  return parseRoute(hash);
}
