// Open, revisions, restore and a run by reference (rules 12.56 and 12.58), in Chromium against
// the real sidecar and operator. Alice (bound to the composition-editor Role) saves a Composition
// three times through the API, as a script would, and the operator records three revisions.
//
// - Open lists Compositions newest first (the one changed last on top) and filters them; a
//   Composition's revisions are listed newest first, and any two compare (12.56).
// - An older revision opens on the canvas, linked; a run of it, unchanged, is started by
//   reference to that revision and filed under it (12.58).
// - Save reads Restore for it, and restoring makes it the newest revision (12.56).
// - A template loaded over it is unlinked; Undo restores the canvas and its link (12.57).

import { type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { api, field, runPath, signIn } from './studio-api.ts';

const INSTRUCTIONS = ['Draft it.', 'Draft it twice.', 'Draft it three times.'] as const;

function specWith(instruction: string): Record<string, unknown> {
  return {
    pattern: 'Pipeline',
    budgets: { timeoutSeconds: 600 },
    nodes: [
      { id: 'draft', kind: 'LLMAgent', model: 'scripted', instruction },
      { id: 'publish', kind: 'LLMAgent', model: 'scripted', instruction: 'Publish it.' },
    ],
    edges: [{ from: 'draft', to: 'publish' }],
  };
}

const compositionPath = (namespace: string, name: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/compositions/${encodeURIComponent(name)}`;

/** Saves `name` three times as alice (one spec per instruction) and waits for its three revisions. */
async function saveThreeTimes(namespace: string, name: string): Promise<void> {
  const token = readConsoleEnv().alice.token;
  let resourceVersion: string | undefined;
  for (const [i, instruction] of INSTRUCTIONS.entries()) {
    const saved = await api(token, compositionPath(namespace, name), { method: 'PUT', body: { spec: specWith(instruction), ...(resourceVersion === undefined ? {} : { resourceVersion }) } });
    expect([200, 201], JSON.stringify(saved.body)).toContain(saved.status);
    // As a script would: read it back once the operator has recorded it (its status write gives
    // the object a new resourceVersion), and change that.
    await expect
      .poll(async () => {
        const read = await api(token, compositionPath(namespace, name));
        const version = field(read.body, 'metadata', 'resourceVersion');
        resourceVersion = typeof version === 'string' ? version : undefined;
        return field(read.body, 'status', 'revision');
      }, { timeout: 30_000 })
      .toBe(i + 1);
  }
  await expect
    .poll(async () => {
      const listed = await api(token, `${compositionPath(namespace, name)}/revisions`);
      const items = field(listed.body, 'items');
      return Array.isArray(items) ? items.length : 0;
    }, { timeout: 30_000 })
    .toBe(3);
}

async function openCompose(page: Page): Promise<void> {
  await signIn(page, readConsoleEnv().alice.token);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
}

test.describe('compose: open, revisions, restore and run by reference', () => {
  test('an older revision is listed, compared, run by reference and restored as the newest (12.56, 12.58)', async ({ page, pageProblems, axe }) => {
    test.setTimeout(240_000);
    // The run's page asks for the spec it ran until the operator has recorded it (404 meanwhile).
    pageProblems.allowConsoleError(/status of 404 .*\/composition/);
    const { namespace, alice } = readConsoleEnv();
    const name = `revised-${Date.now().toString(36)}`;
    await saveThreeTimes(namespace, name);
    await openCompose(page);

    // Open: the Composition changed last is on top; the filter narrows the list.
    await page.getByRole('button', { name: 'Open…' }).click();
    const dialog = page.getByRole('dialog', { name: /^Open a Composition of / });
    const list = dialog.getByRole('list', { name: 'Compositions, newest first' });
    // (Other specs save Compositions at the same time: what is checked is that this one, changed
    // a moment ago, comes before the ones the Studio was installed with.)
    await expect(list.locator(':scope > li').filter({ hasText: name })).toHaveCount(1);
    const order = await list.locator(':scope > li').evaluateAll((items) => items.map((li) => li.querySelector('code')?.textContent ?? ''));
    expect(order.indexOf(name), order.join(', ')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf(name), order.join(', ')).toBeLessThan(order.indexOf('human-review'));
    await dialog.getByLabel('Filter by name or description').fill(name);
    await expect(list.locator(':scope > li')).toHaveCount(1);

    // Its revisions, newest first, and a comparison of the first with the last.
    await dialog.getByRole('button', { name: `Revisions of ${name}` }).click();
    await expect(dialog.getByRole('heading', { name: `Revisions of ${name}, newest first` })).toBeVisible();
    const opens = dialog.getByRole('button', { name: new RegExp(`^Open revision \\d of ${name}`) });
    await expect(opens).toHaveCount(3);
    await expect(opens.nth(0)).toHaveAccessibleName(`Open revision 3 of ${name} (latest)`);
    await expect(opens.nth(1)).toHaveAccessibleName(`Open revision 2 of ${name}`);
    await expect(opens.nth(2)).toHaveAccessibleName(`Open revision 1 of ${name}`);
    await dialog.getByLabel('Compare revision').selectOption('1');
    await dialog.getByLabel('with revision').selectOption('3');
    const changes = dialog.getByRole('region', { name: 'Changes from revision 1 to revision 3' });
    await expect(changes).toContainText('instruction');
    await expect(changes).toContainText(INSTRUCTIONS[2]);
    await axe('compose-open-revisions');

    // Revision 1 opens on the canvas, linked, and Save reads Restore.
    await dialog.getByRole('button', { name: `Open revision 1 of ${name}`, exact: true }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByText(`Opened revision 1 of ${name}.`)).toBeVisible();
    await expect(page.getByText('revision 1 of 3 — Save restores it as the newest')).toBeVisible();
    await expect(page.getByRole('button', { name: 'Restore', exact: true })).toBeVisible();

    // Run it, unchanged: by reference to revision 1, so the run is filed under it (12.58).
    await page.getByRole('button', { name: 'Run…' }).click();
    const run = page.getByRole('dialog', { name: 'Run the canvas' });
    await expect(run).toContainText(`Runs ${name} revision 1 as saved, by reference, so the run is filed under it.`);
    await run.getByLabel('Input').fill('version 1');
    await run.getByRole('button', { name: 'Start the run' }).click();
    await expect(page).toHaveURL(/#\/runs\/[^/]+\/[^/]+$/);
    const runName = decodeURIComponent(new URL(page.url()).hash.split('/').at(-1) ?? '');
    await expect
      .poll(async () => field((await api(alice.token, runPath(namespace, runName))).body, 'spec', 'compositionRef'), { timeout: 30_000 })
      .toEqual({ name, revision: 1 });
    await expect
      .poll(async () => field((await api(alice.token, runPath(namespace, runName))).body, 'status', 'composition', 'revision'), { timeout: 60_000 })
      .toBe(1);

    // Back on Compose the older revision is still there; Restore makes it revision 4.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
    await page.getByRole('button', { name: 'Restore', exact: true }).click();
    await expect(page.getByText(new RegExp(`^Restored revision 1 of ${name} as revision 4: it is the newest now\\.`))).toBeVisible();
    await expect(page.getByRole('button', { name: 'Save', exact: true })).toBeVisible();
    const stored = await api(alice.token, compositionPath(namespace, name));
    expect(field(stored.body, 'metadata', 'generation')).toBe(4);
    expect(field(stored.body, 'spec', 'nodes')).toEqual(specWith(INSTRUCTIONS[0])['nodes']);

    // Edited and saved again at once: the operator's status write of revision 4 came between,
    // which is no one's change, so the save goes through as revision 5 (no conflict shown).
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    await page.getByRole('tablist', { name: 'Inspector' }).getByRole('tab', { name: /^Composition/ }).click();
    await inspector.getByLabel('Description').fill('Restored, then described.');
    await page.keyboard.press('ControlOrMeta+S');
    await expect(page.getByText(`Saved ${name}, revision 5.`)).toBeVisible();
    await expect(page.getByText(/Not saved/)).toHaveCount(0);
    expect(field((await api(alice.token, compositionPath(namespace, name))).body, 'spec', 'description')).toBe('Restored, then described.');

    // A template loads unlinked, so Save could not overwrite this Composition with it; Undo
    // restores the canvas and its link (12.57).
    await expect(page.getByText(`${name}, revision 5`, { exact: true })).toBeVisible();
    await page.getByRole('button', { name: 'Templates…' }).click();
    await page.getByRole('dialog', { name: 'Pattern gallery' }).getByRole('button', { name: 'Load pipeline' }).click();
    await expect(page.getByText(`${name}, revision 5`, { exact: true })).toHaveCount(0);
    await page.getByRole('status').filter({ hasText: 'Loaded the template pipeline.' }).getByRole('button', { name: 'Undo' }).click();
    await expect(page.getByText(`${name}, revision 5`, { exact: true })).toBeVisible();
    await expect(inspector.getByLabel('Description')).toHaveValue('Restored, then described.');
  });
});
