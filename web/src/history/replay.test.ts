import { describe, expect, it } from 'vitest';
import { GENERATED_NODES, generatedRun } from './generated-run.ts';
import { modelAt, moveModel, replayInstant, specNodesOf } from './replay.ts';

describe('a finished run replayed from its events', () => {
  it('takes its nodes from the spec it ran', () => {
    const spec = { pattern: 'Supervisor', nodes: [{ id: 'lead', kind: 'Supervisor' }, { id: 'researcher', kind: 'LLMAgent' }, { kind: 'LLMAgent' }, 'junk'] };
    expect(specNodesOf(spec)).toEqual([
      { id: 'lead', kind: 'Supervisor' },
      { id: 'researcher', kind: 'LLMAgent' },
    ]);
    expect(specNodesOf(null)).toEqual([]);
    expect(specNodesOf({ nodes: 'x' })).toEqual([]);
  });

  it('replays 2,000 events at once into the run as it ended', () => {
    const { events, expected } = generatedRun(2000);
    expect(events.length).toBeGreaterThan(1990);
    expect(events.length).toBeLessThanOrEqual(2000);
    const model = replayInstant(events, GENERATED_NODES);
    expect(model.lastSeq).toBe(events.length);
    expect(model.outcome).toBe('Succeeded');
    expect(model.nodes.get('draft')).toMatchObject({ entries: expected.draftEntries, tokens: expected.draftEntries * 100, calls: expected.draftEntries, state: 'ok' });
    expect(model.nodes.get('critic')).toMatchObject({ entries: expected.criticEntries, state: 'ok' });
    expect(model.nodes.get('publish')?.state).toBe('skipped');
    expect(model.used.maxTokens).toBe(expected.tokens);
    expect(model.used.maxToolCalls).toBe(expected.toolCalls);
    expect(model.loops.get('critic→draft')?.iteration).toBe(expected.criticEntries);
  });

  it('stands at any position the same way, whether reached by playing on or by rebuilding', () => {
    const { events } = generatedRun(200);
    const played = moveModel(modelAt(events, GENERATED_NODES, 40), events, GENERATED_NODES, 40, 123);
    const rebuilt = modelAt(events, GENERATED_NODES, 123);
    expect(played.lastSeq).toBe(123);
    expect(rebuilt.lastSeq).toBe(123);
    expect([...played.nodes.values()]).toEqual([...rebuilt.nodes.values()]);
    expect(played.used).toEqual(rebuilt.used);
    const back = moveModel(played, events, GENERATED_NODES, 123, 10);
    expect(back.lastSeq).toBe(10);
    expect(back.used).toEqual(modelAt(events, GENERATED_NODES, 10).used);
    expect(modelAt(events, GENERATED_NODES, 0).lastSeq).toBe(0);
    expect(modelAt(events, GENERATED_NODES, 9999).lastSeq).toBe(events.length);
  });
});
