// The live run panel when its stream drops (issue 23's "drop"; rules 12.43, 12.44 and 12.64), in
// Chromium against the real sidecar, which these specs kill and start again: alice follows her
// human-review runs while each waits for her at `review` (mid-run), and approves them through
// the API once the drop is over, so each run goes on to its end.
//
// - 12.43: the sidecar is killed (a crash: the stream is cut, the port refuses) and started again
//   within the backoff; the page reconnects by itself with Last-Event-ID, the events after the
//   restart arrive, and the timeline lists seqs 1..N once each.
// - 12.44: the sidecar stays down past the backoff (0.5 + 1 + 2 + 4 + 8 s); the page gives up,
//   cannot read the run either and says "Outcome unknown", with Cancel and Reconnect; once the
//   sidecar is back, Reconnect picks the run up again. And with the sidecar up but the stream
//   gone (the page's requests for it fail in the browser, as behind a proxy that drops them): a
//   live run read after giving up keeps Cancel and Reconnect, an ended one takes its outcome and
//   totals from the run.
// - 12.64: after a reload (the token lives in memory: alice signs in again), History lists the
//   live run with Follow, which opens its live panel, Cancel and all, and follows it to its end.
//
// Run by tests/tests/e2e_console.rs
// (`a_run_followed_through_a_sidecar_restart_lists_every_event_once_and_a_reload_picks_it_back_up`)
// on a Studio of its own, whose sidecar it may kill: besides the usual environment,
// ORRERY_CONSOLE_RESTART_FILE, where a spec asks for the sidecar to be killed or started again
// (fixtures.ts has the contract). Without it these specs are skipped.

import { type Page } from '@playwright/test';
import { randomUUID } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { expect, test, type PageProblems } from './fixtures.ts';
import { api as apiAs, field, runPath as pathOf, signIn, signInHere, startRun as start, timelineSeqs } from './studio-api.ts';

const base = (process.env['ORRERY_CONSOLE_URL'] ?? '').replace(/\/$/, '');
const namespace = process.env['ORRERY_CONSOLE_NAMESPACE'] ?? '';
const alice = process.env['ORRERY_TOKEN_ALICE'] ?? '';
const restartFile = process.env['ORRERY_CONSOLE_RESTART_FILE'] ?? '';

/** The waits before each reconnection (web/src/api/events.ts, rule 12.43). */
const BACKOFF_MS = [500, 1000, 2000, 4000, 8000];
const BACKOFF_TOTAL_MS = BACKOFF_MS.reduce((a, b) => a + b, 0);

/** Whether a spec here left the sidecar down (a test that failed before starting it again). */
let sidecarDown = false;

/**
 * Asks the test for the sidecar to be killed or started again, and waits until it is done: the
 * request is written elsewhere and renamed into place; the answer comes in the same file's
 * name with `.done` after it, naming the request's id (tests/src/spec_sidecar.rs).
 */
