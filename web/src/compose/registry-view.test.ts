import { describe, expect, it } from 'vitest';
import { parseRegistry } from '../api/registry.ts';
import { entryView } from './registry-view.ts';

const tool = (name: string, d = 'd1', hint: boolean | null = true) => ({ name, descriptionSha256: d, schemaSha256: 's1', annotationsSha256: 'a1', ...(hint === null ? {} : { readOnlyHint: hint }) });

const [mcp, writer, model] =
  parseRegistry({
    items: [
      {
        name: 'demo-tools',
        spec: { mcp: { url: 'http://127.0.0.1:7801/mcp', tools: ['search', 'send'], readOnly: ['search'] } },
        ready: false,
        reason: 'PinChanged',
        message: 'the tools changed',
        status: {
          tools: [tool('search'), tool('send', 'd1', false)],
          proposedPins: { digest: 'abc123', tools: [tool('search', 'd2'), tool('convert')] },
          lastError: 'tools changed since pinned',
        },
      },
      {
        name: 'demo-writer',
        spec: { a2a: { cardUrl: 'https://writer.example/.well-known/agent-card.json', skills: ['draft'], effect: 'Acting', privateNetwork: true } },
        ready: true,
        reason: 'Pinned',
        status: { cardSHA256: 'c1', skills: ['draft', 'delete'] },
      },
      { name: 'gpt', spec: { model: { provider: 'OpenAI', model: 'gpt-5', baseUrl: 'https://api.example/v1' } }, ready: true },
    ],
  }) ?? [];

describe('the registry view (12.49–12.52)', () => {
  it('shows an MCP entry’s tools, allowed and read-only as the entry declares them, and what a new probe found', () => {
    if (mcp === undefined) throw new Error('no entry');
    const view = entryView(mcp, 'team-a');
    expect(view).toMatchObject({ kind: 'mcp', ready: false, reason: 'PinChanged', endpoint: 'http://127.0.0.1:7801/mcp', lastError: 'tools changed since pinned', pinnedBy: null });
    expect(view.tools).toEqual([
      { name: 'search', allowed: true, readOnly: true, hint: true },
      { name: 'send', allowed: true, readOnly: false, hint: false },
    ]);
    expect(view.pinChange).toEqual({
      cardDigest: null,
      skillsAdded: [],
      skillsRemoved: [],
      toolsAdded: ['convert'],
      toolsRemoved: ['send'],
      toolsChanged: [{ name: 'search', parts: ['description'] }],
      acceptCommand: 'kubectl annotate registryentry demo-tools -n team-a studio.orrery.dev/accept-pins=abc123 --overwrite',
    });
    expect(view.reprobeCommand).toBe('kubectl annotate registryentry demo-tools -n team-a studio.orrery.dev/reprobe="$(date +%s)" --overwrite');
  });

  it('shows an A2A entry’s card digest, pinned on first use, its skills allowed or not, the allowed ones marked acting (4.52)', () => {
    if (writer === undefined) throw new Error('no entry');
    const view = entryView(writer, 'team-a');
    expect(view).toMatchObject({ kind: 'a2a', cardDigest: 'c1', pinnedBy: 'first use', privateNetwork: true, pinChange: null });
    expect(view.skills).toEqual([
      { name: 'draft', allowed: true, acting: true },
      { name: 'delete', allowed: false, acting: false },
    ]);
  });

  it('names a model entry’s endpoint', () => {
    if (model === undefined) throw new Error('no entry');
    expect(entryView(model, 'team-a')).toMatchObject({ kind: 'model', endpoint: 'https://api.example/v1', tools: [], skills: [] });
  });
});
