// The runs page against the real sidecar (run by tests/tests/e2e_console.rs): alice signs in,
// sees her runs in the namespace, starts `human-review` from the keyboard (Ctrl+Enter), lands
// on the run's page, finds it listed and cancels it through the confirm step (so no run is left
// waiting for an approval); Cancel run pressed while a run is being created cancels it once it
// has a name (12.45); a negative budget is refused at its field before anything is sent;
// the filters are kept in the address, and back and forward step through them.
//
// Environment: ORRERY_CONSOLE_URL (the sidecar serving the console), ORRERY_CONSOLE_NAMESPACE
// (a namespace with the Composition `human-review` and the scripted model, where alice may
// start runs), ORRERY_TOKEN_ALICE.

import { type Page } from '@playwright/test';
import { expect, test } from './fixtures.ts';

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: this spec runs against a real sidecar (tests/tests/e2e_console.rs)`);
  return value;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Signs in as alice by pasting her token, on the runs page of the namespace (with `query`). */
async function signInToRuns(page: Page, namespace: string, query = ''): Promise<void> {
  await page.goto(`${env('ORRERY_CONSOLE_URL')}/#/runs/${encodeURIComponent(namespace)}${query}`);
  await page.getByLabel('Bearer token').fill(env('ORRERY_TOKEN_ALICE'));
  await page.getByLabel('Bearer token').press('Enter');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Runs in ${namespace}`);
}

function startForm(page: Page) {
  return page.getByRole('form', { name: /^Start a run in/ });
}

function runsAddress(namespace: string, rest = ''): RegExp {
  return new RegExp(`#/runs/${escape(encodeURIComponent(namespace))}${rest}$`);
}

