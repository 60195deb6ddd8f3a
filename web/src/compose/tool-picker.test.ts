import { describe, expect, it } from 'vitest';
import { parseRegistry } from '../api/registry.ts';
import { readCapabilities, type Capabilities } from './capabilities.ts';
import { addRefusal, modelToolName, nodeTools, remoteAgentSkill, toolChoices, type PickerEntry } from './tool-picker.ts';

const pin = (name: string, readOnlyHint?: boolean) => ({ name, descriptionSha256: 'd', schemaSha256: 's', ...(readOnlyHint === undefined ? {} : { readOnlyHint }) });

const registry =
  parseRegistry({
    items: [
      {
        name: 'demo-tools',
        spec: { mcp: { url: 'http://tools', tools: ['search', 'send', 'fetch', 'gone'], readOnly: ['search', 'fetch', 'gone'] } },
        ready: true,
        reason: 'Pinned',
        // fetch lost its hint on the server; gone is not on the server at all; convert is on the server but not allowed
        status: { tools: [pin('search', true), pin('send', false), pin('fetch'), pin('convert', true)] },
      },
      { name: 'unpinned', spec: { mcp: { url: 'http://u', tools: ['look'], readOnly: ['look'] } } },
      {
        name: 'demo-writer',
        spec: { a2a: { cardUrl: 'http://w', skills: ['draft'], effect: 'Acting' } },
        ready: false,
        reason: 'PinChanged',
        message: 'the card changed',
        status: { skills: ['draft', 'delete'] },
      },
      { name: 'reader', spec: { a2a: { cardUrl: 'http://r', skills: ['summarise'] } }, ready: true, status: { skills: ['summarise'] } },
      { name: 'scripted', spec: { model: { provider: 'Scripted' } }, ready: true },
      { name: 'both', spec: { mcp: { url: 'http://b', tools: ['x'], readOnly: ['x'] }, a2a: { cardUrl: 'http://b', skills: ['y'] } } },
      { name: 'Bad.Name', spec: { mcp: { url: 'http://n', tools: ['t'], readOnly: ['t'] } } },
      { name: 'odd-effect', spec: { a2a: { cardUrl: 'http://o', skills: ['s'], effect: 'Writes' } } },
      { name: 'long', spec: { a2a: { cardUrl: 'http://l', skills: ['a'.repeat(60)] } } },
      { name: 'junk', spec: { mcp: { url: 'http://j', tools: 'search', readOnly: [1] } }, status: { tools: [null, { name: 3 }, 'x'] } },
    ],
  }) ?? [];

const acting = (allowed: boolean): Capabilities | null => readCapabilities({ capabilities: { nodeKinds: [], patterns: [], actingRemotes: allowed } });

function find(choices: readonly PickerEntry[], reference: string) {
  return choices.flatMap((e) => e.tools).find((t) => t.reference === reference);
}

