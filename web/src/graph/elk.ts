// ELK in a Web Worker (console.md §3 and §5): the API half here, the layout engine in its own
// file the browser loads as a module worker from this origin (`worker-src 'self'`; never a
// blob: URL). One worker serves the page's layouts; it is made on the first layout, which is
// when the canvas (a lazily loaded chunk) first needs one.

import ELK from 'elkjs/lib/elk-api.js';
import ElkWorker from 'elkjs/lib/elk-worker.min.js?worker';
import { layoutGraph, type Direction, type Layout, type Layouter } from './layout.ts';
import type { GraphSpec } from './spec.ts';

let instance: Layouter | null = null;

function elk(): Layouter {
  instance ??= new ELK({ workerFactory: () => new ElkWorker() });
  return instance;
}

/** Lays a graph out off the page's thread. */
export function layoutInWorker(graph: GraphSpec, direction: Direction = 'RIGHT'): Promise<Layout> {
  return layoutGraph(elk(), graph, direction);
}
