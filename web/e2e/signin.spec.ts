// Signing in (the console today): paste a bearer token, the page asks the sidecar's
// `/api/v1/me` who it is. Each `describe` is run by one Rust test of tests/tests/e2e_console.rs
// (`--grep` on its title), which docs/behaviour.md cites; keep the titles and the Rust side in
// step. Every test also fails on a CSP violation or a console error (fixtures.ts).
import { CONSOLE_CSP } from '../build/policy.ts';
import { expect, signIn, signInForm, test } from './fixtures.ts';

test.describe('the console runs under its policy', () => {
  test('the page is served under the console policy and loads with no violation', async ({ page }) => {
    const response = await page.goto('/');
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    await expect(page.getByRole('heading', { name: 'Sign in with your cluster identity' })).toBeVisible();
    // A page path the console routes in the browser is the same page, under the same policy.
    const deep = await page.goto('/some/page/path');
    expect(deep?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    await expect(signInForm(page).token).toBeVisible();
  });

  test('what the policy forbids is refused and reported', async ({ page, pageProblems }) => {
    // The watch that makes every other test's "no violation" mean something: an inline style,
    // which the policy forbids, is blocked and seen.
    await page.goto('/');
    await page.evaluate(() => {
      const style = document.createElement('style');
      style.textContent = 'body { color: red; }';
      document.head.append(style);
    });
    await expect.poll(() => pageProblems.violations.map((v) => v.directive)).toContain('style-src-elem');
    expect(await page.evaluate(() => getComputedStyle(document.body).color)).not.toBe('rgb(255, 0, 0)');
    // Chromium says so in the console too; both are taken, so this test passes.
    expect(pageProblems.take()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^CSP violation: style-src-elem/), expect.stringMatching(/^console error: .*Content Security Policy/)]),
    );
  });
});

test.describe("a bad token is refused with the sidecar's reason", () => {
  test('a token the cluster does not accept is refused in the words of the sidecar', async ({ page, pageProblems }) => {
    pageProblems.allowConsoleError(/the server responded with a status of 401 .*\/api\/v1\/me/);
    const bad = 'not-a-token-the-cluster-knows';
    await page.goto('/');
    const form = signInForm(page);
    await form.token.fill(bad);
    await form.submit.click();

    // The sidecar's own answer to that token, asked directly.
    const reply = await page.request.get('/api/v1/me', { headers: { Authorization: `Bearer ${bad}` } });
    expect(reply.status()).toBe(401);
    const problem = (await reply.json()) as { message?: unknown };
    expect(typeof problem.message).toBe('string');
    await expect(form.alert).toHaveText(`This token was refused (401): ${String(problem.message)}`);
    // The field keeps the focus, marked invalid and described by the alert.
    await expect(form.token).toBeFocused();
    await expect(form.token).toHaveAttribute('aria-invalid', 'true');
    const alertId = await form.alert.getAttribute('id');
    expect(alertId).not.toBeNull();
    expect((await form.token.getAttribute('aria-describedby'))?.split(' ')).toContain(alertId);
    await expect(page.getByRole('heading', { name: /Signed in as/ })).toHaveCount(0);
  });

  test('an empty token is not sent', async ({ page }) => {
    let asked = 0;
    page.on('request', (request) => {
      if (request.url().includes('/api/v1/me')) asked += 1;
    });
    await page.goto('/');
    const form = signInForm(page);
    await form.token.fill('   ');
    await form.submit.click();
    await expect(form.alert).toHaveText('Paste a token first.');
    expect(asked).toBe(0);
  });
});