describe('the tools a node may pick from the registry (12.17)', () => {
  const off = toolChoices(registry, acting(false));
  const on = toolChoices(registry, acting(true));

  it.each<[string, string, Capabilities | null, boolean, RegExp | null]>([
    ['a read-only MCP tool, allowed, hinted read-only by the server', 'mcp:demo-tools.search', acting(false), false, null],
    ['an MCP tool not in spec.mcp.readOnly', 'mcp:demo-tools.send', acting(false), false, /not marked read-only in registry entry demo-tools: add it to its spec\.mcp\.readOnly/],
    ['an MCP tool the server no longer hints read-only', 'mcp:demo-tools.fetch', acting(false), false, /does not mark this tool read-only \(readOnlyHint\)/],
    ['an MCP tool the probe did not find', 'mcp:demo-tools.gone', acting(false), false, /did not list this tool when it was probed/],
    ['an MCP tool the server offers but the entry does not allow', 'mcp:demo-tools.convert', acting(false), false, /not allowed by registry entry demo-tools: add it to its spec\.mcp\.tools/],
    ['a read-only MCP tool of an entry not pinned yet (the entry decides)', 'mcp:unpinned.look', acting(false), false, null],
    ['a read-only A2A skill', 'a2a:reader.summarise', acting(false), false, null],
    ['an acting skill where acting remotes are off', 'a2a:demo-writer.draft', acting(false), true, /acts \(effect: Acting\), and this deployment does not allow acting remotes/],
    ['an acting skill where the deployment allows acting remotes', 'a2a:demo-writer.draft', acting(true), true, null],
    ['an acting skill before the schema answers (12.10: the server decides)', 'a2a:demo-writer.draft', null, true, null],
    ["a skill on the card the entry does not allow", 'a2a:demo-writer.delete', acting(true), false, /not allowed by registry entry demo-writer: add it to its spec\.a2a\.skills/],
    ['a tool of an entry setting two kinds (the server leaves it out)', 'mcp:both.x', acting(true), false, /sets more than one of spec\.mcp, spec\.a2a and spec\.model/],
    ['a tool of an entry whose name a reference cannot hold', 'mcp:Bad.Name.t', acting(true), false, /cannot be written in a tool reference/],
    ['a skill of an entry with an effect the server does not know', 'a2a:odd-effect.s', acting(true), false, /neither ReadOnly nor Acting/],
    ['a skill whose model-facing name is over 64 characters', `a2a:long.${'a'.repeat(60)}`, acting(true), false, /characters; model tool names are at most 64/],
  ])('%s', (_what, reference, capabilities, isActing, refused) => {
    const tool = find(toolChoices(registry, capabilities), reference);
    expect(tool).toBeDefined();
    expect(tool?.acting).toBe(isActing);
    if (refused === null) expect(tool?.refused).toBeNull();
    else expect(tool?.refused).toMatch(refused);
  });

  it('lists MCP and A2A entries with their state, leaving out models, and reads odd shapes without throwing', () => {
    expect(off.map((e) => [e.name, e.source, e.state.state])).toEqual([
      ['Bad.Name', 'mcp', 'unprobed'],
      ['both', 'mcp', 'unprobed'],
      ['demo-tools', 'mcp', 'ready'],
      ['demo-writer', 'a2a', 'not-ready'],
      ['junk', 'mcp', 'unprobed'],
      ['long', 'a2a', 'unprobed'],
      ['odd-effect', 'a2a', 'unprobed'],
      ['reader', 'a2a', 'ready'],
      ['unpinned', 'mcp', 'unprobed'],
    ]);
    expect(off.find((e) => e.name === 'junk')?.tools).toEqual([]);
  });

  it('says what an entry that is not ready means for a run', () => {
    expect(off.find((e) => e.name === 'demo-writer')?.stateNote).toBe('not ready (PinChanged: the card changed): a run that uses it is refused until it is ready again (see the Registry tab)');
    expect(off.find((e) => e.name === 'unpinned')?.stateNote).toBe('not probed yet: a run that uses it waits until it is');
    expect(off.find((e) => e.name === 'reader')?.stateNote).toBeNull();
  });

  it('writes references and model-facing names as the server does', () => {
    expect(find(on, 'mcp:demo-tools.search')).toMatchObject({ entry: 'demo-tools', name: 'search', source: 'mcp', modelName: 'mcp_demo_tools_search' });
    expect(modelToolName('a2a', 'demo-writer', 'draft.v2')).toBe('a2a_demo_writer_draft_v2');
  });

  it('gives a new remote agent a read-only skill first, an allowed acting one next, else none (12.12)', () => {
    expect(remoteAgentSkill(off)?.reference).toBe('a2a:reader.summarise');
    expect(remoteAgentSkill(on)?.reference).toBe('a2a:reader.summarise');
    const onlyWriter = (c: readonly PickerEntry[]) => c.filter((e) => e.name === 'demo-writer');
    expect(remoteAgentSkill(onlyWriter(on))?.reference).toBe('a2a:demo-writer.draft');
    expect(remoteAgentSkill(onlyWriter(off))).toBeNull();
    expect(remoteAgentSkill([])).toBeNull();
  });

  it('gives a new remote agent a ready entry’s skill before one a run would refuse now (12.12)', () => {
    const skill = (entry: string, acting = false) => ({ reference: `a2a:${entry}.draft`, source: 'a2a' as const, entry, name: 'draft', modelName: `a2a_${entry}_draft`, acting, refused: null });
    const entry = (name: string, ready: boolean, acting = false): PickerEntry => ({
      name,
      source: 'a2a',
      state: ready ? { state: 'ready' } : { state: 'not-ready', reason: 'PinChanged', message: null },
      stateNote: null,
      refused: null,
      tools: [skill(name, acting)],
    });
    expect(remoteAgentSkill([entry('changed', false), entry('steady', true)])?.entry).toBe('steady');
    expect(remoteAgentSkill([entry('changed', false), entry('acts', true, true)])?.entry).toBe('acts');
    expect(remoteAgentSkill([entry('changed', false)])?.entry).toBe('changed');
  });
});

describe("a node's tools against the registry (12.17)", () => {
  const choices = toolChoices(registry, acting(false));

  it.each<[string, string, RegExp | null]>([
    ['a tool the registry offers', 'mcp:demo-tools.search', null],
    ['a tool the registry would refuse: its reason', 'mcp:demo-tools.send', /not marked read-only/],
    ['a tool its entry no longer offers', 'mcp:demo-tools.delete_all', /registry entry demo-tools no longer offers the tool delete_all: remove it/],
    ['a tool of an entry not in the registry', 'mcp:elsewhere.search', /the registry has no entry elsewhere \(MCP servers in the registry: Bad\.Name, both, demo-tools, junk, unpinned\)/],
    ['an a2a: reference to an MCP server', 'a2a:demo-tools.search', /demo-tools is an MCP server, not a remote agent: write mcp:demo-tools\.<tool>/],
    ['what is no reference at all', 'search', /is not a tool reference/],
  ])('%s', (_what, reference, flag) => {
    const [listed] = nodeTools([reference], choices);
    expect(listed?.reference).toBe(reference);
    if (flag === null) expect(listed?.flag).toBeNull();
    else expect(listed?.flag).toMatch(flag);
  });

  it('flags a second tool reaching the model under the same name, as the server does', () => {
    expect(nodeTools(['mcp:demo-tools.search', 'mcp:demo-tools.search'], choices).map((t) => t.flag)).toEqual([null, 'mcp:demo-tools.search is listed twice: remove one']);
  });

  it('refuses to add a tool already there, one whose model name is taken, and one the server refuses', () => {
    const search = find(choices, 'mcp:demo-tools.search');
    const send = find(choices, 'mcp:demo-tools.send');
    if (search === undefined || send === undefined) throw new Error('no tool');
    expect(addRefusal(search, [])).toBeNull();
    expect(addRefusal(search, ['mcp:demo-tools.search'])).toBe('already on this node');
    expect(addRefusal(search, ['mcp:demo_tools.search'])).toMatch(/reaches the model as mcp_demo_tools_search, as mcp:demo_tools\.search on this node does/);
    expect(addRefusal(send, [])).toMatch(/not marked read-only/);
  });
});
