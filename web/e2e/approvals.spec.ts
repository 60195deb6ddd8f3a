// The approval cards and the Approvals page against the real sidecar (rules 12.35–12.42): alice
// starts a human-review run, finds it on the Approvals page (the count in the navigation and the
// tab's title), approves it with the keyboard only and is told "Approved"; bob, who neither owns
// nor approves it, gets "not found" and never the text; a decision on an approval already settled
// is told as such (409); an approval that expired while a page still showed it is told as such
// too, when the deployment's approval timeout is short enough to wait for.
//
// Environment (set by tests/tests/e2e_console.rs): ORRERY_CONSOLE_URL, ORRERY_CONSOLE_NAMESPACE,
// ORRERY_TOKEN_ALICE, ORRERY_TOKEN_BOB. Self-contained: it signs in by pasting the token into the
// "Bearer token" field, and calls the API with Node's fetch for what a second person or a script
// would do.

import { type Locator, type Page } from '@playwright/test';
import { expect, test } from './fixtures.ts';

// Node's environment, declared here rather than pulling in @types/node for one field.
declare const process: { readonly env: Readonly<Record<string, string | undefined>> };

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: run this spec through tests/tests/e2e_console.rs`);
  return value;
}

const BASE = (process.env['ORRERY_CONSOLE_URL'] ?? '').replace(/\/$/, '');
const NS = process.env['ORRERY_CONSOLE_NAMESPACE'] ?? '';

test.use({
  baseURL: BASE,
  viewport: { width: 1280, height: 720 },
  launchOptions: { executablePath: '/usr/lib/chromium/chromium' },
});

interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function api(token: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${env('ORRERY_CONSOLE_URL').replace(/\/$/, '')}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

interface Asked {
  readonly name: string;
  readonly id: string;
  readonly digest: string;
  readonly text: string;
}

/** Alice starts a human-review run and waits until it asks her (the run's status says so). */
async function startReviewRun(alice: string): Promise<Asked> {
  const started = await api(alice, 'POST', `/api/v1/runs/${NS}`, { compositionRef: { name: 'human-review' }, input: 'version 2.4' });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const name = (started.body['metadata'] as { name: string }).name;
  let phase = '';
  await expect
    .poll(
      async () => {
        const run = await api(alice, 'GET', `/api/v1/runs/${NS}/${name}`);
        phase = ((run.body['status'] ?? {}) as { phase?: string }).phase ?? '';
        return phase;
      },
      { timeout: 180_000, intervals: [1000], message: `run ${name} waits for a person` },
    )
    .toBe('AwaitingApproval');
  const list = await api(alice, 'GET', `/api/v1/runs/${NS}/${name}/approvals`);
  expect(list.status).toBe(200);
  const items = list.body['items'] as { id: string; digest: string; text: string; state: string }[];
  const pending = items.find((a) => a.state === 'pending');
  if (pending === undefined) throw new Error(`run ${name} lists no pending approval: ${JSON.stringify(items)}`);
  return { name, id: pending.id, digest: pending.digest, text: pending.text };
}

/** Waits until the run no longer waits for a person. */
async function leftWaiting(token: string, name: string): Promise<void> {
  await expect
    .poll(
      async () => {
        const run = await api(token, 'GET', `/api/v1/runs/${NS}/${name}`);
        return ((run.body['status'] ?? {}) as { phase?: string }).phase ?? '';
      },
      { timeout: 120_000, intervals: [1000] },
    )
    .not.toBe('AwaitingApproval');
}

/** Signs in by pasting the token, then looks at the namespace and opens `hash`. */
async function signIn(page: Page, token: string, hash: string): Promise<void> {
  await page.goto('/');
  await page.getByLabel('Bearer token').fill(token);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('navigation', { name: 'Console' })).toBeVisible();
  await page.evaluate((h) => {
    window.location.hash = h;
  }, `#/runs/${encodeURIComponent(NS)}`);
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
}

/** Presses Tab until `target` has the focus. */
async function tabTo(page: Page, target: Locator, max = 120): Promise<void> {
  for (let i = 0; i < max; i += 1) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`${String(target)} never took the focus after ${max} presses of Tab`);
}

/** The section of the Approvals page for one run. */
function runSection(page: Page, name: string): Locator {
  return page.getByRole('region', { name: `Run ${name}`, exact: true });
}

/**
 * Keeps the page's list of waiting runs as it first read it, so the page does not learn that an
 * approval was settled elsewhere: what a page opened a moment before shows. The decision the
 * page then sends goes to the real sidecar.
 */
async function freezeWaitingList(page: Page): Promise<void> {
  let first: { status: number; body: string } | null = null;
  await page.route(
    (url) => url.pathname === `/api/v1/runs/${NS}` && url.searchParams.get('phase') === 'AwaitingApproval',
    async (route) => {
      if (first === null) {
        const response = await route.fetch();
        first = { status: response.status(), body: await response.text() };
      }
      await route.fulfill({ status: first.status, contentType: 'application/json', body: first.body });
    },
  );
}

