import { describe, expect, it } from 'vitest';
import { readCapabilities } from './capabilities.ts';
import { parseRegistry } from '../api/registry.ts';
import { itemFromData, itemToData, paletteEntries, remoteAgentOffer } from './palette.ts';
import { toolChoices } from './tool-picker.ts';

const offer = { tool: 'a2a:reader.summarise', acting: false } as const;

describe('the palette', () => {
  it('offers every kind, and a remote agent after the LLM agent, while the schema has not answered (12.10)', () => {
    const entries = paletteEntries(null, offer);
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
    const entries = paletteEntries(c, offer);
    expect(entries.map((e) => [e.label, e.disabled])).toEqual([
      ['LLM agent', null],
      ['Remote agent', null],
      ['Handoff', 'use a Router'],
      ['Remote A2A node', 'this server does not run it'],
    ]);
  });

  it('disables the remote agent too when the server does not run LLM agents (12.12 adds one)', () => {
    const c = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'LLMAgent', supported: false, note: 'no models' }], patterns: [] } });
    expect(paletteEntries(c, offer).map((e) => e.disabled)).toEqual(['no models', 'no models']);
  });

  it('names a kind it does not know by the word the server used', () => {
    const c = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'Critic', supported: true }], patterns: [] } });
    expect(paletteEntries(c, offer)[0]).toMatchObject({ label: 'Critic', icon: 'Cr', item: { add: 'kind', kind: 'Critic' } });
  });

  it('carries an entry through a drag and back', () => {
    for (const item of [{ add: 'kind', kind: 'Router' } as const, { add: 'remote-agent', tool: 'a2a:demo-writer.draft' } as const]) {
      expect(itemFromData(itemToData(item))).toEqual(item);
    }
    expect(itemFromData('kind:')).toBeNull();
    expect(itemFromData('remote-agent:')).toBeNull();
    expect(itemFromData('remote-agent')).toBeNull();
    expect(itemFromData('text/plain')).toBeNull();
  });
});

describe('"Remote agent" (12.12, 2.5)', () => {
  const registry =
    parseRegistry({
      items: [
        { name: 'demo-writer', spec: { a2a: { cardUrl: 'http://w', skills: ['draft'], effect: 'Acting' } }, ready: true },
        { name: 'reader', spec: { a2a: { cardUrl: 'http://r', skills: ['summarise'] } }, ready: true },
        { name: 'tools', spec: { mcp: { url: 'http://t', tools: ['search'], readOnly: ['search'] } }, ready: true },
      ],
    }) ?? [];
  const caps = (acting: boolean) => readCapabilities({ capabilities: { nodeKinds: [{ kind: 'LLMAgent', supported: true }], patterns: [], actingRemotes: acting } });
  const remote = (offered: ReturnType<typeof remoteAgentOffer>) => paletteEntries(caps(false), offered).find((e) => e.label === 'Remote agent');

  it.each<[string, Parameters<typeof remoteAgentOffer>[0], ReturnType<typeof remoteAgentOffer>]>([
    ['a read-only skill first', toolChoices(registry, caps(true)), { tool: 'a2a:reader.summarise', acting: false }],
    ['an acting skill where the deployment allows it and there is no other', toolChoices(registry.filter((i) => i.name !== 'reader'), caps(true)), { tool: 'a2a:demo-writer.draft', acting: true }],
    [
      "none where the only remote acts and acting remotes are off, with the server's reason",
      toolChoices(registry.filter((i) => i.name !== 'reader'), caps(false)),
      { refused: 'no remote agent in the registry can be called here: remote agent demo-writer acts (effect: Acting), and this deployment does not allow acting remotes: use a read-only agent, or ask the platform team to allow acting remotes' },
    ],
    ['none where the registry has no remote agent', toolChoices(registry.filter((i) => i.name === 'tools'), caps(true)), { refused: "this namespace's registry has no remote agent you may read: ask the platform team to register one (a RegistryEntry with spec.a2a)" }],
    ['none while the registry is being read', null, { refused: 'the registry is still being read' }],
  ])('calls %s', (_what, choices, expected) => {
    expect(remoteAgentOffer(choices)).toEqual(expected);
  });

  it('says why the registry could not be read', () => {
    expect(remoteAgentOffer(null, 'forbidden')).toEqual({ refused: 'the registry could not be read (forbidden)' });
  });

  it('adds an LLM agent with the one a2a: tool offered, or is off with the reason', () => {
    expect(remote({ tool: 'a2a:reader.summarise', acting: false })).toMatchObject({ item: { add: 'remote-agent', tool: 'a2a:reader.summarise' }, disabled: null, hint: 'An LLM agent calling a2a:reader.summarise; pick another in the inspector.' });
    expect(remote({ tool: 'a2a:demo-writer.draft', acting: true })?.hint).toBe('An LLM agent calling a2a:demo-writer.draft, which acts; pick another in the inspector.');
    expect(remote({ refused: 'the registry is still being read' })?.disabled).toBe('the registry is still being read');
  });
});
