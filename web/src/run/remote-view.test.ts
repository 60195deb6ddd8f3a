import { describe, expect, it } from 'vitest';
import { parseRegistry } from '../api/registry.ts';
import { foldRemoteCalls } from './remote-calls.ts';
import { a2aOutcomeText, a2aSummary, contentNote, entriesOf, isActing, mcpSummary, replyText, sentText, statesText, transportText } from './remote-view.ts';
import { events } from './test-events.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };
const start = { type: 'run.start', composition: 'c', pattern: 'Pipeline', nodes: 1, budgets, captureContent: false, dryRunTools: false, inputSize: 1 };
const a2a = (direction: string, fields: Record<string, unknown> = {}) => ({ type: 'a2a.message', nodeId: 'writer', entry: 'demo-writer', skill: 'draft', callId: 'c0', direction, size: 0, ...fields });
const toolCall = (status: string, fields: Record<string, unknown> = {}) => ({ type: 'tool.call', nodeId: 'writer', entry: 1, tool: 't', reference: 'a2a:demo-writer.draft', callId: 'c0', status, durationMs: 1500, resultSize: 1, ...fields });

/** The one A2A call of `bodies` (after run.start). */
function callOf(...bodies: Record<string, unknown>[]) {
  const [call] = foldRemoteCalls(events(start, ...bodies)).a2a;
  if (call === undefined) throw new Error('no call');
  return call;
}

describe('what the A2A tab says of a call (12.47)', () => {
  it.each([
    {
      name: 'completed',
      call: () => callOf(a2a('outbound', { size: 5 }), a2a('inbound', { taskState: 'submitted' }), a2a('inbound', { taskState: 'completed' }), a2a('inbound', { taskState: 'completed', size: 1234 }), toolCall('ok')),
      summary: 'Call 1: writer → demo-writer.draft, completed, 1.50 s',
      states: 'submitted → completed',
      reply: 'one text, 1,234 bytes, the task completed',
    },
    {
      name: 'stopped at failed, with the tool call’s status',
      call: () => callOf(a2a('outbound', { size: 5 }), a2a('inbound', { taskState: 'failed' }), a2a('inbound', { taskState: 'failed' }), toolCall('error')),
      summary: 'Call 1: writer → demo-writer.draft, stopped at failed (error), 1.50 s',
      states: 'failed',
      reply: 'nothing came back, the task failed',
    },
    {
      name: 'a plain message reply',
      call: () => callOf(a2a('outbound', { size: 5 }), a2a('inbound', { size: 1 })),
      summary: 'Call 1: writer → demo-writer.draft, replied, 1.00 s',
      states: 'none: the agent answered with a message, not a task',
      reply: 'one text, 1 byte',
    },
    {
      name: 'waiting, with no time shown yet',
      call: () => callOf(a2a('outbound', { size: 5 }), a2a('inbound', { taskState: 'working' })),
      summary: 'Call 1: writer → demo-writer.draft, waiting for the remote agent',
      states: 'working',
      reply: 'none yet',
    },
    {
      name: 'asking a person',
      call: () => callOf(a2a('outbound', { size: 5 }), a2a('inbound', { taskState: 'input-required' })),
      summary: 'Call 1: writer → demo-writer.draft, waiting for a person to answer the agent’s question',
      states: 'input-required',
      reply: 'none yet',
    },
    {
      name: 'cut short by the run’s end before any state',
      call: () => callOf(a2a('outbound', { size: 5 }), { type: 'run.end', outcome: 'Cancelled', totals: {}, dropped: 0, outputSize: 0 }),
      summary: 'Call 1: writer → demo-writer.draft, stopped before the task reached any state',
      states: 'none yet',
      reply: 'none: the call ended without one',
    },
    {
      name: 'not sent',
      call: () => callOf(toolCall('refused', { durationMs: 0, error: 'refused before it ran: budget maxRemoteCalls is spent' })),
      summary: 'Call 1: writer → demo-writer.draft, not sent',
      states: 'none: nothing was sent',
      reply: 'none: nothing was sent',
    },
  ])('$name', ({ call, summary, states, reply }) => {
    const c = call();
    expect(a2aSummary(c, 0)).toBe(summary);
    expect(statesText(c)).toBe(states);
    expect(replyText(c)).toBe(reply);
  });

  it('names what was sent: the request, and a person’s answers, each one text part', () => {
    const c = callOf(a2a('outbound', { size: 1 }), a2a('inbound', { taskState: 'input-required' }), { type: 'approval.decided', approvalId: 'q', nodeId: 'writer', kind: 'Input', decision: 'approved', waitMs: 1 }, a2a('outbound', { size: 3 }));
    expect(c.sent.map(sentText)).toEqual(['Request: one text part, 1 byte', 'A person’s answer to its question: one text part, 3 bytes']);
    expect(a2aOutcomeText(c)).toBe('waiting for a person to answer the agent’s question');
  });

  it('names the JSON-RPC method a message went by when the event says it (12.47)', () => {
    const c = callOf(a2a('outbound', { size: 5, method: 'SendStreamingMessage' }), a2a('inbound', { taskState: 'completed', size: 2 }));
    expect(c.sent.map(sentText)).toEqual(['Request by SendStreamingMessage: one text part, 5 bytes']);
    const plain = callOf(a2a('outbound', { size: 5, method: 'SendMessage' }));
    expect(plain.sent.map(sentText)).toEqual(['Request by SendMessage: one text part, 5 bytes']);
    const odd = callOf(a2a('outbound', { size: 5, method: 7 }));
    expect(odd.sent.map(sentText)).toEqual(['Request: one text part, 5 bytes']);
  });

  it.each([
    { content: { kind: 'text', text: 'x' } as const, want: null },
    { content: { kind: 'empty' } as const, want: 'Empty.' },
    { content: { kind: 'off' } as const, want: 'Not recorded: this run does not capture content.' },
    { content: { kind: 'capped' } as const, want: 'Not recorded: the run had captured as much content as it may.' },
  ])('says why there is no text: $content.kind', ({ content, want }) => {
    expect(contentNote(content)).toBe(want);
  });
});

