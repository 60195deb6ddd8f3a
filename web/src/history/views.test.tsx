import type { ReactElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { parseRun, type Run } from '../api/runs.ts';
import { SessionContext, type Session } from '../app/session.tsx';
import { ComparisonView, NodesTable, TotalsTable, type SideState } from './ComparePage.tsx';
import { GENERATED_NODES, generatedRun, traceEvents } from './generated-run.ts';
import { ServerTable } from './HistoryPage.tsx';
import { ReplayView } from './ReplayPage.tsx';
import { replayInstant } from './replay.ts';

function run(name: string, status: Record<string, unknown> = {}, owner = 'alice'): Run {
  const parsed = parseRun({
    metadata: { name, namespace: 'team-a', creationTimestamp: '2026-12-05T10:00:00Z' },
    spec: { owner, input: 'x', compositionRef: { name: 'critic-loop' } },
    status: { phase: 'Succeeded', composition: { name: 'critic-loop', revision: 3, digest: 'd' }, ...status },
  });
  if (parsed === null) throw new Error('not a run');
  return parsed;
}

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };
const small = traceEvents([
  { type: 'run.start', composition: 'critic-loop', pattern: 'Loop', nodes: 2, budgets, captureContent: false, dryRunTools: false, inputSize: 1 },
  { type: 'node.enter', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, inputSize: 1 },
  { type: 'node.exit', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, status: 'ok', tokens: 120, modelCalls: 1, durationMs: 900, answerSize: 1 },
  { type: 'run.end', outcome: 'Succeeded', totals: { tokens: 120, toolCalls: 0, delegations: 0, remoteCalls: 0, wallTimeMs: 3000 }, dropped: 0, outputSize: 1 },
]);

/** Every `<th>` of a table has a scope (or is an empty corner `<td>`). */
function expectScopedHeaders(html: string): void {
  const heads = html.match(/<th\b[^>]*>/g) ?? [];
  expect(heads.length).toBeGreaterThan(0);
  for (const head of heads) expect(head).toMatch(/scope="(col|row|colgroup)"/);
}

const side = (name: string, events = small, runValue: Run | null = run(name)): SideState => ({
  key: { namespace: 'team-a', name },
  loading: false,
  run: runValue,
  runProblem: null,
  model: replayInstant(events, []),
  eventsProblem: null,
});

describe('the compare page', () => {
  it('writes totals as an accessible table with a caption, scoped headers and B − A', () => {
    const bigger = traceEvents([
      { type: 'run.start', composition: 'critic-loop', pattern: 'Loop', nodes: 2, budgets, captureContent: false, dryRunTools: false, inputSize: 1 },
      { type: 'run.end', outcome: 'Failed', totals: { tokens: 150, toolCalls: 2, delegations: 0, remoteCalls: 0, wallTimeMs: 2500 }, dropped: 0, outputSize: 1 },
    ]);
    const html = renderToStaticMarkup(<TotalsTable a={{ run: null, model: replayInstant(small, []) }} b={{ run: null, model: replayInstant(bigger, []) }} />);
    expect(html).toContain('<caption');
    expect(html).toContain('Totals');
    expectScopedHeaders(html);
    expect(html).toContain('B − A');
    expect(html).toContain('+30'); // tokens
    expect(html).toContain('−500 ms'); // wall time
    expect(html).toContain('+2'); // tool calls
  });

  it('groups the per-node figures under scoped column groups and marks a node only one run entered', () => {
    const html = renderToStaticMarkup(<NodesTable a={{ run: null, model: replayInstant(small, []) }} b={{ run: null, model: replayInstant(generatedRun(30).events, []) }} />);
    expect(html).toContain('scope="colgroup"');
    expectScopedHeaders(html);
    expect(html).toContain('Per node');
    expect(html).toContain('ran only in B'); // critic
    expect(html).toContain('<span class="sr-only">not known</span>');
  });

  it('shows a run that cannot be read with its problem, and the other run still', () => {
    const missing: SideState = {
      key: { namespace: 'team-a', name: 'gone' },
      loading: false,
      run: null,
      runProblem: { status: 404, code: 'not_found', message: 'no run team-a/gone of yours', loc: [], retryAfterSeconds: null },
      model: null,
      eventsProblem: null,
    };
    const html = renderToStaticMarkup(<ComparisonView a={missing} b={side('b')} />);
    expect(html).toContain('role="alert"');
    expect(html).toContain('Reading run A failed (404):');
    expect(html).toContain('no run team-a/gone of yours');
    expect(html).toContain('team-a/b');
    expect(html).toContain('Succeeded');
    expect(html).toContain('120');
  });

  it('warns when the runs ran different revisions', () => {
    const html = renderToStaticMarkup(
      <ComparisonView a={side('a')} b={side('b', small, run('b', { composition: { name: 'critic-loop', revision: 4, digest: 'e' } }))} />,
    );
    expect(html).toContain('Not like for like');
    expect(html).toContain('revision 3 of “critic-loop” and B ran revision 4');
  });
});

