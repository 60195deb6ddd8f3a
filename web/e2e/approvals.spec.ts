// The approval cards and the Approvals page against the real sidecar (rules 12.35–12.42): alice
// starts a human-review run, finds it on the Approvals page (the count in the navigation and the
// tab's title), approves it with the keyboard only and is told "Approved"; bob, who neither owns
// nor approves it, gets "not found" and never the text; a decision on an approval already settled
// is told as such (409). Refused: an Approve whose digest is not the text's (a page that hashed
// stale text) is told as a digest mismatch (409) and nothing is decided; a card whose text does
// not hash to the server's digest says so and keeps Approve off; an approval that expired while a
// page still showed it is told as such (409; the Studio's approval timeout is short for it).
// Rejected: alice rejects by keyboard with a comment, and the run receives the comment. A remote
// agent's question (the `remote-question` composition, whose writer asks the demo fleet's
// demo-writer, which asks which version): its card takes an answer, marked as written by an
// external agent; Send answer is off until there is one; answered by keyboard, the run goes on
// and succeeds; a second run's question is declined.
//
// Environment (set by tests/tests/e2e_console.rs): ORRERY_CONSOLE_URL, ORRERY_CONSOLE_NAMESPACE,
// ORRERY_TOKEN_ALICE, ORRERY_TOKEN_BOB. Self-contained: it signs in by pasting the token into the
// "Bearer token" field, and calls the API with Node's fetch for what a second person or a script
// would do, and to check what a decision came to.

import { type Locator, type Page } from '@playwright/test';
import { createHash } from 'node:crypto';
import { expect, test } from './fixtures.ts';
import { api as callApi, signIn as signInWithToken, startRun, tabTo } from './studio-api.ts';

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
});

interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Calls the API as `token`'s holder; an empty body reads as `{}`. */
async function api(token: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply> {
  const reply = await callApi(token, path, { method, body });
  return { status: reply.status, body: (reply.body ?? {}) as Record<string, unknown> };
}

interface Asked {
  readonly name: string;
  readonly uid: string;
  readonly id: string;
  readonly kind: string;
  readonly digest: string;
  readonly text: string;
  readonly exactText: string;
}

/** Alice starts a run (`body`: what `POST /api/v1/runs/{ns}` takes) and waits until it asks her (the run's status says so). */
async function startAndWait(alice: string, body: Record<string, unknown>): Promise<Asked> {
  const { name, uid } = await startRun(alice, NS, body);
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
  const items = list.body['items'] as { id: string; kind: string; digest: string; text: string; exactText: string; state: string }[];
  const pending = items.find((a) => a.state === 'pending');
  if (pending === undefined) throw new Error(`run ${name} lists no pending approval: ${JSON.stringify(items)}`);
  return { name, uid, id: pending.id, kind: pending.kind, digest: pending.digest, text: pending.text, exactText: pending.exactText };
}

/** Alice starts a human-review run (`extra` on top of its body) and waits until its review asks her. */
async function startReviewRun(alice: string, extra: Record<string, unknown> = {}): Promise<Asked> {
  return startAndWait(alice, { compositionRef: { name: 'human-review' }, input: 'version 2.4', ...extra });
}

/** Alice starts a remote-question run and waits until demo-writer's question asks her. */
async function startQuestionRun(alice: string): Promise<Asked> {
  const asked = await startAndWait(alice, { compositionRef: { name: 'remote-question' }, input: 'Search is faster.', captureContent: true });
  expect(asked.kind, 'the remote asks a question: an approval of kind Input').toBe('Input');
  return asked;
}

/** Waits until the run no longer waits for a person (`timeout` ms at most). */
async function leftWaiting(token: string, name: string, timeout = 120_000): Promise<void> {
  await expect
    .poll(
      async () => {
        const run = await api(token, 'GET', `/api/v1/runs/${NS}/${name}`);
        return ((run.body['status'] ?? {}) as { phase?: string }).phase ?? '';
      },
      { timeout, intervals: [1000] },
    )
    .not.toBe('AwaitingApproval');
}

/** The phases a run ends in. */
const ENDED = ['Succeeded', 'Failed', 'Cancelled', 'BudgetExhausted', 'Rejected'];

/** One decision of a run's `status.decisions`. */
interface RunDecision {
  readonly approvalId: string;
  readonly decision: string;
  readonly digest?: string;
  readonly comment?: string;
  readonly answer?: string;
  readonly decidedBy?: string;
}

/** The run's phase and decisions, as the API gives them. */
async function runState(token: string, name: string): Promise<{ phase: string; decisions: RunDecision[] }> {
  const run = await api(token, 'GET', `/api/v1/runs/${NS}/${name}`);
  expect(run.status, JSON.stringify(run.body)).toBe(200);
  const status = (run.body['status'] ?? {}) as { phase?: string; decisions?: RunDecision[] };
  return { phase: status.phase ?? '', decisions: status.decisions ?? [] };
}

/** Waits until the run has ended; returns its phase and decisions. */
async function ended(token: string, name: string): Promise<{ phase: string; decisions: RunDecision[] }> {
  await expect
    .poll(async () => ENDED.includes((await runState(token, name)).phase), { timeout: 120_000, intervals: [1000], message: `run ${name} ends` })
    .toBe(true);
  return runState(token, name);
}

/** Every stored trace event of an ended run (one page: these runs have far fewer than 500), once its `run.end` is stored. */
async function eventsOf(token: string, name: string): Promise<Record<string, unknown>[]> {
  let events: Record<string, unknown>[] = [];
  await expect
    .poll(
      async () => {
        const page = await api(token, 'GET', `/api/v1/runs/${NS}/${name}/events?after=0&limit=500`);
        events = (page.body['events'] ?? []) as Record<string, unknown>[];
        return page.status === 200 && page.body['complete'] === true;
      },
      { timeout: 30_000, intervals: [1000], message: `the events of run ${name} end with run.end` },
    )
    .toBe(true);
  return events;
}

/** Who the token is, as the sidecar says (what it records as `decidedBy`). */
async function username(token: string): Promise<string> {
  const me = await api(token, 'GET', '/api/v1/me');
  expect(me.status).toBe(200);
  return String(me.body['username']);
}

/**
 * The approval digest as docs/sidecar-api.md defines it (and the page computes it): SHA-256 over
 * `orrery-approval-v1\n`, then the run's UID, the approval's id and the text, each as its UTF-8
 * length (big-endian u64) and bytes.
 */
function approvalDigest(uid: string, id: string, text: string): string {
  const hash = createHash('sha256').update('orrery-approval-v1\n');
  for (const part of [uid, id, text]) {
    const bytes = Buffer.from(part, 'utf8');
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length).update(bytes);
  }
  return hash.digest('hex');
}