test.describe('approval cards: decide by keyboard, already settled, not found', () => {
  test.describe.configure({ timeout: 300_000 });

  test('alice finds the approval on the Approvals page and approves it with the keyboard only', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startReviewRun(alice);
    await signIn(page, alice, '#/approvals');

    await expect(page.getByRole('heading', { level: 1, name: 'Approvals waiting for you' })).toBeVisible();
    await expect(page.getByRole('link', { name: /^Approvals \d+ waiting for you$/ })).toBeVisible();
    await expect(page).toHaveTitle(/^\(\d+\) Orrery Studio$/);

    const section = runSection(page, asked.name);
    await expect(section.getByRole('link', { name: asked.name })).toHaveAttribute('href', `#/runs/${NS}/${asked.name}`);
    await expect(section.getByText(/^Digest (checked|not checked here)/)).toBeVisible();
    // The text under review as the approvals call gives it.
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await axe('approvals');

    // Keyboard only (the page's heading has the focus on arrival): Tab to the text, End to read
    // it to its end, Tab to Approve, Enter.
    await tabTo(page, text);
    await page.keyboard.press('End');
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await tabTo(page, approve);
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await page.keyboard.press('Enter');

    // The focus moves to what the decision came to.
    await expect(page.locator(':focus')).toContainText('Approved.', { timeout: 45_000 });
    await expect(section.getByRole('button', { name: 'Approve', exact: true })).toHaveCount(0);
    await leftWaiting(alice, asked.name);
  });

  test("bob opening alice's run is told it is not found, and the page never holds its text", async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/status of 404 /);
    const alice = env('ORRERY_TOKEN_ALICE');
    const bob = env('ORRERY_TOKEN_BOB');
    const asked = await startReviewRun(alice);
    try {
      await signIn(page, bob, `#/runs/${NS}/${asked.name}`);
      await expect(page.getByText(/not found|\(404\)|no studiorun/i).first()).toBeVisible({ timeout: 30_000 });
      expect(await page.content()).not.toContain(asked.text.slice(0, 40));

      await page.evaluate(() => {
        window.location.hash = '#/approvals';
      });
      await expect(page.getByRole('heading', { level: 1, name: 'Approvals waiting for you' })).toBeVisible();
      await expect(page.getByText(/approvals? waits? for you in namespace|Nothing is waiting for you/)).toBeVisible();
      await expect(runSection(page, asked.name)).toHaveCount(0);
      expect(await page.content()).not.toContain(asked.text.slice(0, 40));
    } finally {
      // Leave nothing waiting for the next test.
      await api(alice, 'POST', `/api/v1/runs/${NS}/${asked.name}/approvals/${asked.id}`, { decision: 'Reject', comment: 'bob test done' });
    }
  });

  test('a decision on an approval already settled elsewhere is told as "already settled" (409)', async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/status of (404 .*\/composition|409 )/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startReviewRun(alice);
    await freezeWaitingList(page);
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await expect(section.getByText(/^Digest (checked|not checked here)/)).toBeVisible();

    // Alice decides once through the API (another tab, a script), and the run takes it up.
    const first = await api(alice, 'POST', `/api/v1/runs/${NS}/${asked.name}/approvals/${asked.id}`, { decision: 'Approve', digest: asked.digest });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await leftWaiting(alice, asked.name);

    // The page still shows the card; approving there is refused by the sidecar.
    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();
    await expect(page.locator(':focus')).toContainText('Already settled: it was already approved', { timeout: 45_000 });
    await expect(page.locator(':focus')).toContainText(`approval ${asked.id} is already settled: approved`);
  });

  test('a decision after the approval expired is told as such (409), when the approval timeout is short', async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/status of (404 .*\/composition|409 )/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const schema = await api(alice, 'GET', '/api/v1/schema');
    const timeout = Number(schema.body['approvalTimeoutSeconds']);
    test.skip(
      !Number.isFinite(timeout) || timeout < 15 || timeout > 90,
      `this deployment's approval timeout is ${String(timeout)} s: the page must read the approval before it expires, and the test waits for the expiry (the chart's config.approvalTimeoutSeconds between 15 and 90 runs it)`,
    );

    const asked = await startReviewRun(alice);
    // The page's clock runs behind the server's, so the card does not count the approval out
    // itself: the refusal has to come from the sidecar.
    await page.clock.install({ time: Date.now() - (timeout + 600) * 1000 });
    await freezeWaitingList(page);
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await leftWaiting(alice, asked.name);

    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();
    await expect(page.locator(':focus')).toContainText(/Already settled: it expired|Too late: the approval expired/, { timeout: 45_000 });
  });
});
