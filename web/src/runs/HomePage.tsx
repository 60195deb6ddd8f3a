// The first page after sign-in: the runs of the namespace this install serves or the one looked
// at last; otherwise the person names a namespace (the console cannot list namespaces: people
// rarely may, and the sidecar lists nothing with its own rights).

import { useEffect, useId, useState } from 'react';
import { navigate, redirect, runsRoute } from '../app/route.ts';
import { isNamespaceName, useSession } from '../app/session.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { card, input, primaryButton } from '../ui/classes.ts';

export function HomePage() {
  const { namespace, setNamespace } = useSession();
  useEffect(() => {
    // In place of this page, so Back from the runs page leaves the console instead of coming here
    // and being sent on again.
    if (namespace !== '') redirect(runsRoute(namespace));
  }, [namespace]);
  if (namespace !== '') return null;
  return (
    <section className="flex max-w-xl flex-col gap-4">
      <PageHeading>Choose a namespace</PageHeading>
      <NamespaceForm
        onChosen={(ns) => {
          setNamespace(ns);
          navigate(runsRoute(ns));
        }}
      />
    </section>
  );
}

/** Names a namespace to look at; refuses what cannot be one, saying why. */
export function NamespaceForm({ onChosen, initial = '' }: { readonly onChosen: (namespace: string) => void; readonly initial?: string }) {
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const ids = useId();
  return (
    <form
      className={`${card} flex flex-col gap-3`}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        const ns = text.trim();
        if (!isNamespaceName(ns)) {
          setError(ns === '' ? 'Type a namespace first.' : `"${ns}" is not a namespace name: lowercase letters, digits and "-", at most 63, starting and ending with a letter or digit.`);
          return;
        }
        setError(null);
        onChosen(ns);
      }}
    >
      <label htmlFor={`${ids}-ns`} className="font-medium">
        Namespace
      </label>
      <div className="flex gap-2">
        <input
          id={`${ids}-ns`}
          className={`${input} flex-1 font-mono`}
          value={text}
          autoComplete="off"
          spellCheck={false}
          aria-invalid={error !== null}
          aria-describedby={error === null ? `${ids}-hint` : `${ids}-hint ${ids}-error`}
          onChange={(event) => {
            setText(event.target.value);
          }}
        />
        <button type="submit" className={primaryButton}>
          Show runs
        </button>
      </div>
      <p id={`${ids}-hint`} className="text-sm text-slate-700 dark:text-slate-300">
        The namespace whose runs you own or approve, e.g. <code className="font-mono">team-a</code>. It is remembered in this browser.
      </p>
      {error === null ? null : (
        <p id={`${ids}-error`} role="alert" className="text-red-800 dark:text-red-200">
          {error}
        </p>
      )}
    </form>
  );
}