/** Signs in by pasting the token, then looks at the namespace and opens `hash`. */
async function signIn(page: Page, token: string, hash: string): Promise<void> {
  await signInWithToken(page, token);
  await page.evaluate((h) => {
    window.location.hash = h;
  }, `#/runs/${encodeURIComponent(NS)}`);
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
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
    // Release notes long enough to scroll, so Approve waits until they were read to their end.
    const notes = Array.from({ length: 80 }, (_, i) => `- change ${String(i + 1)}: search is faster in part ${String(i + 1)}`).join('\n');
    const asked = await startReviewRun(alice, { input: notes });
    await signIn(page, alice, '#/approvals');

    await expect(page.getByRole('heading', { level: 1, name: 'Approvals waiting for you' })).toBeVisible();
    await expect(page.getByRole('link', { name: /^Approvals \d+ waiting for you$/ })).toBeVisible();
    await expect(page).toHaveTitle(/^\(\d+\) Orrery Studio$/);

    const section = runSection(page, asked.name);
    await expect(section.getByRole('link', { name: asked.name })).toHaveAttribute('href', `#/runs/${NS}/${asked.name}`);
    await expect(section.getByText(/^Digest checked/)).toBeVisible();
    // The text under review as the approvals call gives it.
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await axe('approvals');

    // Keyboard only (the page's heading has the focus on arrival): Tab to the text, End to read
    // it to its end, Tab to Approve, Enter.
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve, 'not read yet: Approve is off').toHaveAttribute('aria-disabled', 'true');
    await tabTo(page, text);
    await page.keyboard.press('End');
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
    await expect(section.getByText(/^Digest checked/)).toBeVisible();

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
});

