import { describe, expect, it } from 'vitest';
import { contentOf, foldRemoteCalls, parseToolRef, usedEntries, type A2aOutcome } from './remote-calls.ts';
import { events } from './test-events.ts';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };
const start = (captureContent: boolean) => ({ type: 'run.start', composition: 'c', pattern: 'Pipeline', nodes: 1, budgets, captureContent, dryRunTools: false, inputSize: 1 });
const end = { type: 'run.end', outcome: 'Cancelled', totals: {}, dropped: 0, outputSize: 0 };

/** An `a2a.message` of node `writer` to `demo-writer.draft`, as the runner emits it. */
const a2a = (direction: 'outbound' | 'inbound', fields: Record<string, unknown> = {}) => ({
  type: 'a2a.message',
  nodeId: 'writer',
  entry: 'demo-writer',
  skill: 'draft',
  callId: 'call_writer_0',
  direction,
  size: 0,
  ...fields,
});
const state = (taskState: string, fields: Record<string, unknown> = {}) => a2a('inbound', { taskState, ...fields });
const toolCall = (status: string, fields: Record<string, unknown> = {}) => ({
  type: 'tool.call',
  nodeId: 'writer',
  entry: 1,
  tool: 'a2a_demo_writer_draft',
  reference: 'a2a:demo-writer.draft',
  callId: 'call_writer_0',
  status,
  durationMs: 1500,
  resultSize: 10,
  ...fields,
});

interface A2aCase {
  readonly name: string;
  readonly events: readonly Record<string, unknown>[];
  readonly outcomes: readonly A2aOutcome[];
  readonly states?: readonly (readonly string[])[];
  readonly replies?: readonly (string | null)[];
  readonly stoppedAt?: readonly (string | null)[];
}

const a2aCases: readonly A2aCase[] = [
  {
    name: '(12.47) a call that completes: the request, submitted → working → completed, the reply, the tool’s verdict',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), state('submitted'), state('working'), state('completed'), state('completed', { size: 9, text: 'the draft' }), toolCall('ok')],
    outcomes: ['completed'],
    states: [['submitted', 'working', 'completed']],
    replies: ['the draft'],
  },
  {
    name: '(12.47) a task that fails stops at failed, with the tool’s error',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), state('submitted'), state('failed'), state('failed', { text: '' }), toolCall('error', { error: 'the tool answered with an error (80 bytes)' })],
    outcomes: ['stopped'],
    states: [['submitted', 'failed']],
    stoppedAt: ['failed'],
  },
  {
    name: '(12.48) with capture off the reply is told from a state change by its size or its repeated state, and holds no text',
    events: [start(false), a2a('outbound', { size: 5 }), state('working'), state('completed'), state('completed', { size: 9 })],
    outcomes: ['completed'],
    states: [['working', 'completed']],
    replies: [null],
  },
  {
    name: '(12.48) capture off, a final state never seen before and nothing back: the call closes with its tool.call',
    events: [start(false), a2a('outbound', { size: 5 }), state('working'), state('rejected'), toolCall('error')],
    outcomes: ['stopped'],
    states: [['working', 'rejected']],
    stoppedAt: ['rejected'],
  },
  {
    name: '(12.48) a plain message reply (no task) is a reply with no state: replied, then completed by its tool.call',
    events: [start(true), a2a('outbound', { size: 2, text: 'hi' }), a2a('inbound', { size: 5, text: 'hello' })],
    outcomes: ['replied'],
    states: [[]],
    replies: ['hello'],
  },
  {
    name: '(12.48) two parallel calls of one node to one skill pair their replies by callId, whatever the order',
    events: [
      start(true),
      a2a('outbound', { callId: 'a', size: 1, text: 'A' }),
      a2a('outbound', { callId: 'b', size: 1, text: 'B' }),
      state('completed', { callId: 'b' }),
      state('completed', { callId: 'b', size: 7, text: 'reply B' }),
      state('completed', { callId: 'a' }),
      state('completed', { callId: 'a', size: 7, text: 'reply A' }),
    ],
    outcomes: ['completed', 'completed'],
    replies: ['reply A', 'reply B'],
  },
  {
    name: '(12.48) where callId cannot pair (every call with the same id), a reply goes to the oldest open request of the same node to the same skill',
    events: [
      start(true),
      a2a('outbound', { callId: 'same', size: 1, text: 'A' }),
      a2a('outbound', { callId: 'same', size: 1, text: 'B' }),
      a2a('inbound', { callId: 'same', size: 7, text: 'first reply' }),
      a2a('inbound', { callId: 'same', size: 8, text: 'second reply' }),
    ],
    outcomes: ['replied', 'replied'],
    replies: ['first reply', 'second reply'],
  },
  {
    name: '(12.48) a reply whose callId matches no open request goes to the oldest open request of that node and skill, never another node’s',
    events: [
      start(true),
      a2a('outbound', { callId: 'x', size: 1, text: 'A' }),
      a2a('outbound', { callId: 'y', nodeId: 'critic', size: 1, text: 'B' }),
      a2a('inbound', { callId: '', size: 5, text: 'reply' }),
    ],
    outcomes: ['replied', 'in-flight'],
    replies: ['reply', null],
  },
  {
    name: '(12.47) a remote’s question: input-required, the person’s answer sent on the same call, then completed',
    events: [
      start(true),
      a2a('outbound', { size: 5, text: 'notes' }),
      state('submitted'),
      state('input-required'),
      { type: 'approval.requested', approvalId: 'q1', nodeId: 'writer', kind: 'Input', digest: 'd', size: 10, complete: true, expiresAt: '2026-12-05T11:00:00Z' },
      { type: 'approval.decided', approvalId: 'q1', nodeId: 'writer', kind: 'Input', decision: 'approved', waitMs: 4000, comment: '2.4' },
      a2a('outbound', { size: 3, text: '2.4' }),
      state('working'),
      state('completed'),
      state('completed', { size: 5, text: 'draft' }),
      toolCall('ok'),
    ],
    outcomes: ['completed'],
    states: [['submitted', 'input-required', 'working', 'completed']],
    replies: ['draft'],
  },
  {
    name: '(12.47) waiting for the remote, then for a person’s answer, while the run is live',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), state('working'), a2a('outbound', { callId: 'call_writer_1', size: 1, text: 'x' }), state('input-required', { callId: 'call_writer_1' })],
    outcomes: ['in-flight', 'asking'],
  },
  {
    name: '(12.47) a new request while another call asks, with no answer decided, is a call of its own',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), state('input-required'), a2a('outbound', { size: 4, text: 'more' })],
    outcomes: ['asking', 'in-flight'],
  },
  {
    name: '(12.47) a call cut short by the run’s end stops where its task stood',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), state('submitted'), state('working'), toolCall('cancelled'), end],
    outcomes: ['stopped'],
    stoppedAt: ['working'],
  },
  {
    name: '(12.47) a call still open when run.end came stopped there too',
    events: [start(true), a2a('outbound', { size: 5, text: 'notes' }), end],
    outcomes: ['stopped'],
    stoppedAt: [null],
  },
  {
    name: '(12.47) a call refused before anything was sent (no a2a.message) is listed as not sent',
    events: [start(true), toolCall('refused', { error: 'refused before it ran: budget maxRemoteCalls is spent', durationMs: 0 })],
    outcomes: ['not-sent'],
  },
];