test.describe('alice signs in with the keyboard alone and sees her name', () => {
  test('by keyboard only: the token, Tab, Enter; then signing out the same way', async ({ page, consoleEnv }) => {
    const form = signInForm(page);
    await page.goto('/');
    // The field has the focus from the start; the token goes in as a paste would.
    await expect(form.token).toBeFocused();
    await page.keyboard.insertText(consoleEnv.alice.token);
    await page.keyboard.press('Tab');
    await expect(form.submit).toBeFocused();
    await page.keyboard.press('Enter');

    // Her runs, where the focus now is; her name in the header, linking to who she is.
    await expect(page.getByRole('heading', { name: `Runs in ${consoleEnv.namespace}` })).toBeFocused();
    const name = page.getByRole('link', { name: consoleEnv.alice.name, exact: true });
    await expect(name).toBeVisible();
    await name.focus();
    await page.keyboard.press('Enter');
    const heading = page.getByRole('heading', { name: `Signed in as ${consoleEnv.alice.name}` });
    await expect(heading).toBeFocused();
    await expect(page.getByText('a person', { exact: true })).toBeVisible();
    await expect(page.getByText(`this install serves ${consoleEnv.namespace}`)).toBeVisible();
    await expect(page.getByText('A service account cannot decide approvals.')).toHaveCount(0);
    // The token is shown nowhere and kept in no storage or URL.
    expect(await page.content()).not.toContain(consoleEnv.alice.token);
    expect(page.url()).not.toContain(consoleEnv.alice.token);
    const stored = await page.evaluate(() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie]));
    expect(stored).not.toContain(consoleEnv.alice.token);

    // Signing out by keyboard (the page's own button, after the heading): back to an empty
    // form with the focus in it.
    await page.keyboard.press('Tab');
    await expect(page.getByRole('main').getByRole('button', { name: 'Sign out' })).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(form.token).toBeFocused();
    await expect(form.token).toHaveValue('');
  });

  test('bob sees his own name, not alice', async ({ page, consoleEnv }) => {
    await page.goto('/');
    const form = signInForm(page);
    await form.token.fill(consoleEnv.bob.token);
    await form.token.press('Enter');
    await expect(page.getByRole('link', { name: consoleEnv.bob.name, exact: true })).toBeVisible();
    await page.goto('/#/me');
    await expect(page.getByRole('heading', { name: `Signed in as ${consoleEnv.bob.name}` })).toBeVisible();
    await expect(page.getByText(consoleEnv.alice.name, { exact: true })).toHaveCount(0);
  });
});

test.describe('the sign-in page is axe-clean in both themes', () => {
  test('the empty form, a refused token and the signed-in view, light and dark, with screenshots', async ({
    page,
    pageProblems,
    axe,
    consoleEnv,
  }) => {
    pageProblems.allowConsoleError(/the server responded with a status of 401 .*\/api\/v1\/me/);
    await page.goto('/');
    const form = signInForm(page);
    await expect(form.token).toBeFocused();
    await axe('sign-in');

    await form.token.fill('not-a-token-the-cluster-knows');
    await form.submit.click();
    await expect(form.alert).toBeVisible();
    await axe('sign-in-refused');

    await form.token.fill(consoleEnv.alice.token);
    await form.submit.click();
    await expect(page.getByRole('heading', { name: `Runs in ${consoleEnv.namespace}` })).toBeFocused();
    await axe('signed-in');
    await page.goto('/#/me');
    await expect(page.getByRole('heading', { name: `Signed in as ${consoleEnv.alice.name}` })).toBeFocused();
    await axe('who-you-are');
  });
});

test.describe('a Studio that refuses its schema is said to be not available', () => {
  // The real sidecar publishes its schema to everyone signed in; a sidecar without the Studio
  // (an older one, or a proxy in front that refuses the path) answers 404 or 403. The page gets
  // that answer here from a route in front of the real sidecar; /me is still the sidecar's.
  for (const status of [404, 403] as const) {
    test(`a ${status} from the schema call: "Studio not available", with the reason, and nothing else is asked`, async ({ page, pageProblems, axe, consoleEnv }) => {
      pageProblems.allowConsoleError(new RegExp(`the server responded with a status of ${status} .*/api/v1/schema`));
      const message = status === 404 ? 'no route GET /api/v1/schema on this server' : 'schema is forbidden to alice here';
      await page.route('**/api/v1/schema', (route) =>
        route.fulfill({ status, contentType: 'application/json', body: JSON.stringify({ error: status === 404 ? 'not_found' : 'forbidden', message }) }),
      );
      const asked: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname.startsWith('/api/')) asked.push(url.pathname);
      });

      await signIn(page, consoleEnv.alice, `/#/runs/${encodeURIComponent(consoleEnv.namespace)}`);
      const unavailable = page.getByRole('heading', { level: 1, name: 'Studio not available' });
      await expect(unavailable).toBeVisible();
      await expect(page.getByText(`(${status})`, { exact: false })).toContainText(message);
      await axe(`studio-not-available-${status}`);

      // Every page says the same; none asks the sidecar for runs, approvals or events.
      for (const hash of ['#/approvals', '#/history', `#/runs/${encodeURIComponent(consoleEnv.namespace)}/some-run`]) {
        await page.evaluate((h) => {
          window.location.hash = h;
        }, hash);
        await expect(unavailable).toBeVisible();
      }
      await page.waitForTimeout(500);
      expect(asked).toEqual(['/api/v1/me', '/api/v1/schema']);
    });
  }
});
