import { useEffect, useId, useRef } from 'react';
import type { Me } from '../api/me.ts';

interface Props {
  readonly me: Me;
  readonly onSignOut: () => void;
}

/** Who the cluster says you are, as `/api/v1/me` answered. */
export function Identity({ me, onSignOut }: Props) {
  const heading = useRef<HTMLHeadingElement>(null);
  const ids = useId();

  // Signing in replaced the form: move focus to what replaced it.
  useEffect(() => {
    heading.current?.focus();
  }, []);

  return (
    <section
      aria-labelledby={`${ids}-title`}
      className="flex flex-col gap-4 rounded-lg border border-slate-300 bg-white p-6 shadow-sm dark:border-slate-700 dark:bg-slate-900"
    >
      <h1 id={`${ids}-title`} ref={heading} tabIndex={-1} className="text-xl font-semibold focus-visible:outline-3 focus-visible:outline-sky-600 dark:focus-visible:outline-sky-400">
        Signed in as <span className="font-mono">{me.username}</span>
      </h1>
      <dl className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1">
        <dt className="font-medium">Kind</dt>
        <dd>{me.person ? 'a person' : 'a service account'}</dd>
        <dt className="font-medium">Groups</dt>
        <dd>{me.groups.length > 0 ? me.groups.join(', ') : 'none'}</dd>
        <dt className="font-medium">Namespaces</dt>
        <dd>{me.namespaces.length > 0 ? `this install serves ${me.namespaces.join(', ')}` : 'this install serves every namespace'}</dd>
      </dl>
      {me.person ? null : (
        <p role="note" className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100">
          <strong>A service account cannot decide approvals.</strong> It can follow the runs it may read, but the sidecar refuses its decisions
          (403). To approve or reject, sign in with your own token as a person.
        </p>
      )}
      <div>
        <button
          type="button"
          onClick={onSignOut}
          className="rounded-md border border-slate-400 px-4 py-2 font-medium hover:bg-slate-100 focus-visible:outline-3 focus-visible:outline-offset-2 focus-visible:outline-sky-600 dark:border-slate-500 dark:hover:bg-slate-800 dark:focus-visible:outline-sky-400"
        >
          Sign out
        </button>
      </div>
    </section>
  );
}
