// History, replay and compare against the real sidecar (rules 12.59, 12.61–12.64), run by
// tests/tests/e2e_console.rs. Environment: ORRERY_CONSOLE_URL, ORRERY_CONSOLE_NAMESPACE,
// ORRERY_TOKEN_ALICE, and two finished runs of alice's of the same composition,
// ORRERY_CONSOLE_FINISHED_A and ORRERY_CONSOLE_FINISHED_B (names, or namespace/name).
// Self-contained for now: it signs in by pasting the token, as a person would.

import { type Page } from '@playwright/test';
import { expect, test } from './fixtures.ts';

const env = (name: string): string => process.env[name] ?? '';
const consoleUrl = env('ORRERY_CONSOLE_URL').replace(/\/$/, '');
const namespace = env('ORRERY_CONSOLE_NAMESPACE');
const token = env('ORRERY_TOKEN_ALICE');

function runName(variable: string): string {
  const value = env(variable);
  return value.includes('/') ? value.slice(value.indexOf('/') + 1) : value;
}
const runA = runName('ORRERY_CONSOLE_FINISHED_A');
const runB = runName('ORRERY_CONSOLE_FINISHED_B');

// Never skipped: run without the Studio's environment, these specs fail (a harness error is not
// a pass); checked per test, so collecting other files' specs does not need it.
test.beforeEach(() => {
  if (consoleUrl === '' || namespace === '' || token === '' || runA === '' || runB === '') {
    throw new Error('these specs need the real sidecar and two finished runs: ORRERY_CONSOLE_URL, _NAMESPACE, ORRERY_TOKEN_ALICE and ORRERY_CONSOLE_FINISHED_A/_B (tests/tests/e2e_console.rs sets them)');
  }
});

const count = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
/** As the console writes a difference: "+120", "−3" (a real minus sign), "0". */
const signed = (n: number): string => (n === 0 ? '0' : n > 0 ? `+${count.format(n)}` : `−${count.format(-n)}`);

/** A run as the API gives it to alice, for the figures the page must show. */
async function apiRun(page: Page, name: string): Promise<{ phase: string; tokens: number; events: number | null }> {
  const reply = await page.request.get(`${consoleUrl}/api/v1/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  expect(reply.status()).toBe(200);
  const body = (await reply.json()) as { status?: { phase?: string; totals?: { tokens?: number }; eventCount?: number } };
  return { phase: body.status?.phase ?? '', tokens: body.status?.totals?.tokens ?? 0, events: body.status?.eventCount ?? null };
}

/** Signs in as alice on the namespace's runs page (the namespace is then the session's); returns the page's errors, to be none. */
async function signIn(page: Page): Promise<string[]> {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${consoleUrl}/#/runs/${encodeURIComponent(namespace)}`);
  const field = page.getByLabel('Bearer token');
  await field.fill(token);
  await field.press('Enter');
  await expect(page.getByRole('navigation', { name: 'Console' })).toBeVisible();
  return errors;
}

async function openHistory(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'History' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'History' })).toBeVisible();
}

/** The row of `name` in "Your runs on the server", pressing Show more until it is there. */
async function serverRow(page: Page, name: string) {
  const section = page.getByRole('region', { name: 'Your runs on the server' });
  const link = section.getByRole('link', { name, exact: true });
  for (let i = 0; i < 20 && !(await link.isVisible()); i += 1) {
    const more = section.getByRole('button', { name: 'Show more' });
    if (!(await more.isVisible())) break;
    await more.click();
    await expect(more.or(link)).toBeVisible();
  }
  await expect(link).toBeVisible();
  return section.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
}

