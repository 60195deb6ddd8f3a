import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { parseRegistry } from '../api/registry.ts';
import { foldRemoteCalls, usedEntries } from './remote-calls.ts';
import { A2aTab, McpTab } from './RemoteTabs.tsx';
import { events } from './test-events.ts';
import type { RegistryState } from './useRegistry.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };
const start = (captureContent: boolean) => ({ type: 'run.start', composition: 'c', pattern: 'Pipeline', nodes: 1, budgets, captureContent, dryRunTools: false, inputSize: 1 });
const a2a = (direction: string, fields: Record<string, unknown> = {}) => ({ type: 'a2a.message', nodeId: 'writer', entry: 'demo-writer', skill: 'draft', callId: 'c0', direction, size: 0, ...fields });
const mcp = (fields: Record<string, unknown> = {}) => ({ type: 'mcp.call', nodeId: 'research', entry: 'demo-tools', tool: 'search_articles', callId: 'c1', status: 'ok', durationMs: 120, resultSize: 20, ...fields });

const items =
  parseRegistry({
    items: [
      {
        name: 'demo-writer',
        spec: { a2a: { cardUrl: 'https://writer.example/.well-known/agent-card.json', skills: ['draft'], effect: 'Acting' } },
        ready: false,
        reason: 'ProbeFailed',
        message: 'the card could not be fetched',
        status: { cardSHA256: 'c0ffee', skills: ['draft', 'delete'], lastError: 'card refused: 404' },
      },
      { name: 'demo-tools', spec: { mcp: { url: 'http://127.0.0.1:7801/mcp', transport: 'Sse', tools: ['search_articles', 'send'], readOnly: ['search_articles'], privateNetwork: true } }, ready: true, reason: 'Probed', status: { tools: [{ name: 'search_articles', readOnlyHint: true }] } },
    ],
  }) ?? [];
const registry: RegistryState = { kind: 'ok', items };

describe('the A2A tab (12.47–12.50)', () => {
  const calls = foldRemoteCalls(
    events(
      start(true),
      a2a('outbound', { size: 17, text: '<img src=x onerror=alert(1)>' }),
      a2a('inbound', { taskState: 'submitted' }),
      a2a('inbound', { taskState: 'completed' }),
      a2a('inbound', { taskState: 'completed', size: 11, text: '<b>draft</b>' }),
    ),
  );
  const html = renderToStaticMarkup(<A2aTab calls={calls} entries={usedEntries(['a2a:demo-writer.draft', 'a2a:gone.x'], calls).a2a} registry={registry} namespace="team-a" live />);

  it('lists each call as a closed disclosure naming its node, remote and where it stands, marked acting from the entry’s effect', () => {
    expect(html).toMatch(/<button type="button" aria-expanded="false" aria-controls="[^"]+"[^>]*>.*Call 1: writer → demo-writer\.draft, completed, 3\.00 s.*<span class="sr-only">, <\/span>acting<\/strong><\/button>/);
    expect(html).toContain('submitted → completed');
    expect(html).toContain('Request: one text part, 17 bytes');
  });

  it('writes captured text as text, never markup, in boxes the keyboard scrolls', () => {
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>draft');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toMatch(/<pre tabindex="0" aria-label="Request of call 1" class="max-h-48 overflow-auto/);
    expect(html).toMatch(/<pre tabindex="0" aria-label="Reply of call 1"[^>]*>&lt;b&gt;draft&lt;\/b&gt;<\/pre>/);
  });

  it('shows each remote the run uses: skills allowed and not, acting, the pinned digest and how, the card’s error, the reprobe command, and no fetch or try button', () => {
    expect(html).toContain('Remote agents this run uses');
    expect(html).toContain('c0ffee');
    expect(html).toContain('pinned on first use');
    expect(html).toMatch(/<td class="font-mono">delete<\/td><td>no<\/td>/);
    expect(html).toContain('acting</strong>');
    expect(html).toContain('card refused: 404');
    expect(html).toContain('kubectl annotate registryentry demo-writer -n team-a studio.orrery.dev/reprobe=');
    expect(html).toContain('<code class="font-mono font-semibold">gone</code> is not in the registry of team-a, or you may not read it.');
    expect(html.match(/<button/g)).toHaveLength(1);
  });

  it('says when nothing was called, and when content is not captured', () => {
    const none = foldRemoteCalls(events(start(false)));
    const empty = renderToStaticMarkup(<A2aTab calls={none} entries={[]} registry={{ kind: 'idle' }} namespace="team-a" live={false} />);
    expect(empty).toContain('This run called no remote agent.');
    expect(empty).toContain('This run’s composition names no remote agent.');
    expect(empty).toContain('does not capture content');
  });

  it('says the registry is being read, or why it could not be', () => {
    const loading = renderToStaticMarkup(<A2aTab calls={calls} entries={['demo-writer']} registry={{ kind: 'loading' }} namespace="team-a" live />);
    expect(loading).toContain('Reading the registry…');
    const refused = renderToStaticMarkup(
      <A2aTab calls={calls} entries={['demo-writer']} registry={{ kind: 'problem', problem: { status: 403, code: 'forbidden', message: 'grant registryentries list', loc: [], retryAfterSeconds: null } }} namespace="team-a" live />,
    );
    expect(refused).toContain('Reading the registry failed (403):');
    expect(refused).toContain('grant registryentries list');
  });
});

describe('the MCP tab (12.51)', () => {
  const calls = foldRemoteCalls(events(start(true), mcp({ arguments: '{"query":"<script>"}', result: 'three articles' }), mcp({ callId: 'c2', status: 'error', result: 'no answer in time' })));
  const html = renderToStaticMarkup(<McpTab calls={calls} entries={['demo-tools']} registry={registry} namespace="team-a" live={false} />);

  it('lists each call with its status, time and size, and its arguments and result as text', () => {
    expect(html).toContain('Call 1: research → demo-tools.search_articles, ok in 120 ms, 20 bytes back');
    expect(html).toContain('Call 2: research → demo-tools.search_articles, error in 120 ms, 20 bytes back');
    expect(html).toMatch(/aria-label="Arguments of call 1"[^>]*>\{&quot;query&quot;:&quot;&lt;script&gt;&quot;\}<\/pre>/);
    expect(html).toContain('aria-label="Result of call 2"');
  });

  it('shows each server: its transport and network, its tools with their classification, and no try-it button', () => {
    expect(html).toContain('MCP servers this run uses');
    expect(html).toContain('HTTP with server-sent events (legacy SSE)');
    expect(html).toContain('private (on the deployment’s allowlist)');
    expect(html).toMatch(/<td class="font-mono">search_articles<\/td><td>yes<\/td><td>yes, the server hints read-only<\/td>/);
    expect(html).toMatch(/<td class="font-mono">send<\/td><td>yes<\/td><td><strong[^>]*>no: acts<\/strong><\/td>/);
    expect(html.match(/<button/g)).toHaveLength(2);
  });
});
