// The console: sign in with your own cluster identity, then the pages (runs, a run's live panel
// and approvals, approvals waiting for you, history, replay, compare). The token lives in this
// component's state only (memory): never in storage, a URL or a log; reloading or closing the
// page forgets it.
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Problem } from './api/http.ts';
import type { Me } from './api/me.ts';
import { fetchSchema } from './api/schema.ts';
import { useWaitingApprovals } from './approvals/waiting.ts';
import { Routes } from './app/Routes.tsx';
import { SessionContext, rememberNamespace, rememberedNamespace, tokenRefused, type Session } from './app/session.tsx';
import { Shell } from './app/Shell.tsx';
import { routeNamespace, useRoute } from './app/route.ts';
import { forgetCanvas } from './compose/canvas-store.ts';
import { useTheme } from './app/theme.ts';
import { SignInForm } from './signin/SignInForm.tsx';
import { StudioUnavailable } from './signin/StudioUnavailable.tsx';

interface SignedIn {
  readonly token: string;
  readonly me: Me;
  /** The schema call's refusal (404/403): the Studio is not available (rule 12.4). */
  readonly unavailable: Problem | null;
}

export function App() {
  const [signedIn, setSignedIn] = useState<SignedIn | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [namespace, setNamespaceState] = useState(rememberedNamespace);
  const [theme, setTheme] = useTheme();
  const route = useRoute();

  const setNamespace = useCallback((ns: string) => {
    setNamespaceState(ns);
    rememberNamespace(ns);
  }, []);
  const signOut = useCallback(() => {
    // The canvas may hold someone's unsaved work: it goes with them (an expired token keeps it).
    forgetCanvas();
    setSignedIn(null);
    setNotice(null);
  }, []);
  // A page opened by its address (a run's link, a bookmark) looks at its namespace: the
  // session's namespace follows it, so History and Runs show that namespace next.
  const looked = routeNamespace(route);
  const [routedNamespace, setRoutedNamespace] = useState('');
  if (looked !== routedNamespace) {
    setRoutedNamespace(looked);
    if (looked !== '') setNamespaceState(looked);
  }
  useEffect(() => {
    if (routedNamespace !== '') rememberNamespace(routedNamespace);
  }, [routedNamespace]);
  const expire = useCallback((problem: Pick<Problem, 'message'>) => {
    setSignedIn(null);
    setNotice(tokenRefused(problem));
  }, []);

  const session = useMemo<Session | null>(
    () =>
      signedIn === null
        ? null
        : { token: signedIn.token, me: signedIn.me, api: {}, namespace: namespace === '' ? (signedIn.me.namespaces[0] ?? '') : namespace, setNamespace, signOut, expire },
    [signedIn, namespace, setNamespace, signOut, expire],
  );

  if (signedIn === null || session === null) {
    return (
      <div className="mx-auto flex max-w-2xl flex-col gap-6 px-4 py-8">
        <header className="flex items-baseline justify-between gap-4 border-b border-slate-300 pb-3 dark:border-slate-700">
          <h1 className="text-2xl font-semibold tracking-tight">Orrery Studio</h1>
          <p className="text-sm text-slate-600 dark:text-slate-400">console</p>
        </header>
        <main>
          <SignInForm
            notice={notice}
            onSignedIn={(token, me) => {
              void fetchSchema(token).then((schema) => {
                const unavailable = !schema.ok && (schema.problem.status === 404 || schema.problem.status === 403) ? schema.problem : null;
                setNotice(null);
                setSignedIn({ token, me, unavailable });
              });
            }}
          />
        </main>
      </div>
    );
  }

  return (
    <SessionContext value={session}>
      <SignedInShell route={route} session={session} unavailable={signedIn.unavailable} theme={theme} onTheme={setTheme} onSignOut={signOut} />
    </SessionContext>
  );
}

interface ShellProps {
  readonly route: ReturnType<typeof useRoute>;
  readonly session: Session;
  readonly unavailable: Problem | null;
  readonly theme: ReturnType<typeof useTheme>[0];
  readonly onTheme: ReturnType<typeof useTheme>[1];
  readonly onSignOut: () => void;
}

function SignedInShell({ route, session, unavailable, theme, onTheme, onSignOut }: ShellProps) {
  const waiting = useWaitingApprovals(unavailable === null);
  useEffect(() => {
    if (route.page === 'runs' && route.namespace !== session.namespace) session.setNamespace(route.namespace);
  }, [route, session]);
  return (
    <Shell route={route} username={session.me.username} namespace={session.namespace} waiting={waiting.count} theme={theme} onTheme={onTheme} onSignOut={onSignOut}>
      {unavailable !== null ? <StudioUnavailable problem={unavailable} /> : <Routes route={route} waiting={waiting} />}
    </Shell>
  );
}
