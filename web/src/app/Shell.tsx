// The frame of every signed-in page: a skip link, the navigation (with the count of approvals
// waiting for the person), who is signed in, the theme, sign out; then the page.

import { useEffect, type ReactNode } from 'react';
import { button, focusRing, input, link, muted } from '../ui/classes.ts';
import { href, type Route } from './route.ts';
import type { ThemeChoice } from './theme.ts';

interface Props {
  readonly route: Route;
  readonly username: string;
  readonly namespace: string;
  /** Approvals waiting for this person's decision, or null while not known. */
  readonly waiting: number | null;
  readonly theme: ThemeChoice;
  readonly onTheme: (choice: ThemeChoice) => void;
  readonly onSignOut: () => void;
  readonly children: ReactNode;
}

type Section = 'compose' | 'runs' | 'approvals' | 'history' | 'compare';

function sectionOf(route: Route): Section | null {
  switch (route.page) {
    case 'home':
    case 'runs':
    case 'run':
    case 'replay':
      return 'runs';
    case 'approvals':
      return 'approvals';
    case 'history':
      return 'history';
    case 'compare':
      return 'compare';
    case 'compose':
      return 'compose';
    case 'me':
    case 'not-found':
      return null;
  }
}

/** The tab title: the count of approvals waiting first, so it shows in a crowded tab bar. */
export function documentTitle(waiting: number | null): string {
  return waiting !== null && waiting > 0 ? `(${waiting}) Orrery Studio` : 'Orrery Studio';
}

export function Shell({ route, username, namespace, waiting, theme, onTheme, onSignOut, children }: Props) {
  const current = sectionOf(route);
  useEffect(() => {
    document.title = documentTitle(waiting);
    // Signed out (or expired), the sign-in page's tab no longer counts anyone's approvals.
    return () => {
      document.title = documentTitle(0);
    };
  }, [waiting]);
  const items: { readonly section: Section; readonly label: string; readonly to: string }[] = [
    { section: 'compose', label: 'Compose', to: '#/compose' },
    { section: 'runs', label: 'Runs', to: namespace === '' ? '#/' : href({ page: 'runs', namespace, query: new URLSearchParams() }) },
    { section: 'approvals', label: 'Approvals', to: '#/approvals' },
    { section: 'history', label: 'History', to: '#/history' },
    { section: 'compare', label: 'Compare', to: '#/compare' },
  ];
  return (
    <div className="flex min-h-screen flex-col">
      <a href="#main" className={`sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2 focus:text-slate-900 ${focusRing}`}
        onClick={(event) => {
          event.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="border-b border-slate-300 bg-white dark:border-slate-700 dark:bg-slate-900">
        <div className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-6 gap-y-2 px-4 py-2">
          <p className="text-lg font-semibold tracking-tight">Orrery Studio</p>
          <nav aria-label="Console">
            <ul className="flex gap-1">
              {items.map((item) => (
                <li key={item.section}>
                  <a
                    href={item.to}
                    aria-current={current === item.section ? 'page' : undefined}
                    className={`inline-flex items-center gap-1.5 rounded-md px-3 py-1.5 font-medium hover:bg-slate-100 aria-[current=page]:bg-sky-100 aria-[current=page]:text-sky-950 dark:hover:bg-slate-800 dark:aria-[current=page]:bg-sky-900 dark:aria-[current=page]:text-sky-50 ${focusRing}`}
                  >
                    {item.label}
                    {item.section === 'approvals' && waiting !== null && waiting > 0 ? (
                      <span className="rounded-full bg-amber-700 px-2 text-sm text-white dark:bg-amber-300 dark:text-slate-950">
                        {waiting}
                        <span className="sr-only"> waiting for you</span>
                      </span>
                    ) : null}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <div className="ml-auto flex items-center gap-3">
            <p className={muted}>
              Signed in as{' '}
              <a href="#/me" className={`font-mono ${link}`} aria-current={route.page === 'me' ? 'page' : undefined}>
                {username}
              </a>
            </p>
            <label className="flex items-center gap-2">
              <span className={muted}>Theme</span>
              <select
                className={input}
                value={theme}
                onChange={(event) => {
                  const value = event.target.value;
                  onTheme(value === 'light' || value === 'dark' ? value : 'system');
                }}
              >
                <option value="system">System</option>
                <option value="light">Light</option>
                <option value="dark">Dark</option>
              </select>
            </label>
            <button type="button" className={button} onClick={onSignOut}>
              Sign out
            </button>
          </div>
        </div>
      </header>
      <main id="main" tabIndex={-1} className={`mx-auto w-full flex-1 px-4 outline-none ${route.page === 'compose' ? 'max-w-none py-3' : 'max-w-7xl py-6'}`}>
        {children}
      </main>
    </div>
  );
}