describe('A2A calls folded from the events', () => {
  it.each(a2aCases)('$name', ({ events: bodies, outcomes, states, replies, stoppedAt }) => {
    const calls = foldRemoteCalls(events(...bodies)).a2a;
    expect(calls.map((c) => c.outcome)).toEqual(outcomes);
    if (states !== undefined) expect(calls.map((c) => c.states.map((s) => s.state))).toEqual(states);
    if (replies !== undefined) expect(calls.map((c) => (c.reply?.content.kind === 'text' ? c.reply.content.text : null))).toEqual(replies);
    if (stoppedAt !== undefined) expect(calls.map((c) => c.stoppedAt)).toEqual(stoppedAt);
  });

  it('(12.47) keep the request and answers with their sizes, the reply, and the duration from the tool.call', () => {
    const [call] = foldRemoteCalls(events(...(a2aCases[8]?.events ?? []))).a2a;
    expect(call).toMatchObject({ nodeId: 'writer', entry: 'demo-writer', skill: 'draft', callId: 'call_writer_0', durationMs: 1500, verdict: { status: 'ok', error: null, dryRun: false } });
    expect(call?.sent).toMatchObject([
      { kind: 'request', size: 5, content: { kind: 'text', text: 'notes' } },
      { kind: 'answer', size: 3, content: { kind: 'text', text: '2.4' } },
    ]);
    expect(call?.reply).toMatchObject({ size: 5, state: 'completed', seq: 10 });
  });

  it('(12.48) with capture off, sizes stay and every text says it was not captured', () => {
    const [call] = foldRemoteCalls(events(...(a2aCases[2]?.events ?? []))).a2a;
    expect(call?.sent[0]).toMatchObject({ size: 5, content: { kind: 'off' } });
    expect(call?.reply).toMatchObject({ size: 9, content: { kind: 'off' } });
    // No tool.call yet: the duration is the time between the request and the reply (1 s a step).
    expect(call?.durationMs).toBe(3000);
  });

  it('never throw on events of an odd shape, and leave out directions that are neither', () => {
    const odd = events(
      { type: 'a2a.message', direction: 'sideways', size: 'big' },
      { type: 'a2a.message', direction: 'outbound', nodeId: 7, size: -1, text: 42 },
      { type: 'a2a.message', direction: 'inbound', taskState: 3 },
      { type: 'tool.call', reference: 'a2a:nodot' },
      { type: 'tool.call', reference: 12 },
      { type: 'mcp.call' },
      { type: 'approval.decided', kind: 'Input', decision: 'approved' },
    );
    const calls = foldRemoteCalls(odd);
    expect(calls.a2a).toHaveLength(1);
    expect(calls.a2a[0]).toMatchObject({ nodeId: '', sent: [{ size: 0 }], reply: { state: null } });
    expect(calls.mcp).toMatchObject([{ nodeId: '', tool: '', status: 'unknown', durationMs: null, resultSize: null }]);
  });
});