test.describe('approval cards: a stale digest and an expired approval are refused', () => {
  test.describe.configure({ timeout: 300_000 });

  test('an Approve sent with the digest of stale text is refused (409) as a digest mismatch, nothing is decided, and the next Approve is taken', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of (404 .*\/composition|409 )/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startReviewRun(alice);
    // The digest as defined is the server's digest of the exact text; a page that hashed an
    // earlier text would send this other one.
    expect(approvalDigest(asked.uid, asked.id, asked.exactText)).toBe(asked.digest);
    const stale = approvalDigest(asked.uid, asked.id, `${asked.exactText}\n(an earlier draft)`);
    expect(stale).not.toBe(asked.digest);

    // The page's first decision has its digest replaced on its way to the real sidecar.
    const decide = `/api/v1/runs/${NS}/${asked.name}/approvals/${asked.id}`;
    const sent: unknown[] = [];
    await page.route(
      (url) => url.pathname === decide,
      async (route) => {
        const body = route.request().postDataJSON() as Record<string, unknown>;
        sent.push(body);
        await route.continue({ postData: JSON.stringify({ ...body, digest: stale }) });
      },
      { times: 1 },
    );

    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await expect(section.getByText(/^Digest checked:/)).toBeVisible();
    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();

    const told = page.locator(':focus');
    await expect(told).toContainText('Digest mismatch: the digest sent is not the digest of the text the run asked about. Nothing was decided; read the text again.', {
      timeout: 45_000,
    });
    await expect(told).toContainText(`the digest ${stale} is not the digest of approval ${asked.id}'s text (${asked.digest})`);
    // What the page itself sent: the digest it computed, the server's.
    expect(sent).toEqual([{ decision: 'Approve', digest: asked.digest }]);
    await axe('approvals-digest-refused');

    // Nothing was decided: the run still waits, with no decision recorded, the approval pending.
    const after = await runState(alice, asked.name);
    expect(after.phase).toBe('AwaitingApproval');
    expect(after.decisions).toEqual([]);
    const list = await api(alice, 'GET', `/api/v1/runs/${NS}/${asked.name}/approvals`);
    expect((list.body['items'] as { id: string; state: string }[]).find((a) => a.id === asked.id)?.state).toBe('pending');

    // The card stays, Approve on; approving again (nothing rewrites it now) is taken.
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();
    await expect(page.locator(':focus')).toContainText('Approved.', { timeout: 45_000 });
    const done = await ended(alice, asked.name);
    expect(done.phase).toBe('Succeeded');
    expect(done.decisions).toEqual([expect.objectContaining({ approvalId: asked.id, decision: 'Approve', digest: asked.digest, decidedBy: await username(alice) })]);
  });

  test("a card whose text does not hash to the server's digest says so and keeps Approve off", async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startReviewRun(alice);
    // The approvals call's reply is changed on its way to the page: the text shown (and hashed)
    // is not the text the run asked about; the server's digest stays.
    const tampered = `${asked.exactText}\nAlso: delete the old releases.`;
    await page.route(
      (url) => url.pathname === `/api/v1/runs/${NS}/${asked.name}/approvals`,
      async (route) => {
        const response = await route.fetch();
        const body = (await response.json()) as { items: Record<string, unknown>[] };
        const items = body.items.map((item) => (item['id'] === asked.id ? { ...item, text: tampered, exactText: tampered } : item));
        await route.fulfill({ response, json: { ...body, items } });
      },
    );
    // Every decision the page sends, in order.
    const sent: unknown[] = [];
    await page.route(
      (url) => url.pathname === `/api/v1/runs/${NS}/${asked.name}/approvals/${asked.id}`,
      async (route) => {
        sent.push(route.request().postDataJSON());
        await route.continue();
      },
    );

    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText('Also: delete the old releases.');
    await expect(section.getByText(/^Digest does not match: do not approve\./)).toBeVisible();
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).toHaveAttribute('aria-disabled', 'true');
    await expect(approve).toHaveAccessibleDescription('Approve is off: The digest does not match: do not approve. The text shown is not the text the run asked about.');
    await axe('approvals-digest-mismatch');

    // Read to its end, pressed by keyboard and clicked (forced: Playwright itself waits for an
    // aria-disabled button to come on): nothing is sent.
    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await approve.focus();
    await page.keyboard.press('Enter');
    await approve.click({ force: true });
    await expect(approve).toHaveAttribute('aria-disabled', 'true');
    // Reject stays on; the decisions the page sent, in order, are that one alone.
    await section.getByRole('button', { name: 'Reject', exact: true }).click();
    await expect(page.locator(':focus')).toContainText('Rejected.', { timeout: 45_000 });
    expect(sent).toEqual([{ decision: 'Reject' }]);
    const done = await ended(alice, asked.name);
    expect(done.phase).toBe('Rejected');
    // The page polls on: a reply the tampering handler is still reading when the page closes
    // is disposed under it, which is no finding of this test.
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  test('a decision after the approval expired is told as such (409)', async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/status of (404 .*\/composition|409 )/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const schema = await api(alice, 'GET', '/api/v1/schema');
    const timeout = Number(schema.body['approvalTimeoutSeconds']);
    // The page must read the approval before it expires, and the test waits for the expiry:
    // tests/tests/e2e_console.rs installs its Studio with such a timeout.
    expect(
      Number.isFinite(timeout) && timeout >= 15 && timeout <= 90,
      `the approval timeout of this deployment is ${String(timeout)} s; this spec needs the chart's config.approvalTimeoutSeconds between 15 and 90`,
    ).toBe(true);

    const asked = await startReviewRun(alice);
    // The page's clock runs behind the server's, so the card does not count the approval out
    // itself: the refusal has to come from the sidecar.
    await page.clock.install({ time: Date.now() - (timeout + 600) * 1000 });
    await freezeWaitingList(page);
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    const text = section.getByRole('region', { name: /^Text under review/ });
    await expect(text).toContainText(asked.text.slice(0, 40));
    await leftWaiting(alice, asked.name, (timeout + 60) * 1000);
    // Past the expiry the status may say Running a moment (the node closes, the run ends): wait for its end.
    expect((await ended(alice, asked.name)).phase, 'an approval let expire with no rejected route ends the run Rejected').toBe('Rejected');

    await text.evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    const approve = section.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve).not.toHaveAttribute('aria-disabled', 'true');
    await approve.click();
    await expect(page.locator(':focus')).toContainText('Already settled: it expired before your decision arrived. Nothing more was decided.', { timeout: 45_000 });
    await expect(page.locator(':focus')).toContainText(`approval ${asked.id} is already settled: expired`);
  });
});

