// A run's events into its model, for the panel: a live run's through the stream (`streamRunEvents`:
// resume, backoff, its stops), a finished run's as stored JSON pages (500 a call, no connection
// kept). The model takes each event at once; the page is drawn again at most once a frame. The
// stream closes, and a page read stops, when the view goes. When the spec arrives, the model is
// rebuilt with its nodes and edges and the events so far, so the graph shows every node and
// tells the edges taken from the spec's own.

import { useCallback, useEffect, useRef, useState } from 'react';
import { fetchEventPage } from '../api/event-pages.ts';
import { streamRunEvents, type StreamStatus } from '../api/events.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import type { Session } from '../app/session.tsx';
import type { GraphSpec } from '../graph/spec.ts';
import { browserFrames, frameBatcher, type FrameBatcher } from './frame.ts';
import { RunModel, type RunSnapshot } from './model.ts';

export type FeedMode = 'stream' | 'pages';

export type FeedState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'stream'; readonly status: StreamStatus }
  | { readonly kind: 'pages'; readonly reading: boolean; readonly complete: boolean; readonly problem: Problem | null };

export interface RunFeed {
  readonly run: RunSnapshot;
  readonly state: FeedState;
  /** Opens the stream again, after the last event held. */
  readonly reconnect: () => void;
}

interface Options {
  readonly namespace: string;
  readonly name: string;
  readonly token: string;
  readonly api: ApiOptions;
  /** How to read the events; null until the run is read. */
  readonly mode: FeedMode | null;
  /** The spec's graph, once read. */
  readonly spec: GraphSpec | null;
  /** A 401: back to sign-in. */
  readonly expire: Session['expire'];
}

/** A model with the spec's nodes and edges, holding the events of `from`. */
export function rebuiltModel(spec: GraphSpec, from: RunModel): RunModel {
  const next = new RunModel(spec.nodes, spec.edges);
  next.applyAll(from.events);
  return next;
}

export function useRunFeed({ namespace, name, token, api, mode, spec, expire }: Options): RunFeed {
  const [initial] = useState(() => new RunModel());
  const model = useRef(initial);
  const batcher = useRef<FrameBatcher | null>(null);
  const [run, setRun] = useState<RunSnapshot>({ model: initial, version: 0 });
  const [streamStatus, setStreamStatus] = useState<StreamStatus | null>(null);
  const [pages, setPages] = useState<{ readonly complete: boolean; readonly problem: Problem | null } | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const b = frameBatcher(() => {
      setRun({ model: model.current, version: model.current.version });
    }, browserFrames());
    batcher.current = b;
    return () => {
      b.dispose();
      batcher.current = null;
    };
  }, []);

  useEffect(() => {
    if (spec === null) return;
    model.current = rebuiltModel(spec, model.current);
    batcher.current?.mark();
  }, [spec]);

  useEffect(() => {
    if (mode !== 'stream') return undefined;
    const stream = streamRunEvents({
      namespace,
      name,
      token,
      after: model.current.lastSeq,
      ...(api.base === undefined ? {} : { base: api.base }),
      ...(api.fetch === undefined ? {} : { fetch: api.fetch }),
      onEvent: (event) => {
        if (model.current.apply(event)) batcher.current?.mark();
      },
      onStatus: (status) => {
        if (status.state === 'stopped' && status.end.reason === 'closed') return;
        if (status.state === 'stopped' && status.end.reason === 'unauthenticated') {
          expire(status.end.problem);
        }
        // The last events of a stopped stream are drawn before it says it stopped.
        if (status.state === 'stopped') batcher.current?.flushNow();
        setStreamStatus(status);
      },
    });
    return () => {
      stream.close();
    };
  }, [namespace, name, token, api, mode, attempt, expire]);

  useEffect(() => {
    if (mode !== 'pages') return undefined;
    const abort = new AbortController();
    const read = async (): Promise<void> => {
      let after = model.current.lastSeq;
      for (;;) {
        const page = await fetchEventPage(token, namespace, name, after, { ...api, signal: abort.signal });
        if (abort.signal.aborted) return;
        if (!page.ok) {
          if (page.problem.status === 401) expire(page.problem);
          batcher.current?.flushNow();
          setPages({ complete: false, problem: page.problem });
          return;
        }
        model.current.applyAll(page.value.events);
        batcher.current?.mark();
        if (page.value.complete || page.value.events.length === 0 || page.value.next <= after) {
          batcher.current?.flushNow();
          setPages({ complete: page.value.complete, problem: null });
          return;
        }
        after = page.value.next;
      }
    };
    void read();
    return () => {
      abort.abort();
    };
  }, [namespace, name, token, api, mode, expire]);

  const reconnect = useCallback(() => {
    setAttempt((n) => n + 1);
  }, []);

  const state: FeedState =
    mode === 'stream'
      ? streamStatus === null
        ? { kind: 'stream', status: { state: 'connecting', lastSeq: 0 } }
        : { kind: 'stream', status: streamStatus }
      : mode === 'pages'
        ? { kind: 'pages', reading: pages === null, complete: pages?.complete ?? false, problem: pages?.problem ?? null }
        : { kind: 'idle' };
  return { run, state, reconnect };
}
