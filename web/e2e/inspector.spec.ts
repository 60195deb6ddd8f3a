// The inspector's registry-backed fields and the seed import (rules 12.12, 12.17, 12.18, 12.67),
// in Chromium against the real sidecar and the namespace's RegistryEntries: demo-tools (every
// tool read-only), demo-writer (read-only) and acting-writer (the same card, `effect: Acting`,
// which this Studio does not allow).
//
// - "Remote agent" adds an agent that calls a skill the registry offers (12.12).
// - Tools are picked from the registry; a read-only one is added and removed, an acting one is
//   shown but cannot be added, with why (12.17).
// - The model is one of the deployment's models (12.18).
// - A seed's JSON is converted by the sidecar and loads unlinked with Undo; a bad seed lists
//   every problem at its path and line, and nothing loads (12.67).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { signIn } from './studio-api.ts';

const SEED = readFileSync(path.resolve(import.meta.dirname, '../../crds/tests/fixtures/release-notes.spec.json'), 'utf8');

async function openCompose(page: Page): Promise<void> {
  await signIn(page, readConsoleEnv().alice.token);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
}

test.describe('compose: tools from the registry, the model list and seed import', () => {
  test('Remote agent calls a registry skill; tools are picked from the registry, acting ones refused with why; the model is one of the deployment’s (12.12, 12.17, 12.18)', async ({ page, pageProblems, axe }) => {
    // Until a pattern is chosen the spec is not one the server can read: a 422, shown as a
    // finding (and logged by Chromium as a failed load).
    pageProblems.allowConsoleError(/status of 422 .*\/validate\)$/);
    await openCompose(page);
    const palette = page.getByRole('region', { name: 'Add a node' });
    const remote = palette.getByRole('button', { name: 'Remote agent', exact: true });
    // demo-writer's draft skill (or, while the registry spec has it ready, the same writer
    // registered as changing-writer): a read-only skill of a ready entry, never acting-writer's.
    await expect(remote).toHaveAccessibleDescription(/^An LLM agent calling a2a:(demo|changing)-writer\.draft; /);
    const tool = /calling (a2a:[a-z-]+\.draft)/.exec((await remote.getAttribute('aria-describedby').then((id) => page.locator(`[id="${id ?? ''}"]`).textContent())) ?? '')?.[1] ?? '';
    expect(tool).not.toBe('');
    await remote.click();
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    await expect(inspector.getByRole('heading', { name: /^Node / })).toBeVisible();
    const heading = (await inspector.getByRole('heading', { name: /^Node / }).textContent()) ?? '';
    const id = /^Node (\S+)/.exec(heading)?.[1] ?? '';
    const own = inspector.getByRole('list', { name: `Tools of ${id}` });
    await expect(own).toContainText(tool);

    // A read-only MCP tool is added, then removed.
    const tools = inspector.getByRole('region', { name: 'Tools' });
    await tools.getByRole('button', { name: 'Add mcp:demo-tools.search_articles' }).click();
    await expect(own).toContainText('mcp:demo-tools.search_articles');
    await expect(tools.getByRole('button', { name: 'Add mcp:demo-tools.search_articles' })).toHaveAccessibleDescription(/Already on this node/);
    await own.getByRole('button', { name: 'Remove mcp:demo-tools.search_articles' }).click();
    await expect(own).not.toContainText('mcp:demo-tools.search_articles');

    // The acting remote is shown, but cannot be added, and says why.
    const acting = tools.getByRole('button', { name: 'Add a2a:acting-writer.draft' });
    await expect(acting).toBeDisabled();
    await expect(acting).toHaveAccessibleDescription(/^Cannot be added: /);
    await acting.click({ force: true });
    await expect(own).not.toContainText('acting-writer');

    // The model is one of the deployment's models.
    const model = inspector.getByLabel('Model');
    await model.selectOption('scripted');
    await expect(model).toHaveValue('scripted');
    await axe('compose-tools');
  });

  test('a seed’s JSON is converted by the sidecar and loads unlinked with Undo; a bad seed lists every problem first (12.67)', async ({ page, pageProblems, axe }) => {
    // The bad seed is a 422 the dialog lists, logged by Chromium as a failed load.
    pageProblems.allowConsoleError(/status of 422 .*\/import/);
    await openCompose(page);
    await page.getByRole('button', { name: 'Templates…' }).click();
    await page.getByRole('dialog', { name: 'Pattern gallery' }).getByRole('button', { name: 'Load pipeline' }).click();
    const canvas = page.getByRole('application', { name: /^Canvas of / });
    const node = (id: string) => canvas.getByRole('group', { name: new RegExp(`^${id}, `) });
    await expect(node('editor')).toBeVisible();
    await page.getByRole('button', { name: 'Import…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import YAML or seed JSON' });
    const text = dialog.getByLabel('Or the manifests themselves');

    // A seed of a newer spec_version with an unknown key and an edge listed twice: every problem, nothing to load.
    const bad = JSON.parse(SEED) as { spec_version: number; owner?: string; edges: unknown[] };
    bad.spec_version = 2;
    bad.owner = 'someone';
    bad.edges.push(bad.edges[0]);
    await text.fill(JSON.stringify(bad, null, 2));
    await dialog.getByRole('button', { name: 'Check' }).click();
    const problems = dialog.getByRole('region', { name: 'Problems' });
    await expect(problems).toContainText(/spec_version \(line \d+\)/);
    await expect(problems).toContainText(/owner \(line \d+\)/);
    await expect(problems).toContainText(/edges\[3\]/);
    await expect(dialog.getByRole('button', { name: /^Load / })).toHaveCount(0);
    await axe('compose-import-bad-seed');

    // The seed itself: converted as `orrery import` converts it, checked, and loaded unlinked.
    await text.fill(SEED);
    await dialog.getByRole('button', { name: 'Check' }).click();
    await expect(dialog.getByRole('region', { name: "The server's check" })).toBeVisible();
    await dialog.getByRole('button', { name: 'Load release-notes onto the canvas' }).click();
    await expect(dialog).toBeHidden();
    const banner = page.getByRole('status').filter({ hasText: 'Imported release-notes; it is not linked to a Composition until you save it.' });
    await expect(banner).toBeVisible();
    await expect(node('critic')).toBeVisible();
    await expect(node('editor')).toHaveCount(0);
    // Undo puts the pipeline back (12.25).
    await banner.getByRole('button', { name: 'Undo' }).click();
    await expect(node('editor')).toBeVisible();
    await expect(node('critic')).toHaveCount(0);
  });
});