test.describe('approval cards: reject with a comment', () => {
  test.describe.configure({ timeout: 300_000 });

  test('alice rejects by keyboard with a comment: the run receives the comment and ends Rejected', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const alice = env('ORRERY_TOKEN_ALICE');
    // The run keeps content in its events, so its approval.decided event carries the comment.
    const asked = await startReviewRun(alice, { captureContent: true });
    const comment = 'Name the version in the title, and say what changed for users.';
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    await expect(section.getByRole('region', { name: /^Text under review/ })).toContainText(asked.text.slice(0, 40));

    // Keyboard only: Tab to the comment box, type, Tab to Reject, Enter.
    const box = section.getByRole('textbox', { name: /^Comment/ });
    await expect(box).toHaveAccessibleName('Comment (optional, sent if you reject)');
    await tabTo(page, box);
    await page.keyboard.type(comment);
    await expect(box).toHaveValue(comment);
    await axe('approvals-reject-comment');
    const reject = section.getByRole('button', { name: 'Reject', exact: true });
    await tabTo(page, reject);
    await expect(reject).not.toHaveAttribute('aria-disabled', 'true');
    await page.keyboard.press('Enter');
    await expect(page.locator(':focus')).toContainText('Rejected.', { timeout: 45_000 });
    await expect(page.locator(':focus')).toContainText('The run took your decision: rejected.');

    // The decision recorded has the comment; the run took it up with it and, with no rejected
    // route, ended Rejected.
    const done = await ended(alice, asked.name);
    expect(done.phase).toBe('Rejected');
    expect(done.decisions).toEqual([expect.objectContaining({ approvalId: asked.id, decision: 'Reject', comment, decidedBy: await username(alice) })]);
    expect(done.decisions[0]?.digest).toBeUndefined();
    const decided = (await eventsOf(alice, asked.name)).filter((e) => e['type'] === 'approval.decided');
    expect(decided).toEqual([expect.objectContaining({ approvalId: asked.id, decision: 'rejected', comment })]);
  });
});

