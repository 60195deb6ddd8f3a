// The runs page (`#/runs/{ns}?phase=&role=&composition=`): the caller's runs in a namespace,
// owned or approved, newest first, with filters kept in the address; start a run; cancel one;
// change the namespace.

import { useEffect, useId, useRef, useState } from 'react';
import type { Waiting } from '../approvals/waiting.ts';
import { navigate, runsRoute } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { button, link, primaryButton } from '../ui/classes.ts';
import { listCompositionChoices, type CompositionChoice } from './compositions.ts';
import { FilterBar, filteredRoute } from './FilterBar.tsx';
import { queryToFilters } from './filters.ts';
import { NamespaceForm } from './HomePage.tsx';
import { RunList } from './RunList.tsx';
import { StartRunForm } from './StartRunForm.tsx';

interface Props {
  readonly namespace: string;
  readonly query: URLSearchParams;
  readonly waiting: Waiting;
}

export function RunsPage({ namespace, query, waiting }: Props) {
  const { token, api, setNamespace } = useSession();
  const filters = queryToFilters(query);
  const ids = useId();
  const [choosing, setChoosing] = useState(false);
  const [starting, setStarting] = useState(false);
  const [choices, setChoices] = useState<readonly CompositionChoice[]>([]);
  const startToggle = useRef<HTMLButtonElement>(null);
  const choosingToggle = useRef<HTMLButtonElement>(null);
  const chooser = useRef<HTMLDivElement>(null);

  useEffect(() => {
    // the current name is selected, so typing replaces it
    if (choosing) chooser.current?.querySelector('input')?.select();
  }, [choosing]);

  // The namespace's Compositions, as suggestions only (a Role that cannot list them loses nothing).
  useEffect(() => {
    const abort = new AbortController();
    void listCompositionChoices(token, namespace, { ...api, signal: abort.signal }).then((result) => {
      if (!abort.signal.aborted && result.ok) setChoices(result.value);
    });
    return () => {
      abort.abort();
    };
  }, [token, api, namespace]);

  const openStart = () => {
    setStarting(true);
  };
  const closeStart = () => {
    setStarting(false);
    startToggle.current?.focus();
  };
  const { count, refresh: refreshWaiting } = waiting;

  return (
    <section className="flex flex-col gap-4" aria-labelledby={`${ids}-title`}>
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2">
        <PageHeading id={`${ids}-title`}>
          Runs in <span className="font-mono">{namespace}</span>
        </PageHeading>
        <button
          ref={choosingToggle}
          type="button"
          className={`${button} py-1 text-sm`}
          aria-expanded={choosing}
          aria-controls={`${ids}-namespace`}
          onClick={() => {
            setChoosing((open) => !open);
          }}
        >
          Change namespace
        </button>
        <button
          ref={startToggle}
          type="button"
          className={`${primaryButton} ml-auto`}
          aria-expanded={starting}
          aria-controls={`${ids}-start`}
          onClick={() => {
            if (starting) closeStart();
            else openStart();
          }}
        >
          Start a run
        </button>
      </div>

      <div ref={chooser} id={`${ids}-namespace`} hidden={!choosing} className="max-w-xl">
        {choosing ? (
          <NamespaceForm
            initial={namespace}
            onChosen={(ns) => {
              setChoosing(false);
              if (ns === namespace) {
                choosingToggle.current?.focus();
                return;
              }
              setNamespace(ns);
              navigate(runsRoute(ns));
            }}
          />
        ) : null}
      </div>

      <div id={`${ids}-start`} hidden={!starting}>
        <StartRunForm namespace={namespace} open={starting} choices={choices} onClose={closeStart} />
      </div>

      {count !== null && count > 0 ? (
        <p className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-50">
          {count === 1 ? '1 approval waits' : `${count} approvals wait`} for a decision in runs of yours.{' '}
          <a className={link} href="#/approvals">
            Go to approvals
          </a>
        </p>
      ) : null}

      <RunList
        namespace={namespace}
        filters={filters}
        toolbar={
          <FilterBar
            namespace={namespace}
            filters={filters}
            choices={choices}
            onChange={(next) => {
              navigate(filteredRoute(namespace, next));
            }}
          />
        }
        onStart={openStart}
        onChooseNamespace={() => {
          setChoosing(true);
        }}
        onCancelled={refreshWaiting}
      />
    </section>
  );
}
