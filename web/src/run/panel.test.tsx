import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { BudgetHitCards, Budgets, meterText } from './Budgets.tsx';
import { RunModel } from './model.ts';
import { CapturedContent } from './NodeDetails.tsx';
import { Tabs, tabKeyTarget } from './Tabs.tsx';
import { events } from './test-events.ts';
import { clockTime, Timeline } from './Timeline.tsx';
import { Totals } from './Totals.tsx';

const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };
const noop = () => undefined;

describe('the panel\'s tabs', () => {
  it('move with the arrows (wrapping), Home and End, and ignore other keys', () => {
    expect(tabKeyTarget('ArrowRight', 2, 3)).toBe(0);
    expect(tabKeyTarget('ArrowLeft', 0, 3)).toBe(2);
    expect(tabKeyTarget('Home', 2, 3)).toBe(0);
    expect(tabKeyTarget('End', 0, 3)).toBe(2);
    expect(tabKeyTarget('Enter', 0, 3)).toBeNull();
  });

  it('mark the selected tab, give it the only tab stop, and label its panel by it', () => {
    const html = renderToStaticMarkup(
      <Tabs label="About the run" selected="b" onSelect={noop} tabs={[{ id: 'a', label: 'A', panel: 'first' }, { id: 'b', label: 'B', panel: 'second' }]} />,
    );
    expect(html).toContain('role="tablist" aria-label="About the run"');
    expect(html).toMatch(/aria-selected="false" aria-controls="[^"]+" tabindex="-1"[^>]*>A</);
    expect(html).toMatch(/aria-selected="true" aria-controls="[^"]+" tabindex="0"[^>]*>B</);
    expect(html).toContain('second');
    expect(html).not.toContain('first');
  });
});

describe('the timeline', () => {
  const many = events(...Array.from({ length: 2000 }, (_, i) => ({ type: 'tool.call', nodeId: 'research', entry: 1, tool: `t${i}`, callId: `c${i}`, status: 'ok', durationMs: 1, resultSize: 0 })));

  it('draws only the rows in view of 2,000 events, and tells how many rows there are', () => {
    const html = renderToStaticMarkup(<Timeline events={many} count={many.length} selectedNode={null} live />);
    const rows = html.match(/data-seq="/g) ?? [];
    expect(rows.length).toBeLessThan(40);
    expect(html).toContain('aria-rowcount="2001"');
    expect(html).toContain('role="region" aria-label="Timeline of events"');
    expect(html).toContain('tabindex="0"');
    expect(html).toContain('2,000 events, oldest first.');
  });

  it('writes each event\'s seq, time, type, node and what it says', () => {
    const one = events({ type: 'route.taken', nodeId: 'review', label: 'approved', to: 'publish' });
    const html = renderToStaticMarkup(<Timeline events={one} count={1} selectedNode="review" live={false} />);
    expect(html).toContain('aria-rowindex="2"');
    expect(html).toContain('>10:00:00.000<');
    expect(html).toContain('>route.taken<');
    expect(html).toContain('>review<');
    expect(html).toContain('chose approved → publish');
    expect(clockTime('2026-12-05T10:15:03.120Z')).toBe('10:15:03.120');
  });
});

describe('the budgets', () => {
  it('are meters with their limit, what was used and a text a screen reader reads', () => {
    const used = { maxTokens: 250, maxToolCalls: 10, maxDelegations: 0, maxRemoteCalls: 0, timeoutSeconds: 42.4 };
    const hit = events({ type: 'budget.hit', budget: 'maxToolCalls', limit: 10, used: 10, nodeId: 'research' });
    const html = renderToStaticMarkup(<Budgets limits={budgets} used={used} waitMs={65000} hits={hit.flatMap((e) => (e.type === 'budget.hit' ? [e] : []))} started />);
    expect(html).toContain('role="meter"');
    expect(html).toContain('aria-valuemax="1000" aria-valuenow="250" aria-valuetext="250 of 1,000"');
    expect(html).toContain('aria-valuetext="10 of 10, spent"');
    expect(html).toContain('leaving out the time people took to decide (1 min 05 s so far)');
    expect(meterText('timeoutSeconds', 42.4, 600)).toBe('42 s of 10 min 00 s');
    expect(meterText('timeoutSeconds', 0, 300)).toBe('0 s of 5 min 00 s');
  });

  it('give a spent budget its own card naming the budget, its limit and the node', () => {
    const [hit] = events({ type: 'budget.hit', budget: 'maxTokens', limit: 1000, used: 1002, nodeId: 'writer' });
    if (hit?.type !== 'budget.hit') throw new Error('not a budget.hit');
    const html = renderToStaticMarkup(<BudgetHitCards hits={[hit]} onShowNode={noop} />);
    expect(html).toContain('Tokens budget spent');
    expect(html).toContain('The run used 1,002 tokens, over its limit of 1,000, while node writer ran');
    expect(html).toContain('Show node writer');
  });
});

describe('the totals and the captured content', () => {
  it('wait for run.end, then give tokens by model, calls, time and dropped events', () => {
    expect(renderToStaticMarkup(<Totals totals={null} dropped={null} source="events" />)).toContain('The totals arrive when the run ends');
    const html = renderToStaticMarkup(
      <Totals totals={{ tokens: 1500, tokensByModel: { scripted: 1500 }, toolCalls: 3, delegations: 0, remoteCalls: 1, wallTimeMs: 12400 }} dropped={2} source="events" />,
    );
    expect(html).toContain('model scripted');
    expect(html).toContain('1,500');
    expect(html).toContain('12.4 s');
    expect(html).toContain('Events dropped');
  });

  it('says when a run does not capture content, and shows a node\'s input and answer when it does', () => {
    expect(renderToStaticMarkup(<CapturedContent captured={false} runInput="version 2.4" runOutput={null} node={null} />)).toContain('does not capture content');
    const model = new RunModel();
    model.applyAll(
      events(
        { type: 'run.start', composition: 'c', pattern: 'Pipeline', nodes: 1, budgets, captureContent: true, dryRunTools: false, inputSize: 3 },
        { type: 'node.enter', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, inputSize: 3, input: 'v2 <b>' },
        { type: 'node.exit', nodeId: 'draft', kind: 'LLMAgent', entry: 1, depth: 0, status: 'ok', tokens: 1, modelCalls: 1, durationMs: 1, answerSize: 5, answer: 'notes' },
      ),
    );
    const html = renderToStaticMarkup(<CapturedContent captured runInput="v2" runOutput={null} node={model.nodes.get('draft') ?? null} />);
    expect(html).toContain('Input of draft (its last entry)');
    expect(html).toContain('v2 &lt;b&gt;');
    expect(html).toContain('>notes<');
  });
});
