import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { NodeState } from '../run/model.ts';
import { NodeCard } from './NodeCard.tsx';
import { loopText, nodeAriaLabel, type NodeCardData } from './node-card.ts';

const base: NodeCardData = {
  id: 'review',
  kind: 'HumanApproval',
  state: 'idle',
  entries: 0,
  tokens: 0,
  durationMs: 0,
  calls: 0,
  model: null,
  label: null,
  loop: null,
  budgetHit: null,
};

const states: readonly (readonly [NodeState, string])[] = [
  ['idle', 'not reached'],
  ['running', 'running'],
  ['awaiting', 'awaiting you'],
  ['ok', 'ok'],
  ['failed', 'failed'],
  ['stopped', 'stopped'],
  ['expired', 'expired'],
  ['skipped', 'skipped'],
];

/** The markup's text, tags dropped. */
function text(html: string): string {
  return html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
}

describe('a node of the run graph', () => {
  it.each(states)('says its state %s in words, beside its id and kind', (state, words) => {
    const html = renderToStaticMarkup(<NodeCard data={{ ...base, state }} selected={false} />);
    expect(html).toContain(`data-state="${state}"`);
    expect(text(html)).toContain(`review HumanApproval`);
    expect(text(html)).toContain(words);
    expect(nodeAriaLabel({ ...base, state })).toBe(`review, HumanApproval, ${words}`);
  });

  it('haloes the running node, pulsing only for people who allow motion', () => {
    const html = renderToStaticMarkup(<NodeCard data={{ ...base, state: 'running' }} selected={false} />);
    expect(html).toContain('motion-safe:animate-pulse');
    expect(html).toContain('aria-hidden="true"');
    const done = renderToStaticMarkup(<NodeCard data={{ ...base, state: 'ok' }} selected={false} />);
    expect(done).not.toContain('animate-pulse');
  });

  it('shows what a finished node spent, its label and how often it ran', () => {
    const data: NodeCardData = { ...base, id: 'writer', kind: 'LLMAgent', state: 'ok', entries: 2, tokens: 1234, durationMs: 2500, calls: 1, label: 'approved' };
    const shown = text(renderToStaticMarkup(<NodeCard data={data} selected={false} />));
    expect(shown).toContain('1,234 tokens · 2.50 s · 1 call');
    expect(shown).toContain('→ approved');
    expect(nodeAriaLabel(data)).toBe('writer, LLMAgent, ok; entered 2 times; 1,234 tokens · 2.50 s · 1 call; last label approved');
  });

  it('shows its model before it runs', () => {
    expect(text(renderToStaticMarkup(<NodeCard data={{ ...base, kind: 'LLMAgent', model: 'scripted' }} selected={false} />))).toContain('model scripted');
  });

  it('shows the loop round on the node a loop returns to, and when the cap was reached', () => {
    const data: NodeCardData = { ...base, id: 'writer', kind: 'LLMAgent', loop: { iteration: 1, max: 2, stopped: false } };
    expect(text(renderToStaticMarkup(<NodeCard data={data} selected={false} />))).toContain('loop 1/2');
    expect(loopText({ iteration: 3, max: 2, stopped: true })).toBe('loop 2/2, cap reached');
    expect(nodeAriaLabel(data)).toBe('writer, LLMAgent, not reached; loop 1/2');
  });

  it('names the budget that ran out while it ran', () => {
    const data: NodeCardData = { ...base, id: 'writer', kind: 'LLMAgent', state: 'stopped', entries: 1, budgetHit: 'Tokens' };
    expect(text(renderToStaticMarkup(<NodeCard data={data} selected={false} />))).toContain('Tokens budget spent');
    expect(nodeAriaLabel(data)).toContain('Tokens budget ran out here');
  });

  it('draws the selected node with an outline', () => {
    expect(renderToStaticMarkup(<NodeCard data={base} selected />)).toContain('outline-3');
    expect(renderToStaticMarkup(<NodeCard data={base} selected={false} />)).not.toContain('outline-3');
  });
});
