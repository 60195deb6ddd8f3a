import { describe, expect, it } from 'vitest';
import { readCapabilities } from './capabilities.ts';
import { itemFromData, itemToData, paletteEntries } from './palette.ts';

describe('the palette', () => {
  it('offers every kind, and a remote agent after the LLM agent, while the schema has not answered (12.10)', () => {
    const entries = paletteEntries(null);
    expect(entries.map((e) => e.label)).toEqual(['LLM agent', 'Remote agent', 'Router', 'Parallel', 'Join', 'Supervisor', 'Human approval', 'Remote A2A node', 'Handoff']);
    expect(entries.every((e) => e.disabled === null)).toBe(true);
  });

  it("shows a kind the server does not run disabled, with the server's reason (12.9)", () => {
    const c = readCapabilities({
      capabilities: {
        nodeKinds: [
          { kind: 'LLMAgent', supported: true },
          { kind: 'Handoff', supported: false, note: 'use a Router' },
          { kind: 'RemoteA2A', supported: false },
        ],
        patterns: [],
      },
    });
    const entries = paletteEntries(c);
    expect(entries.map((e) => [e.label, e.disabled])).toEqual([
      ['LLM agent', null],
      ['Remote agent', null],
      ['Handoff', 'use a Router'],
      ['Remote A2A node', 'this server does not run it'],
    ]);
  });

  it('disables the remote agent too when the server does not run LLM agents (12.12 adds one)', () => {
    const c = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'LLMAgent', supported: false, note: 'no models' }], patterns: [] } });
    expect(paletteEntries(c).map((e) => e.disabled)).toEqual(['no models', 'no models']);
  });

  it('names a kind it does not know by the word the server used', () => {
    const c = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'Critic', supported: true }], patterns: [] } });
    expect(paletteEntries(c)[0]).toMatchObject({ label: 'Critic', icon: 'Cr', item: { add: 'kind', kind: 'Critic' } });
  });

  it('carries an entry through a drag and back', () => {
    for (const item of [{ add: 'kind', kind: 'Router' } as const, { add: 'remote-agent' } as const]) {
      expect(itemFromData(itemToData(item))).toEqual(item);
    }
    expect(itemFromData('kind:')).toBeNull();
    expect(itemFromData('text/plain')).toBeNull();
  });
});
