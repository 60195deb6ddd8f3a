// The console's shell: sign in with your own cluster identity, see who you are. The token lives
// in this component's state only (memory): never in storage, a URL or a log; reloading or
// closing the page forgets it. Runs, the live run panel and approvals come in later work
// (issue 23).
import { useState } from 'react';
import type { Me } from './api/me.ts';
import { Identity } from './signin/Identity.tsx';
import { SignInForm } from './signin/SignInForm.tsx';

interface Session {
  readonly token: string;
  readonly me: Me;
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  return (
    <div className="mx-auto flex max-w-2xl flex-col gap-6 px-4 py-8">
      <header className="flex items-baseline justify-between gap-4 border-b border-slate-300 pb-3 dark:border-slate-700">
        <h1 className="text-2xl font-semibold tracking-tight">Orrery Studio</h1>
        <p className="text-sm text-slate-600 dark:text-slate-400">console</p>
      </header>
      <main>
        {session === null ? (
          <SignInForm
            onSignedIn={(token, me) => {
              setSession({ token, me });
            }}
          />
        ) : (
          <Identity
            me={session.me}
            onSignOut={() => {
              setSession(null);
            }}
          />
        )}
      </main>
      <footer className="text-sm text-slate-600 dark:text-slate-400">
        This console is being built: signing in works; runs, live runs and approvals are not here yet.
      </footer>
    </div>
  );
}