describe('what the MCP tab says of a call (12.51)', () => {
  const mcp = (fields: Record<string, unknown> = {}) => ({ type: 'mcp.call', nodeId: 'research', entry: 'demo-tools', tool: 'search_articles', callId: 'c1', status: 'ok', durationMs: 120, resultSize: 2345, ...fields });
  const mcpTool = (status: string, fields: Record<string, unknown> = {}) => ({ type: 'tool.call', nodeId: 'research', entry: 1, tool: 't', reference: 'mcp:demo-tools.search_articles', callId: 'c1', status, durationMs: 0, resultSize: 0, ...fields });
  it.each([
    { bodies: [mcp()], want: 'Call 1: research → demo-tools.search_articles, ok in 120 ms, 2,345 bytes back' },
    { bodies: [mcp({ status: 'error', durationMs: 30000, resultSize: 1 })], want: 'Call 1: research → demo-tools.search_articles, error in 30.0 s, 1 byte back' },
    { bodies: [mcpTool('refused')], want: 'Call 1: research → demo-tools.search_articles, not sent (refused)' },
    { bodies: [mcpTool('ok', { dryRun: true })], want: 'Call 1: research → demo-tools.search_articles, answered by the dry-run tool, not sent' },
  ])('$want', ({ bodies, want }) => {
    const [call] = foldRemoteCalls(events(start, ...bodies)).mcp;
    if (call === undefined) throw new Error('no call');
    expect(mcpSummary(call, 0)).toBe(want);
  });
});

describe('the registry entries the tabs show (12.49–12.51)', () => {
  const items =
    parseRegistry({
      items: [
        { name: 'demo-tools', spec: { mcp: { url: 'http://127.0.0.1:7801/mcp', transport: 'StreamableHttp', tools: ['search'], readOnly: ['search'] } } },
        { name: 'legacy', spec: { mcp: { url: 'https://legacy.example/sse', transport: 'Sse', tools: ['x'] } } },
        { name: 'bare', spec: { mcp: { url: 'https://bare.example/mcp', tools: ['x'] } } },
        { name: 'demo-writer', spec: { a2a: { cardUrl: 'https://w.example/card', skills: ['draft'], effect: 'Acting' } } },
        { name: 'reader', spec: { a2a: { cardUrl: 'https://r.example/card', skills: ['read'], effect: 'ReadOnly' } } },
      ],
    }) ?? [];
  const item = (name: string) => {
    const found = items.find((i) => i.name === name);
    if (found === undefined) throw new Error(name);
    return found;
  };

  it.each([
    { name: 'demo-tools', want: 'Streamable HTTP' },
    { name: 'legacy', want: 'HTTP with server-sent events (legacy SSE)' },
    { name: 'bare', want: 'Streamable HTTP' },
    { name: 'demo-writer', want: null },
  ])('(12.51) the transport of $name', ({ name, want }) => {
    expect(transportText(item(name))).toBe(want);
  });

  it('(12.50) marks calls to an entry acting from its effect', () => {
    expect(isActing(items, 'demo-writer')).toBe(true);
    expect(isActing(items, 'reader')).toBe(false);
    expect(isActing(items, 'gone')).toBe(false);
  });

  it('(12.49) pairs each entry the run uses with its RegistryEntry, or none when the caller cannot read it', () => {
    expect(entriesOf(['demo-writer', 'gone'], items).map((e) => [e.name, e.item?.kind ?? null])).toEqual([
      ['demo-writer', 'a2a'],
      ['gone', null],
    ]);
  });
});
