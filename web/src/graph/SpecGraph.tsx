// The run graph for a page that has a spec and a model but no panel of its own (replay): the
// spec read as the panel reads it, the graph loaded lazily (React Flow and ELK stay out of the
// first load), Enter on a node selects it.

import { lazy, Suspense, useMemo, useState } from 'react';
import type { RunModel } from '../run/model.ts';
import { muted } from '../ui/classes.ts';
import { parseSpec } from './spec.ts';

const RunGraph = lazy(() => import('./RunGraph.tsx'));

interface Props {
  readonly spec: unknown;
  readonly title: string;
  readonly model: RunModel;
  readonly version: number;
}

export function SpecGraph({ spec, title, model, version }: Props) {
  const graph = useMemo(() => parseSpec(spec), [spec]);
  const run = useMemo(() => ({ model, version }), [model, version]);
  const [selected, setSelected] = useState<string | null>(null);
  if (graph === null) return <p className={muted}>The spec this run ran has no list of nodes, so there is no graph to draw.</p>;
  return (
    <Suspense fallback={<p className={muted}>Loading the graph…</p>}>
      <RunGraph graph={graph} title={title} run={run} selected={selected} onSelect={setSelected} />
    </Suspense>
  );
}