test.describe("a remote agent's question: answered or declined on its card", () => {
  test.describe.configure({ timeout: 300_000 });

  /** The run's A2A messages, in order: which way, the task's state, the text (the run keeps content). */
  function a2aMessages(events: Record<string, unknown>[]): { direction: unknown; taskState: unknown; text: unknown }[] {
    return events.filter((e) => e['type'] === 'a2a.message').map((e) => ({ direction: e['direction'], taskState: e['taskState'] ?? null, text: e['text'] ?? null }));
  }

  test("alice answers the remote agent's question by keyboard: Send answer is off until there is an answer, and the run succeeds with it", async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startQuestionRun(alice);
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);

    // The same card, for a question: what it is, the question, the warning, an answer box.
    const question = section.getByRole('region', { name: /^Question from the remote agent/ });
    await expect(question).toHaveText(asked.text);
    await expect(section.getByText("A remote agent's question", { exact: true })).toBeVisible();
    await expect(section.getByText('Written by an external agent, not by Orrery or your team: never answer with secrets', { exact: true })).toBeVisible();
    await expect(section.getByText(/^Digest checked:/)).toBeVisible();
    const box = section.getByRole('textbox', { name: 'Your answer (sent to the remote agent)' });
    await expect(box).toBeVisible();
    const send = section.getByRole('button', { name: 'Send answer', exact: true });
    const decline = section.getByRole('button', { name: 'Decline', exact: true });
    await expect(send).toHaveAttribute('aria-disabled', 'true');
    await expect(send).toHaveAccessibleDescription('Send answer is off: Write an answer first.');
    await expect(decline).not.toHaveAttribute('aria-disabled', 'true');
    await axe('approvals-question');

    // Keyboard only. Blanks are no answer: Send answer stays off.
    await tabTo(page, box);
    await page.keyboard.type('   ');
    await expect(send).toHaveAttribute('aria-disabled', 'true');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type('2.5');
    await expect(box).toHaveValue('2.5');
    await expect(send).not.toHaveAttribute('aria-disabled', 'true');
    await tabTo(page, send);
    await page.keyboard.press('Enter');
    await expect(page.locator(':focus')).toContainText('Answer sent.', { timeout: 45_000 });
    await expect(page.locator(':focus')).toContainText('The run took your decision: approved.');

    // The answer is recorded and went back to the remote on the same task, which completed.
    const done = await ended(alice, asked.name);
    expect(done.phase).toBe('Succeeded');
    expect(done.decisions).toEqual([expect.objectContaining({ approvalId: asked.id, decision: 'Approve', digest: asked.digest, answer: '2.5', decidedBy: await username(alice) })]);
    const events = await eventsOf(alice, asked.name);
    const messages = a2aMessages(events);
    const seen = JSON.stringify(messages);
    expect(messages.filter((m) => m.direction === 'outbound').map((m) => m.text), seen).toEqual([expect.stringContaining('# Version ?'), '2.5']);
    expect(messages.map((m) => m.taskState), seen).toContain('input-required');
    expect(messages.at(-1)?.taskState, seen).toBe('completed');
    expect(events.filter((e) => e['type'] === 'approval.decided')).toEqual([expect.objectContaining({ approvalId: asked.id, kind: 'Input', decision: 'approved' })]);
  });

  test("alice declines a second run's question: nothing is sent to the remote and the run goes on without an answer", async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const alice = env('ORRERY_TOKEN_ALICE');
    const asked = await startQuestionRun(alice);
    await signIn(page, alice, '#/approvals');
    const section = runSection(page, asked.name);
    await expect(section.getByRole('region', { name: /^Question from the remote agent/ })).toHaveText(asked.text);
    await expect(section.getByText(/^Digest checked:/)).toBeVisible();

    const decline = section.getByRole('button', { name: 'Decline', exact: true });
    await tabTo(page, decline);
    await expect(decline).not.toHaveAttribute('aria-disabled', 'true');
    await page.keyboard.press('Enter');
    await expect(page.locator(':focus')).toContainText('Declined.', { timeout: 45_000 });
    await expect(page.locator(':focus')).toContainText('The run took your decision: rejected.');
    await axe('approvals-question-declined');

    // Declined: no answer recorded or sent (the remote's task is left waiting for input), and
    // the node went on without one.
    const done = await ended(alice, asked.name);
    expect(done.phase).toBe('Succeeded');
    expect(done.decisions).toEqual([expect.objectContaining({ approvalId: asked.id, decision: 'Reject', decidedBy: await username(alice) })]);
    expect(done.decisions[0]?.answer).toBeUndefined();
    const events = await eventsOf(alice, asked.name);
    const messages = a2aMessages(events);
    const seen = JSON.stringify(messages);
    expect(messages.filter((m) => m.direction === 'outbound').map((m) => m.text), seen).toEqual([expect.stringContaining('# Version ?')]);
    expect(messages.map((m) => m.taskState), seen).not.toContain('completed');
    expect(messages.at(-1)?.taskState, seen).toBe('input-required');
    expect(events.filter((e) => e['type'] === 'approval.decided')).toEqual([expect.objectContaining({ approvalId: asked.id, kind: 'Input', decision: 'rejected' })]);
  });
});