test.describe('the runs page: start, filter, cancel', () => {
  test('alice starts a run from the keyboard, lands on its page, finds it listed and cancels it', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const namespace = env('ORRERY_CONSOLE_NAMESPACE');
    await signInToRuns(page, namespace);
    // her runs, or the empty state saying there are none yet
    await expect(page.getByRole('table', { name: `Runs alice owns or approves in ${namespace}, newest first` }).or(page.getByRole('heading', { name: `No runs of yours in ${namespace} yet` }))).toBeVisible();

    await axe('runs');
    const toggle = page.getByRole('button', { name: 'Start a run', exact: true });
    await toggle.focus();
    await page.keyboard.press('Enter');
    await expect(toggle).toHaveAttribute('aria-expanded', 'true');
    const form = startForm(page);
    await expect(form.getByLabel('Composition', { exact: true })).toBeFocused();
    await axe('runs-start-form');
    await page.keyboard.type('human-review');
    await form.getByLabel('Input', { exact: true }).focus();
    await page.keyboard.type('version 2.4');
    await page.keyboard.press('Control+Enter');

    await expect(page).toHaveURL(runsAddress(namespace, '/[a-z0-9][-a-z0-9.]*'));
    const name = decodeURIComponent(new URL(page.url()).hash.split('/').pop() ?? '');
    expect(name).toMatch(/^run-/);

    // back on the list, the run is there; cancel it by keyboard, through the confirm step
    await page.goBack();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Runs in ${namespace}`);
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await expect(row).toBeVisible();
    const cancel = row.getByRole('button', { name: `Cancel run ${name}`, exact: true });
    await cancel.focus();
    await page.keyboard.press('Enter');
    await expect(row.getByRole('group', { name: `Cancel run ${name}?` })).toBeVisible();
    await expect(row.getByRole('button', { name: 'Keep running' })).toBeFocused();
    await page.keyboard.press('Shift+Tab');
    await expect(row.getByRole('button', { name: 'Cancel run', exact: true })).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(page.getByText(`Asked to cancel ${name}: it ends Cancelled shortly.`)).toBeVisible();
    // the list is read again every 5 s while a run is live: the run ends Cancelled
    await expect(row.getByText(/Cancelled$/)).toBeVisible({ timeout: 60_000 });
  });

  test('Cancel run while the run is being created is sent as soon as it has a name, and the run ends Cancelled', async ({ page, pageProblems, axe }) => {
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const namespace = env('ORRERY_CONSOLE_NAMESPACE');
    // The create call is held in front of the real sidecar until alice has pressed Cancel run,
    // as a slow apiserver would hold it (rule 12.45).
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const order: string[] = [];
    await page.route(
      (url) => url.pathname === `/api/v1/runs/${namespace}`,
      async (route) => {
        if (route.request().method() !== 'POST') return route.fallback();
        await held;
        const response = await route.fetch();
        order.push(`created ${response.status()}`);
        return route.fulfill({ response });
      },
    );
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/cancel')) order.push('cancel');
    });

    await signInToRuns(page, namespace);
    await page.getByRole('button', { name: 'Start a run', exact: true }).click();
    const form = startForm(page);
    await form.getByLabel('Composition', { exact: true }).fill('human-review');
    await form.getByLabel('Input', { exact: true }).fill('version 2.6');
    await form.getByRole('button', { name: 'Start run' }).click();
    await expect(form.getByRole('status')).toHaveText('Starting the run…');
    const cancel = form.getByRole('button', { name: 'Cancel run', exact: true });
    await cancel.focus();
    await page.keyboard.press('Enter');
    await expect(form.getByRole('button', { name: 'Cancel asked' })).toBeDisabled();
    await expect(form.getByRole('status')).toHaveText('Starting the run… it is cancelled as soon as it has a name.');
    await axe('runs-cancel-while-starting');
    expect(order).toEqual([]);
    release();

    // the run's page; the cancel went after the create's answer, and the run ends Cancelled
    await expect(page).toHaveURL(runsAddress(namespace, '/run-[a-z0-9]+'));
    await expect.poll(() => order).toEqual(['created 201', 'cancel']);
    const name = decodeURIComponent(new URL(page.url()).hash.split('/').pop() ?? '');
    let status = '';
    await expect
      .poll(
        async () => {
          const reply = await fetch(`${env('ORRERY_CONSOLE_URL')}/api/v1/runs/${namespace}/${name}`, { headers: { Authorization: `Bearer ${env('ORRERY_TOKEN_ALICE')}` } });
          const run = (await reply.json()) as { status?: { phase?: string } };
          status = JSON.stringify(run.status ?? {});
          return run.status?.phase ?? '';
        },
        { timeout: 60_000, intervals: [1000], message: `run ${name} ends Cancelled; its status: ${status}` },
      )
      .toBe('Cancelled');
    await expect(page.getByText('The run ended: Cancelled', { exact: false })).toBeVisible({ timeout: 30_000 });
  });

  test('a negative budget is shown at its field and nothing typed is lost', async ({ page }) => {
    const namespace = env('ORRERY_CONSOLE_NAMESPACE');
    await signInToRuns(page, namespace);
    await page.getByRole('button', { name: 'Start a run', exact: true }).click();
    const form = startForm(page);
    await form.getByLabel('Composition', { exact: true }).fill('human-review');
    await form.getByLabel('Input', { exact: true }).fill('version 2.4');
    const maxTokens = form.getByLabel('Max tokens');
    await maxTokens.fill('-5');
    await form.getByRole('button', { name: 'Start run' }).click();

    await expect(maxTokens).toHaveAttribute('aria-invalid', 'true');
    await expect(maxTokens).toHaveAccessibleDescription(/Max tokens must be 1 or more; -5 is negative\./);
    const summary = form.getByRole('heading', { name: 'The run was not started' });
    await expect(summary).toBeVisible();
    await expect(page).toHaveURL(runsAddress(namespace));
    await expect(form.getByLabel('Composition', { exact: true })).toHaveValue('human-review');
    await expect(form.getByLabel('Input', { exact: true })).toHaveValue('version 2.4');
    await expect(maxTokens).toHaveValue('-5');
    // the summary's entry takes the focus to the field
    await form.getByRole('link', { name: /Max tokens must be 1 or more/ }).click();
    await expect(maxTokens).toBeFocused();
  });

  test('the filters are kept in the address, and back and forward step through them', async ({ page }) => {
    const namespace = env('ORRERY_CONSOLE_NAMESPACE');
    await signInToRuns(page, namespace, '?role=owner');
    const filters = page.getByRole('search', { name: 'Filter runs' });
    const phase = filters.getByLabel('Phase');
    const role = filters.getByLabel('Your role');
    await expect(role).toHaveValue('owner');

    await phase.selectOption('AwaitingApproval');
    await expect(page).toHaveURL(runsAddress(namespace, '\\?phase=AwaitingApproval&role=owner'));
    await expect(page.getByRole('table', { name: /: phase Awaiting approval$/ }).or(page.getByRole('heading', { name: 'No runs of yours match these filters' }))).toBeVisible();
    await role.selectOption('');
    await expect(page).toHaveURL(runsAddress(namespace, '\\?phase=AwaitingApproval'));

    await page.goBack();
    await expect(page).toHaveURL(runsAddress(namespace, '\\?phase=AwaitingApproval&role=owner'));
    await expect(role).toHaveValue('owner');
    await page.goBack();
    await expect(page).toHaveURL(runsAddress(namespace, '\\?role=owner'));
    await expect(phase).toHaveValue('');
    await page.goForward();
    await expect(phase).toHaveValue('AwaitingApproval');
  });
});