async function askSidecar(action: 'kill' | 'start'): Promise<void> {
  const id = `${action}-${randomUUID()}`;
  const pending = `${restartFile}.${id}`;
  await writeFile(pending, JSON.stringify({ id, action }));
  await rename(pending, restartFile);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const text = await readFile(`${restartFile}.done`, 'utf8').catch(() => '');
    if (text !== '') {
      const done = JSON.parse(text) as { id?: string; error?: string | null };
      if (done.id === id) {
        if (done.error != null) throw new Error(`the test could not ${action} the sidecar: ${done.error}`);
        sidecarDown = action === 'kill';
        return;
      }
    }
    if (Date.now() > deadline) throw new Error(`the test did not ${action} the sidecar within 60 s (${restartFile})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Calls the API as alice. */
const api = (path: string, init: { readonly method?: string; readonly body?: unknown } = {}) => apiAs(alice, path, init);

const runPath = (name: string): string => pathOf(namespace, name);

/** Starts alice's human-review run through the API; returns its name. */
async function startRun(input: string): Promise<string> {
  return (await start(alice, namespace, { compositionRef: { name: 'human-review' }, input })).name;
}

/** The run's pending approval (id and digest), once it waits for one: the run is mid-way. */
async function pendingApproval(name: string): Promise<{ readonly id: string; readonly digest: string }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const reply = await api(`${runPath(name)}/approvals`);
    const items = field(reply.body, 'items');
    const pending = Array.isArray(items) ? (items as unknown[]).find((a) => field(a, 'state') === 'pending') : undefined;
    const id = field(pending, 'id');
    const digest = field(pending, 'digest');
    if (typeof id === 'string' && typeof digest === 'string') return { id, digest };
    if (Date.now() > deadline) throw new Error(`run ${name} did not wait for a person within 120 s (last reply ${reply.status}: ${JSON.stringify(reply.body)})`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Alice approves the run's pending approval through the API (the run takes it up, 200, or will, 202). */
async function approve(name: string): Promise<void> {
  const { id, digest } = await pendingApproval(name);
  const decided = await api(`${runPath(name)}/approvals/${encodeURIComponent(id)}`, { method: 'POST', body: { decision: 'Approve', digest } });
  expect([200, 202], JSON.stringify(decided.body)).toContain(decided.status);
}

/** The run as the API gives it: its phase and its totals' tokens. */
async function runStatus(name: string): Promise<{ readonly phase: unknown; readonly tokens: unknown }> {
  const reply = await api(runPath(name));
  expect(reply.status).toBe(200);
  return { phase: field(reply.body, 'status', 'phase'), tokens: field(reply.body, 'status', 'totals', 'tokens') };
}

/** The seqs of every event the sidecar stored for the run, in order. */
async function storedSeqs(name: string): Promise<number[]> {
  const reply = await api(`${runPath(name)}/events?after=0&limit=500`);
  expect(reply.status).toBe(200);
  const events = field(reply.body, 'events');
  if (!Array.isArray(events)) throw new Error('no events page');
  return (events as unknown[]).map((e) => Number(field(e, 'seq')));
}

/** Signs alice in and opens the run's live panel, the run waiting for her at `review`. */
async function openPanel(page: Page, name: string): Promise<void> {
  await signIn(page, alice);
  await page.goto(`${base}/#/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
}

/** The panel's own parts. */
function panel(page: Page) {
  return {
    live: page.getByRole('status').filter({ hasText: 'Live: following the run as it goes.' }),
    reviewAwaiting: page.getByRole('application', { name: /^Graph of human-review/ }).getByRole('group', { name: /^review, HumanApproval, awaiting you/ }),
    reconnect: page.getByRole('button', { name: 'Reconnect' }),
    cancel: page.getByRole('button', { name: 'Cancel run…' }),
    timeline: page.getByRole('region', { name: 'Timeline of events' }),
    outcome: (words: string) => page.getByRole('status').filter({ hasText: `The run ended: ${words}` }),
  };
}

/** The last seq the page applied (the panel's `data-run-last-seq`). */
async function lastSeqShown(page: Page): Promise<number> {
  return Number(await page.locator('[data-run-last-seq]').getAttribute('data-run-last-seq'));
}

/**
 * The run ended with `words` on the page, and its timeline lists every stored event once: seqs
 * 1..N, N the sidecar's, no row twice, and N events counted (the page's own count of the events
 * it holds).
 */
async function endsWithEveryEventOnce(page: Page, name: string, words: string): Promise<void> {
  const parts = panel(page);
  await expect(parts.outcome(words)).toBeVisible({ timeout: 90_000 });
  const stored = await storedSeqs(name);
  const n = stored.length;
  const oneToN = Array.from({ length: n }, (_, i) => i + 1);
  expect(stored, 'the sidecar stored seqs 1..N').toEqual(oneToN);
  await expect(page.getByText(`All ${n} events received; the run has ended.`)).toBeVisible();
  await expect(page.getByText(`${n} events, oldest first.`)).toBeVisible();
  const listed = await timelineSeqs(parts.timeline);
  expect(listed.seqs, 'the timeline lists seqs 1..N').toEqual(oneToN);
  expect(listed.twice, 'no seq on two rows').toEqual([]);
}

/** The requests for the run's event stream, with the Last-Event-ID each carried and when it was made. */
function watchStreams(page: Page, name: string): { readonly lastEventId: string | undefined; readonly at: number }[] {
  const url = `${base}${runPath(name)}/events`;
  const seen: { lastEventId: string | undefined; at: number }[] = [];
  page.on('request', (request) => {
    if (request.url() === url) seen.push({ lastEventId: request.headers()['last-event-id'], at: Date.now() });
  });
  return seen;
}

/** `text` as a regular expression matching itself. */
const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * The console errors a drop makes Chromium log (it logs every failed fetch), and no others: the
 * run's event stream cut (`INCOMPLETE_CHUNKED_ENCODING`, or a reset) or refused; and, while the
 * sidecar is down (`sidecarDown`), the other calls the page makes meanwhile refused (or cut if
 * under way at the kill): the approvals waiting for alice (read every 10 s) and the run itself
 * (read when the stream gives up).
 */
function allowDropErrors(problems: PageProblems, name: string, { sidecarDown }: { readonly sidecarDown: boolean }): void {
  const at = (path: string) => literal(`${base}${path}`);
  const failed = (errors: string, url: string) => new RegExp(`^Failed to load resource: net::ERR_(${errors}) \\(${url}\\)$`);
  problems.allowConsoleError(failed(sidecarDown ? 'INCOMPLETE_CHUNKED_ENCODING|CONNECTION_RESET|CONNECTION_REFUSED' : 'CONNECTION_REFUSED', at(`${runPath(name)}/events`)));
  if (sidecarDown) {
    problems.allowConsoleError(
      failed('CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE', `(${at(`/api/v1/runs/${encodeURIComponent(namespace)}?phase=AwaitingApproval&limit=500`)}|${at(runPath(name))})`),
    );
  }
}

/**
 * Alice starts a human-review run (`input`) and follows it on its panel once it waits for her at
 * `review`, live; the sidecar may go down meanwhile (its errors are allowed). Returns the run,
 * the requests for its stream, the panel's parts and the last seq the page holds.
 */
async function followMidRun(page: Page, problems: PageProblems, input: string) {
  const name = await startRun(input);
  allowDropErrors(problems, name, { sidecarDown: true });
  await pendingApproval(name);
  const streams = watchStreams(page, name);
  await openPanel(page, name);
  const parts = panel(page);
  await expect(parts.reviewAwaiting).toBeVisible({ timeout: 60_000 });
  await expect(parts.live).toBeVisible();
  return { name, streams, parts, held: await lastSeqShown(page) };
}

test.describe('a live run through a dropped stream, a sidecar down and a reload', () => {
  test.skip(restartFile === '', 'needs ORRERY_CONSOLE_RESTART_FILE: a sidecar the test may kill (tests/tests/e2e_console.rs)');

  // A test that failed with the sidecar down does not take the next ones down with it.
  test.afterEach(async () => {
    if (sidecarDown) await askSidecar('start');
  });

  test('12.43: the sidecar killed and started again within the backoff: the page reconnects by itself after the last event it holds, every event once', async ({ page, pageProblems, axe }) => {
    test.setTimeout(240_000);
    const { name, streams, parts, held } = await followMidRun(page, pageProblems, 'version 3.1');
    expect(streams.length, 'one stream so far').toBe(1);
    expect(streams[0]?.lastEventId, 'the first connection starts from the beginning').toBeUndefined();
    expect(held).toBeGreaterThan(3);

    await askSidecar('kill');
    const reconnecting = page.getByRole('status').filter({ hasText: new RegExp(`The connection dropped \\(.+\\)\\. Reconnecting in .+ \\(try [1-5] of 5\\), after event ${held}\\.`) });
    await expect(reconnecting).toBeVisible({ timeout: 10_000 });
    await expect(parts.reconnect, 'nothing to press while it reconnects by itself').toHaveCount(0);
    await axe('run-reconnecting', { screenshots: false });

    await askSidecar('start');
    await expect(parts.live).toBeVisible({ timeout: BACKOFF_TOTAL_MS });
    const resumed = streams.slice(1);
    expect(resumed.length, 'at least one reconnection').toBeGreaterThan(0);
    expect(resumed.length, 'at most five reconnections').toBeLessThanOrEqual(5);
    expect(
      resumed.map((s) => s.lastEventId),
      'every reconnection resumes after the last event held',
    ).toEqual(resumed.map(() => String(held)));

    // The run goes on; the events after the restart arrive on the resumed stream.
    await approve(name);
    await endsWithEveryEventOnce(page, name, 'Succeeded');
    expect(await lastSeqShown(page)).toBeGreaterThan(held);
    expect(streams.length, 'no connection after the one that resumed').toBe(1 + resumed.length);
  });

  test('12.44: the sidecar down past the backoff: the page gives up, cannot read the run ("outcome unknown"), and Reconnect picks it up once the sidecar is back', async ({ page, pageProblems, axe }) => {
    test.setTimeout(240_000);
    const { name, streams, parts, held } = await followMidRun(page, pageProblems, 'version 3.2');

    await askSidecar('kill');
    const killed = Date.now();
    const gaveUp = page.getByRole('status').filter({ hasText: /Reconnecting gave up after 5 tries \(.+\)\./ });
    await expect(gaveUp).toBeVisible({ timeout: BACKOFF_TOTAL_MS + 15_000 });
    expect(Date.now() - killed, 'it waited through the whole backoff').toBeGreaterThanOrEqual(BACKOFF_TOTAL_MS - 500);
    // Five reconnections, each after the last event held, the waits between them 1, 2, 4 and 8 s.
    const tries = streams.slice(1);
    expect(tries.map((s) => s.lastEventId)).toEqual(BACKOFF_MS.map(() => String(held)));
    tries.slice(1).forEach((s, i) => {
      const gap = s.at - (tries[i]?.at ?? 0);
      const wait = BACKOFF_MS[i + 1] ?? 0;
      expect(gap, `the wait before try ${i + 2}`).toBeGreaterThanOrEqual(wait - 100);
      expect(gap, `the wait before try ${i + 2}`).toBeLessThan(wait + 2000);
    });

    // The run cannot be read either: outcome unknown; still live here, so Cancel and Reconnect.
    const unknown = page.getByRole('alert').filter({ hasText: 'Outcome unknown.' });
    await expect(unknown).toBeVisible();
    await expect(unknown).toContainText('The stream gave up and the run could not be read (no answer)');
    await expect(parts.reconnect).toBeVisible();
    await expect(parts.cancel).toBeVisible();
    await axe('run-gave-up-outcome-unknown');

    await askSidecar('start');
    await parts.reconnect.click();
    await expect(parts.live).toBeVisible({ timeout: 15_000 });
    await expect(unknown).toHaveCount(0);
    await expect(parts.reconnect).toHaveCount(0);
    expect(streams.at(-1)?.lastEventId, 'Reconnect resumes after the last event held').toBe(String(held));

    await approve(name);
    await endsWithEveryEventOnce(page, name, 'Succeeded');
  });

  test('12.44: the stream gone with the sidecar up: a live run stays with Cancel and Reconnect; once it ended, its outcome and totals come from the run', async ({ page, pageProblems, axe }) => {
    test.setTimeout(240_000);
    const name = await startRun('version 3.3');
    allowDropErrors(pageProblems, name, { sidecarDown: false });
    await pendingApproval(name);
    // Every request for the run's event stream fails in the browser (a proxy that drops
    // streams); everything else reaches the sidecar.
    const eventsUrl = `${base}${runPath(name)}/events`;
    await page.route(eventsUrl, (route) => route.abort('connectionrefused'));
    const streams = watchStreams(page, name);
    await openPanel(page, name);
    const parts = panel(page);

    const gaveUp = page.getByRole('status').filter({ hasText: /Reconnecting gave up after 5 tries \(.+\)\./ });
    await expect(gaveUp).toBeVisible({ timeout: BACKOFF_TOTAL_MS + 15_000 });
    expect(streams.length, 'the first connection and five more').toBe(1 + BACKOFF_MS.length);
    // The run, read instead, is live: it keeps Cancel and Reconnect.
    const stillGoing = page.getByRole('status').filter({ hasText: 'The run is still going, but its events stopped coming.' });
    await expect(stillGoing).toBeVisible();
    await expect(stillGoing).toContainText('Reconnect to follow it again, or cancel it.');
    await expect(parts.reconnect).toBeVisible();
    await expect(parts.cancel).toBeVisible();
    await axe('run-gave-up-still-going');

    // Decided elsewhere, the run ends while the page cannot see its events.
    await approve(name);
    await expect.poll(async () => (await runStatus(name)).phase, { timeout: 90_000, intervals: [500] }).toBe('Succeeded');
    const { tokens } = await runStatus(name);
    expect(typeof tokens === 'number' && tokens > 0, `the run's status has its tokens (${String(tokens)})`).toBe(true);

    await parts.reconnect.click();
    await expect(stillGoing, 'Reconnect clears what the last read said').toHaveCount(0);
    // It tries again, six connections as before, all refused, and gives up again.
    await expect.poll(() => streams.length, { timeout: BACKOFF_TOTAL_MS + 15_000 }).toBe(2 * (1 + BACKOFF_MS.length));
    await expect(gaveUp).toBeVisible({ timeout: 10_000 });
    // Read after giving up, the run has ended: its outcome and totals come from its status.
    const ended = page.getByRole('status').filter({ hasText: "The run ended: Succeeded (from the run's status: its events stop before its last one)." });
    await expect(ended).toBeVisible();
    const totals = page.getByRole('complementary', { name: 'Budgets and totals' });
    await expect(totals.getByText("From the run's status: the stream stopped before the run's last event.")).toBeVisible();
    await expect(totals.locator('dt', { hasText: /^Tokens$/ }).locator('xpath=following-sibling::dd[1]')).toHaveText(Number(tokens).toLocaleString('en'));
    await expect(parts.reconnect, 'an ended run is not reconnected').toHaveCount(0);
    await expect(parts.cancel, 'nor cancelled').toHaveCount(0);
    await expect(page.getByRole('link', { name: 'Replay' })).toBeVisible();
    await axe('run-gave-up-ended');
  });

  test('12.64: after a reload, History lists the live run with Follow, which picks it back up with Cancel and follows it to its end', async ({ page }) => {
    test.setTimeout(240_000);
    const name = await startRun('version 3.4');
    await pendingApproval(name);
    await openPanel(page, name);
    const parts = panel(page);
    await expect(parts.reviewAwaiting).toBeVisible({ timeout: 60_000 });
    await expect(parts.live).toBeVisible();

    // A reload forgets the token (it lives in memory only): alice signs in again.
    await page.reload();
    await signInHere(page, alice);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'History' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'History' })).toBeVisible();
    const label = `Follow ${namespace}/${name} live`;
    const server = page.getByRole('region', { name: 'Your runs on the server' });
    await expect(server.getByRole('link', { name: label })).toBeVisible();
    const openedHere = page.getByRole('region', { name: 'Opened here' });
    const follow = openedHere.getByRole('link', { name: label });
    await expect(follow).toBeVisible();
    await expect(openedHere.getByRole('link', { name: `Replay ${namespace}/${name}` })).toHaveCount(0);

    await follow.click();
    await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
    await expect(parts.live).toBeVisible({ timeout: 15_000 });
    await expect(parts.reviewAwaiting).toBeVisible();
    await expect(parts.cancel).toBeVisible();

    await approve(name);
    await endsWithEveryEventOnce(page, name, 'Succeeded');
  });
});
