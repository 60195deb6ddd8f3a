// Which page the fragment names. Every page gets its own heading (h1), which takes the focus
// when the page changes, so a screen reader announces where the person is.

import { lazy, Suspense } from 'react';
import type { Waiting } from '../approvals/waiting.ts';
import { ApprovalsPage } from '../approvals/ApprovalsPage.tsx';
import { ComparePage } from '../history/ComparePage.tsx';
import { HistoryPage } from '../history/HistoryPage.tsx';
import { SpecGraph } from '../graph/SpecGraph.tsx';
import { ReplayPage } from '../history/ReplayPage.tsx';
import { RunPage } from '../run/RunPage.tsx';
import { HomePage } from '../runs/HomePage.tsx';
import { RunsPage } from '../runs/RunsPage.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { MePage } from '../signin/MePage.tsx';
import { link } from '../ui/classes.ts';
import type { Route } from './route.ts';

// The canvas, its templates and its YAML come with the Compose page, never with the first load.
const ComposePage = lazy(() => import('../compose/ComposePage.tsx'));

export function Routes({ route, waiting }: { readonly route: Route; readonly waiting: Waiting }) {
  switch (route.page) {
    case 'home':
      return <HomePage />;
    case 'runs':
      return <RunsPage key={route.namespace} namespace={route.namespace} query={route.query} waiting={waiting} />;
    case 'run':
      return <RunPage key={`${route.namespace}/${route.name}`} namespace={route.namespace} name={route.name} waiting={waiting} />;
    case 'replay':
      return (
        <ReplayPage
          key={`${route.namespace}/${route.name}`}
          namespace={route.namespace}
          name={route.name}
          renderGraph={({ model, version, spec }) => <SpecGraph spec={spec} title={route.name} model={model} version={version} />}
        />
      );
    case 'approvals':
      return <ApprovalsPage waiting={waiting} />;
    case 'me':
      return <MePage />;
    case 'history':
      return <HistoryPage />;
    case 'compose':
      return (
        <Suspense
          fallback={
            <p role="status" className="p-4">
              Loading Compose…
            </p>
          }
        >
          <ComposePage />
        </Suspense>
      );
    case 'compare':
      return <ComparePage a={route.a} b={route.b} />;
    case 'not-found':
      return (
        <section className="flex flex-col gap-3">
          <PageHeading>No such page</PageHeading>
          <p>
            The console has no page at <code className="font-mono">{route.hash}</code>.{' '}
            <a className={link} href="#/">
              Go to your runs
            </a>
            .
          </p>
        </section>
      );
  }
}
