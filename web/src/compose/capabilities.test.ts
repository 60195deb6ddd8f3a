import { describe, expect, it } from 'vitest';
import { readCapabilities, refusal } from './capabilities.ts';

/** As `GET /api/v1/schema` publishes it (`orrery schema capabilities`), trimmed. */
const published = {
  capabilities: {
    actingRemotes: false,
    ceilings: { maxTokens: 500000, timeoutSeconds: 1800 },
    edgeScreen: true,
    humanApproval: true,
    limits: { maxNodes: 30, maxLoopIterations: 5 },
    loops: true,
    nodeKinds: [
      { kind: 'LLMAgent', supported: true },
      { kind: 'Handoff', note: 'use a Router, or an LLMAgent with output.labels', supported: false },
      { kind: 7, supported: true },
    ],
    parallel: true,
    patterns: [{ pattern: 'Pipeline', supported: true }, { pattern: 'Handoff', supported: false }],
    allowedModels: ['fast', 'scripted'],
  },
};

describe('the capabilities the schema publishes', () => {
  it('reads kinds, patterns, flags, models, limits and ceilings, skipping what is not a kind', () => {
    const c = readCapabilities(published);
    expect(c?.nodeKinds).toEqual([
      { name: 'LLMAgent', supported: true, note: null },
      { name: 'Handoff', supported: false, note: 'use a Router, or an LLMAgent with output.labels' },
    ]);
    expect(c?.patterns.map((p) => [p.name, p.supported])).toEqual([
      ['Pipeline', true],
      ['Handoff', false],
    ]);
    expect(c?.actingRemotes).toBe(false);
    expect(c?.loops).toBe(true);
    expect(c?.allowedModels).toEqual(['fast', 'scripted']);
    expect(c?.defaultModel).toBeNull();
    expect(c?.limits).toEqual({ maxNodes: 30, maxLoopIterations: 5 });
    expect(c?.ceilings).toEqual({ maxTokens: 500000, timeoutSeconds: 1800 });
  });

  it('is none when the reply has no kinds or patterns to read', () => {
    expect(readCapabilities({})).toBeNull();
    expect(readCapabilities({ capabilities: { nodeKinds: [] } })).toBeNull();
  });

  it('refuses a kind only when the server listed it as not run, in its words', () => {
    const c = readCapabilities(published);
    expect(refusal(c?.nodeKinds, 'Handoff')).toBe('this server does not run Handoff: use a Router, or an LLMAgent with output.labels');
    expect(refusal(c?.nodeKinds, 'LLMAgent')).toBeNull();
    expect(refusal(c?.nodeKinds, 'Unheard')).toBeNull();
    expect(refusal(undefined, 'Handoff')).toBeNull();
  });
});
