// The live run panel in Chromium against the real sidecar (issue 23, rules 12.31–12.46): alice
// starts a human-review run through the API with her own token, opens its panel, sees the
// graph of the spec it ran with its edges' labels (12.46), the review node "awaiting you", and a
// timeline listing every event once, seqs 1..N; then cancels it from the panel. A run whose
// token budget runs out shows that as a card of its own (12.34). Run by tests/tests/e2e_console.rs with the
// environment below; self-contained (signs in by pasting the token).

import { type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { api, consoleUrl, field, runPath, signIn, startRun, timelineSeqs } from './studio-api.ts';

const namespace = (): string => readConsoleEnv().namespace;
const alice = (): string => readConsoleEnv().alice.token;

/** Alice starts a run (`body`: what `POST /api/v1/runs/{ns}` takes), signs in and opens its panel; returns its name. */
async function openNewRun(page: Page, body: Record<string, unknown>): Promise<string> {
  const { name } = await startRun(alice(), namespace(), body);
  await signIn(page, alice());
  await page.goto(`${consoleUrl()}/#/runs/${encodeURIComponent(namespace())}/${encodeURIComponent(name)}`);
  return name;
}

test.describe('the live run panel', () => {
  test('alice follows her human-review run live: the graph, the review awaiting her, every event once, then Cancel', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    test.setTimeout(180_000);
    const name = await openNewRun(page, { compositionRef: { name: 'human-review' }, input: 'version 2.4' });
    await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();

    // The graph of the spec the run ran, each node named with its id, kind and state.
    const graph = page.getByRole('application', { name: /^Graph of human-review/ });
    await expect(graph).toBeVisible({ timeout: 30_000 });
    for (const [id, kind] of [
      ['draft', 'LLMAgent'],
      ['review', 'HumanApproval'],
      ['publish', 'LLMAgent'],
    ] as const) {
      await expect(graph.getByRole('group', { name: new RegExp(`^${id}, ${kind}, `) })).toBeVisible();
    }

    // Edges are drawn with their labels (12.46): named for a screen reader with their label, and
    // the label drawn on screen between the two nodes it joins.
    await expect(graph.getByRole('img', { name: /^draft to review: (not taken|taken 1 time)/ })).toHaveCount(1);
    await expect(graph.getByRole('img', { name: /^review to publish \(approved\): not taken/ })).toHaveCount(1);
    const approvedLabel = graph.getByText('approved', { exact: true });
    await expect(approvedLabel).toBeVisible();
    const [from, to, label] = await Promise.all([
      graph.getByRole('group', { name: /^review, HumanApproval, / }).boundingBox(),
      graph.getByRole('group', { name: /^publish, LLMAgent, / }).boundingBox(),
      approvedLabel.boundingBox(),
    ]);
    if (from === null || to === null || label === null) throw new Error('the review, publish or label box is not on screen');
    const centre = (box: { x: number; y: number; width: number; height: number }) => ({ x: box.x + box.width / 2, y: box.y + box.height / 2 });
    const [a, b, l] = [centre(from), centre(to), centre(label)];
    expect(l.x, 'the label lies between review and publish (x)').toBeGreaterThanOrEqual(Math.min(a.x, b.x) - 1);
    expect(l.x, 'the label lies between review and publish (x)').toBeLessThanOrEqual(Math.max(a.x, b.x) + 1);
    expect(l.y, 'the label lies between review and publish (y)').toBeGreaterThanOrEqual(Math.min(a.y, b.y) - from.height);
    expect(l.y, 'the label lies between review and publish (y)').toBeLessThanOrEqual(Math.max(a.y, b.y) + from.height);

    // The run reaches the review and waits for alice.
    const review = graph.getByRole('group', { name: /^review, HumanApproval, awaiting you/ });
    await expect(review).toBeVisible({ timeout: 120_000 });
    await expect(review).toContainText('awaiting you');
    await expect(page.getByText(/1 approval waits/)).toBeVisible();
    await axe('run-panel');

    // The timeline lists every stored event once: seqs 1..N, N as the sidecar has them.
    const stored = await api(alice(), `${runPath(namespace(), name)}/events?after=0&limit=500`);
    expect(stored.status).toBe(200);
    const events = field(stored.body, 'events');
    if (!Array.isArray(events)) throw new Error('no events page');
    const n = events.length;
    expect(n).toBeGreaterThan(3);
    const region = page.getByRole('region', { name: 'Timeline of events' });
    await expect(page.getByText(`${n} events, oldest first.`)).toBeVisible();
    expect((await timelineSeqs(region)).seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1));

    // Enter on a focused node shows its details.
    await graph.getByRole('group', { name: /^draft, LLMAgent/ }).focus();
    await page.keyboard.press('Enter');
    await expect(page.getByRole('tab', { name: 'Node details: draft', selected: true })).toBeVisible();

    // Cancel, with its confirmation; the run ends Cancelled and the panel says so.
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page.getByRole('button', { name: 'Yes, cancel the run' }).click();
    await expect(page.getByText('The run ended: Cancelled', { exact: false })).toBeVisible({ timeout: 60_000 });
  });

  test('approving on the panel says what it came to, keeps the focus there, and the run goes on to its end', async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    test.setTimeout(180_000);
    await openNewRun(page, { compositionRef: { name: 'human-review' }, input: 'version 2.7' });
    const cards = page.getByRole('region', { name: 'Approvals waiting for a decision' });
    const text = cards.getByRole('region', { name: /^Text under review/ });
    await expect(page.getByRole('application', { name: /^Graph of human-review/ }).getByRole('group', { name: /^review, HumanApproval, awaiting you/ })).toBeVisible({ timeout: 120_000 });
    try {
      await expect(text).toBeVisible({ timeout: 20_000 });
    } catch (e) {
      console.log('the review awaits alice but no card shows; the page holds:', (await page.locator('main').innerHTML()).slice(0, 6000));
      throw e;
    }
    await expect(cards.getByText(/^Digest checked/)).toBeVisible();
    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const approve = cards.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();

    // The run's approval.decided arrives while the decision is answered: the outcome stays, with the focus.
    await expect(page.locator(':focus')).toContainText('Approved.', { timeout: 45_000 });
    await expect(page.getByText('The run ended: Succeeded', { exact: false })).toBeVisible({ timeout: 60_000 });
    await expect(page.getByRole('region', { name: 'Approvals decided here' })).toContainText('Approved.');
  });

  test('a budget that runs out is a card of its own naming the budget, its limit and the node that ran', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    test.setTimeout(180_000);
    // The notes pipeline with its token budget lowered to 5: the scripted model's first reply
    // already spends more, so the run stops at draft, BudgetExhausted (rule 12.34).
    await openNewRun(page, { compositionRef: { name: 'notes' }, input: 'version 2.5', budgets: { maxTokens: 5 } });
    const card = page.getByRole('region', { name: 'Tokens budget spent' });
    await expect(card).toBeVisible({ timeout: 120_000 });
    await expect(card).toContainText(/The run used [\d,]+ tokens, over its limit of 5, while node draft ran, so it stops/);
    const graph = page.getByRole('application', { name: /^Graph of notes/ });
    await expect(graph.getByRole('group', { name: /^draft, LLMAgent, .*Tokens budget ran out here/ })).toBeVisible();
    await expect(page.getByText('The run ended: Budget exhausted', { exact: false })).toBeVisible({ timeout: 60_000 });
    await expect(graph.getByRole('group', { name: /^publish, LLMAgent, skipped/ })).toBeVisible();
    await axe('run-budget-hit');

    await card.getByRole('button', { name: 'Show node draft' }).click();
    await expect(page.getByRole('tab', { name: 'Node details: draft', selected: true })).toBeVisible();
  });
});