test.describe('history, replay and compare', () => {
  test('History lists both finished runs with a Replay each', async ({ page, axe }) => {
    const errors = await signIn(page);
    await openHistory(page);
    for (const name of [runA, runB]) {
      const row = await serverRow(page, name);
      await expect(row.getByRole('link', { name: `Replay ${namespace}/${name}` })).toBeVisible();
      await expect(row.getByRole('link', { name: /^Follow/ })).toHaveCount(0);
    }
    await axe('history');
    expect(errors).toEqual([]);
  });

  test('an instant replay ends with the run’s outcome and its totals', async ({ page, axe }) => {
    const expected = await apiRun(page, runA);
    const errors = await signIn(page);
    await openHistory(page);
    await (await serverRow(page, runA)).getByRole('link', { name: `Replay ${namespace}/${runA}` }).click();
    await expect(page.getByRole('heading', { level: 1, name: `Replay of ${runA}` })).toBeVisible();
    const position = page.getByTestId('replay-position');
    await expect(position).toHaveText(/^Before the first event/);
    await page.getByRole('button', { name: 'Instant replay' }).click();
    await expect(position).toHaveText(/^Seq ([\d,]+) of \1$/);
    if (expected.events !== null) await expect(position).toHaveText(`Seq ${count.format(expected.events)} of ${count.format(expected.events)}`);
    const outcome = page.getByRole('region', { name: /^Outcome/ });
    await expect(outcome).toBeVisible();
    await expect(outcome).toContainText(expected.phase === 'BudgetExhausted' ? 'Budget exhausted' : expected.phase);
    await expect(outcome).toContainText('Wall time');
    await expect(outcome.locator('dt', { hasText: 'Tokens' }).locator('xpath=following-sibling::dd[1]')).toHaveText(count.format(expected.tokens));
    await expect(page.getByRole('button', { name: 'Play again' })).toBeVisible();
    await axe('replay');
    // The benchmark's measure of it (web/bench/console-bench.mjs).
    expect(await page.evaluate(() => performance.getEntriesByName('orrery:replay-instant', 'measure').length)).toBe(1);
    expect(errors).toEqual([]);
  });

  test('the position slider moved by keyboard changes the event shown', async ({ page }) => {
    const errors = await signIn(page);
    await page.evaluate(
      ([ns, name]) => {
        window.location.hash = `#/runs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/replay`;
      },
      [namespace, runA] as const,
    );
    const slider = page.getByRole('slider', { name: 'Position' });
    const position = page.getByTestId('replay-position');
    await expect(slider).toBeVisible();
    await slider.focus();
    await page.keyboard.press('End');
    await expect(position).toHaveText(/^Seq ([\d,]+) of \1$/);
    await page.keyboard.press('Home');
    await expect(position).toHaveText(/^Before the first event/);
    for (let i = 0; i < 3; i += 1) await page.keyboard.press('ArrowRight');
    await expect(position).toHaveText(/^Seq 3 of /);
    await expect(page.getByRole('region', { name: 'Current event' })).toContainText('seq 3');
    await page.keyboard.press('ArrowLeft');
    await expect(position).toHaveText(/^Seq 2 of /);
    expect(errors).toEqual([]);
  });

  test('comparing A and B chosen on History shows B − A', async ({ page, axe }) => {
    const [a, b] = [await apiRun(page, runA), await apiRun(page, runB)];
    const errors = await signIn(page);
    await openHistory(page);
    await (await serverRow(page, runA)).getByRole('button', { name: `Compare ${namespace}/${runA} as A` }).click();
    await (await serverRow(page, runB)).getByRole('button', { name: `Compare ${namespace}/${runB} as B` }).click();
    await page.getByRole('button', { name: 'Compare A and B' }).click();
    await expect(page).toHaveURL(/#\/compare\?a=.+&b=.+/);
    await expect(page.getByRole('heading', { level: 1, name: 'Compare two runs' })).toBeVisible();
    const totals = page.getByRole('table', { name: 'Totals' });
    await expect(totals.getByRole('columnheader', { name: 'B − A' })).toBeVisible();
    const tokens = totals.getByRole('row', { name: /^Tokens/ });
    await expect(tokens.getByRole('cell')).toHaveText([count.format(a.tokens), count.format(b.tokens), signed(b.tokens - a.tokens)]);
    const nodes = page.getByRole('table', { name: /^Per node/ });
    await expect(nodes.getByRole('columnheader', { name: 'Tokens B − A' })).toBeVisible();
    await expect(nodes.locator('tbody tr').first().getByRole('rowheader')).toBeVisible();
    // Same composition: no warning about different compositions.
    await expect(page.getByText('different compositions')).toHaveCount(0);
    await axe('compare');
    expect(errors).toEqual([]);
  });

  test('Show puts the spec a run ran on the canvas, undoably, with a way back to the run (12.60)', async ({ page }) => {
    const errors = await signIn(page);
    await openHistory(page);
    const row = await serverRow(page, runA);
    await row.getByRole('button', { name: `Show ${namespace}/${runA} on the canvas` }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
    const banner = page.getByRole('status').filter({ hasText: `Showing the spec run ${namespace}/${runA} ran (notes` });
    await expect(banner).toBeVisible();
    const canvas = page.getByRole('application', { name: /^Canvas of / });
    await expect(canvas.getByRole('group', { name: /^draft, LLMAgent/ })).toBeVisible();
    await expect(canvas.getByRole('group', { name: /^publish, LLMAgent/ })).toBeVisible();
    await expect(banner.getByRole('link', { name: `Open the run ${namespace}/${runA}` })).toHaveAttribute('href', `#/runs/${namespace}/${runA}`);
    // Undo takes the canvas back to what it held (here: empty).
    await banner.getByRole('button', { name: 'Undo' }).click();
    await expect(page.getByText('The canvas is empty.')).toBeVisible();
    expect(errors).toEqual([]);
  });
});