describe('the history page', () => {
  const noop = () => undefined;

  it('lists the server’s runs with a Replay for finished ones, Follow for live ones, and A and B to compare', () => {
    const runs = [run('done-1'), run('live-1', { phase: 'Running' }), run('theirs', {}, 'bob')];
    const session: Session = { token: 't', me: { username: 'alice', groups: [], person: true, namespaces: ['team-a'] }, api: {}, namespace: 'team-a', setNamespace: noop, signOut: noop, expire: noop };
    const html = renderToStaticMarkup(
      <SessionContext value={session}>
        <ServerTable runs={runs} username="alice" selection={{ a: { namespace: 'team-a', name: 'done-1' }, b: null }} onChoose={noop} filtered={false} loading={false} />
      </SessionContext>,
    );
    expectScopedHeaders(html);
    // Show puts the spec a run ran on the canvas (12.60).
    expect(html).toMatch(/Show<span class="sr-only"> team-a\/done-1 on the canvas<\/span>/);
    expect(html).toContain('3 runs, newest first');
    expect(html).toContain('href="#/runs/team-a/done-1/replay"');
    expect(html).toContain('href="#/runs/team-a/live-1"');
    expect(html).toMatch(/Follow<span class="sr-only"> team-a\/live-1 live<\/span>/);
    expect(html).not.toContain('href="#/runs/team-a/live-1/replay"');
    expect(html).toMatch(/aria-pressed="true"[^>]*aria-label="Compare team-a\/done-1 as A"/);
    expect(html).toContain('approver');
  });

  it('says why the list is empty', () => {
    expect(renderToStaticMarkup(<ServerTable runs={[]} username="alice" selection={{ a: null, b: null }} onChoose={noop} filtered loading={false} />)).toContain(
      'No run of yours matches these filters.',
    );
  });
});

describe('the replay page', () => {
  const session: Session = { token: 't', me: { username: 'alice', groups: [], person: true, namespaces: ['team-a'] }, api: {}, namespace: 'team-a', setNamespace: () => undefined, signOut: () => undefined, expire: () => undefined };
  const signedIn = (view: ReactElement) => renderToStaticMarkup(<SessionContext value={session}>{view}</SessionContext>);

  it('at the end shows the outcome, the totals, every node and a labelled slider', () => {
    const { events } = generatedRun(2000);
    const html = signedIn(
      <ReplayView namespace="team-a" name="loop-1" run={run('loop-1')} spec={{ ok: true, value: { name: 'critic-loop', revision: 3, digest: 'd', spec: { nodes: GENERATED_NODES } } }} events={events} complete initialPosition={events.length} />,
    );
    expect(html).toContain('Replay of loop-1');
    expect(html).toContain('critic-loop</span>, revision 3');
    expect(html).toContain(`Seq ${events.length.toLocaleString('en')} of ${events.length.toLocaleString('en')}`);
    expect(html).toMatch(/<label for="([^"]+)"[^>]*>Position<\/label>/);
    expect(html).toContain('type="range"');
    expect(html).toContain('Outcome');
    expect(html).toContain('Wall time');
    expect(html).toContain('skipped'); // publish
    expect(html).toContain('Play again');
    expect(html).toContain('Instant replay');
    expect(html).toMatch(/critic → draft<\/span><span class="tabular-nums">[\d,]+ of 10,000/); // the loop's counter
    expectScopedHeaders(html);
  });

  it('at the start invites to play, and says the spec could not be read when it could not', () => {
    const html = signedIn(
      <ReplayView
        namespace="team-a"
        name="r"
        run={run('r')}
        spec={{ ok: false, problem: { status: 403, code: 'forbidden', message: 'grant controllerrevisions get', loc: [], retryAfterSeconds: null } }}
        events={small}
        complete
      />,
    );
    expect(html).toContain('Before the first event');
    expect(html).toContain('>Play<');
    expect(html).toContain('grant controllerrevisions get');
    expect(html).not.toContain('Wall time');
  });

  it('puts the graph in its slot with the model and its version', () => {
    const html = signedIn(
      <ReplayView
        namespace="team-a"
        name="r"
        run={run('r')}
        spec={{ ok: true, value: { name: 'critic-loop', revision: 3, digest: 'd', spec: { nodes: [] } } }}
        events={small}
        complete
        initialPosition={2}
        renderGraph={({ model, version }) => <div id="graph-slot">{`seq ${model.lastSeq} v${version}`}</div>}
      />,
    );
    expect(html).toMatch(/<div id="graph-slot">seq 2 v\d+<\/div>/);
  });
});