describe('MCP calls folded from the events (12.51)', () => {
  const mcp = (fields: Record<string, unknown> = {}) => ({ type: 'mcp.call', nodeId: 'research', entry: 'demo-tools', tool: 'search_articles', callId: 'c1', status: 'ok', durationMs: 120, resultSize: 42, ...fields });
  const mcpTool = (status: string, fields: Record<string, unknown> = {}) => ({ type: 'tool.call', nodeId: 'research', entry: 1, tool: 'mcp_demo_tools_search_articles', reference: 'mcp:demo-tools.search_articles', callId: 'c1', status, durationMs: 125, resultSize: 42, ...fields });

  const cases = [
    {
      name: '(12.51) with capture on, each call with its arguments and result',
      bodies: [start(true), mcp({ arguments: '{"query":"orrery"}', result: 'three articles' }), mcpTool('ok')],
      want: [{ sent: true, status: 'ok', durationMs: 120, resultSize: 42, arguments: { kind: 'text', text: '{"query":"orrery"}' }, result: { kind: 'text', text: 'three articles' }, verdict: { status: 'ok' } }],
    },
    {
      name: '(12.51) with capture off, names, status, duration and size only',
      bodies: [start(false), mcp()],
      want: [{ sent: true, arguments: { kind: 'off' }, result: { kind: 'off' }, verdict: null }],
    },
    {
      name: '(12.51) an empty result with capture on is empty; a result past the run’s content cap says so',
      bodies: [start(true), mcp({ resultSize: 0, arguments: '{}' }), mcp({ callId: 'c2', resultSize: 10 })],
      want: [
        { result: { kind: 'empty' }, arguments: { kind: 'text', text: '{}' } },
        { result: { kind: 'capped' }, arguments: { kind: 'capped' } },
      ],
    },
    {
      name: '(12.51) a call refused before it ran (a tool.call and no mcp.call) is listed as never sent',
      bodies: [start(true), mcpTool('refused', { error: 'refused before it ran: budget maxToolCalls is spent', durationMs: 0, arguments: '{}' })],
      want: [{ sent: false, status: null, verdict: { status: 'refused', error: 'refused before it ran: budget maxToolCalls is spent' }, arguments: { kind: 'text', text: '{}' } }],
    },
    {
      name: '(12.51) two nodes calling one tool are told apart (7.4), each tool.call finding its own call',
      bodies: [start(false), mcp(), mcp({ nodeId: 'critic', callId: 'c1' }), mcpTool('ok', { nodeId: 'critic' }), mcpTool('ok')],
      want: [
        { nodeId: 'research', verdict: { status: 'ok' } },
        { nodeId: 'critic', verdict: { status: 'ok' } },
      ],
    },
  ];

  it.each(cases)('$name', ({ bodies, want }) => {
    const calls = foldRemoteCalls(events(...bodies)).mcp;
    expect(calls).toHaveLength(want.length);
    expect(calls).toMatchObject(want);
  });
});

describe('what a run’s remote calls rest on', () => {
  it.each([
    { value: 'text', captured: true, size: 4, want: { kind: 'text', text: 'text' } },
    { value: '', captured: true, size: 0, want: { kind: 'empty' } },
    { value: undefined, captured: false, size: 9, want: { kind: 'off' } },
    { value: null, captured: true, size: 0, want: { kind: 'empty' } },
    { value: undefined, captured: true, size: 9, want: { kind: 'capped' } },
    { value: undefined, captured: true, size: null, want: { kind: 'capped' } },
  ])('content $value (captured: $captured, size $size) is $want.kind', ({ value, captured, size, want }) => {
    expect(contentOf(captured, value, size)).toEqual(want);
  });

  it.each([
    { ref: 'a2a:demo-writer.draft', want: { kind: 'a2a', entry: 'demo-writer', name: 'draft' } },
    { ref: 'mcp:demo-tools.search.v2', want: { kind: 'mcp', entry: 'demo-tools', name: 'search.v2' } },
    { ref: 'http:x.y', want: null },
    { ref: 'mcp:nodot', want: null },
    { ref: 7, want: null },
  ])('the tool reference $ref splits at its first dot', ({ ref, want }) => {
    expect(parseToolRef(ref)).toEqual(want);
  });

  it('(12.49, 12.51) the entries a run uses come from its spec’s tools, then from its events, sorted', () => {
    const calls = foldRemoteCalls(events(start(false), a2a('outbound', { entry: 'other-agent', size: 1 })));
    expect(usedEntries(['mcp:demo-tools.search_articles', 'a2a:demo-writer.draft', 'mcp:demo-tools.get_article', 'nonsense'], calls)).toEqual({ a2a: ['demo-writer', 'other-agent'], mcp: ['demo-tools'] });
  });
});
