// A made-up finished run of any length, for tests and the replay benchmark: a critic loop
// (draft → critic → draft …) whose drafts call a tool, ended by `run.end` with its totals. Not
// used by the console itself.

import { parseTraceEvent, type TraceEvent } from '../api/trace.ts';
import type { SpecNode } from './replay.ts';

export const GENERATED_NODES: readonly SpecNode[] = [
  { id: 'draft', kind: 'LLMAgent' },
  { id: 'critic', kind: 'LLMAgent' },
  { id: 'publish', kind: 'LLMAgent' },
];

export interface GeneratedRun {
  readonly events: TraceEvent[];
  /** What the events add up to, to check a replay against. */
  readonly expected: { readonly draftEntries: number; readonly criticEntries: number; readonly tokens: number; readonly toolCalls: number };
}

/** A run of at most `count` events (at least `count - 6`: rounds of 7 between run.start and run.end), 250 ms apart. */
export function generatedRun(count: number, runId = 'uid-generated'): GeneratedRun {
  const bodies: Record<string, unknown>[] = [];
  const budgets = { maxTokens: 10_000_000, maxToolCalls: 10_000, maxDelegations: 10, maxRemoteCalls: 10, timeoutSeconds: 3600 };
  bodies.push({ type: 'run.start', composition: 'critic-loop', pattern: 'Loop', nodes: 3, budgets, captureContent: false, dryRunTools: false, inputSize: 10 });
  let entry = 0;
  let draftEntries = 0;
  let criticEntries = 0;
  let tokens = 0;
  let toolCalls = 0;
  let iteration = 0;
  // Each round is 7 events; leave room for run.end.
  while (bodies.length + 7 <= count - 1) {
    iteration += 1;
    entry += 1;
    draftEntries += 1;
    bodies.push({ type: 'node.enter', nodeId: 'draft', kind: 'LLMAgent', entry, depth: 0, inputSize: 10 });
    bodies.push({ type: 'tool.call', nodeId: 'draft', entry, tool: 'search', callId: `c${iteration}`, status: 'ok', durationMs: 12, resultSize: 40 });
    toolCalls += 1;
    bodies.push({ type: 'node.exit', nodeId: 'draft', kind: 'LLMAgent', entry, depth: 0, status: 'ok', tokens: 100, modelCalls: 1, durationMs: 800, answerSize: 50 });
    tokens += 100;
    entry += 1;
    criticEntries += 1;
    bodies.push({ type: 'node.enter', nodeId: 'critic', kind: 'LLMAgent', entry, depth: 0, inputSize: 50 });
    bodies.push({ type: 'node.exit', nodeId: 'critic', kind: 'LLMAgent', entry, depth: 0, status: 'ok', tokens: 40, modelCalls: 1, durationMs: 300, answerSize: 8, label: 'revise' });
    tokens += 40;
    bodies.push({ type: 'route.taken', nodeId: 'critic', label: 'revise', to: 'draft' });
    bodies.push({ type: 'loop.iteration', head: 'draft', tail: 'critic', iteration, max: 10_000, stopped: false });
  }
  const wallTimeMs = bodies.length * 250;
  bodies.push({ type: 'run.end', outcome: 'Succeeded', totals: { tokens, toolCalls, delegations: 0, remoteCalls: 0, wallTimeMs }, dropped: 0, outputSize: 50 });
  return { events: traceEvents(bodies, 250, runId), expected: { draftEntries, criticEntries, tokens, toolCalls } };
}

/** Events from their bodies, with seq 1, 2, … and `ts` `spacingMs` apart from 2026-12-05 10:00 UTC. */
export function traceEvents(bodies: readonly Record<string, unknown>[], spacingMs = 1000, runId = 'uid-1'): TraceEvent[] {
  const start = Date.UTC(2026, 11, 5, 10, 0, 0);
  return bodies.map((body, i) => {
    const parsed = parseTraceEvent(JSON.stringify({ seq: i + 1, runId, ts: new Date(start + i * spacingMs).toISOString(), ...body }));
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed.event;
  });
}
