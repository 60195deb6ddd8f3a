// Compose, the canvas (console part 2, rules 12.6–12.30, 12.68–12.70), in Chromium against the
// real sidecar: its validator is the one that judges what the canvas holds (POST …/validate
// with alice's token, against the namespace's RegistryEntries: the scripted model, demo-tools and
// demo-writer of tests/tests/e2e_console.rs).
//
// - The empty canvas offers the pattern gallery and the demo (12.7); every template loads, is
//   drawn and is found valid by the server (12.6, 12.19, 12.70: the gallery is the examples).
// - Alice builds a critic loop from the empty canvas with the keyboard alone (12.8, 12.14–12.16,
//   12.29): two agents from the palette, renamed, connected with "Connect to…"; the loop back
//   takes the first free label and a cap of 2 (12.15). A loop cap past the server's limit is an
//   error on that edge, listed with its field, and goes when fixed (12.26–12.28). Undo and redo.
// - On a narrow screen the canvas is read-only and still inspectable (12.68).
// - axe in both themes on the canvas, the gallery and the inspector.

import { type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { api, field, runPath, signIn, tabTo } from './studio-api.ts';

async function openCompose(page: Page): Promise<void> {
  await signIn(page, readConsoleEnv().alice.token);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
}

const canvas = (page: Page) => page.getByRole('application', { name: /^Canvas of / });
const verdict = (page: Page) => page.getByRole('status').filter({ hasText: /^(Valid|Checking|Not checked|\d+ problems?|Could not check|Add a node)/ });
const node = (page: Page, id: string) => canvas(page).getByRole('group', { name: new RegExp(`^${id}, `) });

test.describe('compose: the canvas, its templates and validation', () => {
  test('the empty canvas offers the gallery and the demo, and every template loads and is found valid by the server', async ({ page, axe }) => {
    test.setTimeout(180_000);
    await openCompose(page);
    // A fresh tab's canvas is empty (12.7), and nothing is sent to the validator yet.
    await expect(page.getByText('The canvas is empty.')).toBeVisible();
    await expect(verdict(page)).toHaveText('Add a node, or load a template: the composition is checked with the server as you edit.');
    await expect(page.getByRole('button', { name: 'Load the demo (critic-loop)' })).toBeVisible();
    // The palette follows the published capabilities: a kind the server does not run is off, with its reason (12.9).
    const palette = page.getByRole('region', { name: 'Add a node' });
    await expect(palette.getByRole('button', { name: /^Handoff/ })).toHaveAttribute('aria-disabled', 'true');
    await expect(palette.getByRole('button', { name: /^Handoff/ })).toHaveAccessibleDescription(/^Not available: /);
    await expect(palette.getByRole('button', { name: /^LLM agent/ })).not.toHaveAttribute('aria-disabled', 'true');
    await axe('compose-empty');

    await page.getByRole('button', { name: 'Open the pattern gallery' }).click();
    const gallery = page.getByRole('dialog', { name: 'Pattern gallery' });
    await expect(gallery).toBeVisible();
    await axe('compose-gallery');
    const names = await gallery.getByRole('button', { name: /^Load / }).evaluateAll((buttons) => buttons.map((b) => (b.getAttribute('aria-label') ?? '').replace(/^Load /, '')));
    expect(names.length, 'one template per example').toBeGreaterThanOrEqual(9);
    await page.keyboard.press('Escape');
    await expect(gallery).toBeHidden();

    for (const name of names) {
      await page.getByRole('button', { name: 'Templates…' }).click();
      await gallery.getByRole('button', { name: `Load ${name}` }).click();
      await expect(gallery).toBeHidden();
      await expect(page.getByText(`Loaded the template ${name}.`)).toBeVisible();
      await expect(canvas(page)).toHaveAttribute('aria-label', /nodes? and \d+ edges?/);
      await expect(verdict(page), `the server finds ${name} valid`).toHaveText(/^Valid/, { timeout: 15_000 });
    }

    // The last load is undone from its banner: the canvas goes back to the template before it.
    const last = names.at(-1) ?? '';
    await page.getByRole('status').filter({ hasText: `Loaded the template ${last}.` }).getByRole('button', { name: 'Undo' }).click();
    await expect(page.getByText(`Loaded the template ${last}.`)).toBeHidden();
    await axe('compose-template');
  });

  test('alice builds a critic loop by keyboard alone; a loop cap past the limit is an error on that edge until fixed', async ({ page, pageProblems, axe }) => {
    test.setTimeout(180_000);
    // Until a pattern is chosen the spec is not one the server can read: a 422, shown as a
    // finding (and logged by Chromium as a failed load).
    pageProblems.allowConsoleError(/status of 422 .*\/validate\)$/);
    await openCompose(page);
    // A new page's canvas is empty.
    await expect(page.getByText('The canvas is empty.')).toBeVisible();

    const palette = page.getByRole('region', { name: 'Add a node' });
    const addAgent = palette.getByRole('button', { name: /^LLM agent/ });
    const inspector = page.getByRole('complementary', { name: 'Inspector' });
    const idField = inspector.getByLabel('Id', { exact: true });

    // Two agents from the palette, each opened in the inspector and renamed (12.8, 12.16).
    for (const [id, instruction] of [
      ['writer', 'Write the release notes.'],
      ['critic', 'Approve the notes or reject them with what to change.'],
    ] as const) {
      await tabTo(page, addAgent);
      await page.keyboard.press('Enter');
      await expect(inspector.getByRole('heading', { name: /^Node agent-1 / })).toBeVisible();
      await tabTo(page, idField);
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type(id);
      await page.keyboard.press('Enter');
      await expect(node(page, id)).toBeVisible();
      await tabTo(page, inspector.getByLabel('Instruction'));
      await page.keyboard.type(instruction);
      await tabTo(page, inspector.getByLabel('Model'));
      await page.keyboard.type('scripted');
    }
    await tabTo(page, inspector.getByLabel('Route labels (comma-separated)'));
    await page.keyboard.type('approved, rejected');

    // Connect by keyboard ("Connect to…", 12.14): writer → critic, then critic → writer, which
    // closes a loop: it takes the critic's first free label (approved) and a cap of 2 (12.15).
    const connectTo = inspector.getByLabel('Connect to…');
    const connect = inspector.getByRole('button', { name: 'Connect', exact: true });
    await tabTo(page, node(page, 'writer'));
    await page.keyboard.press('Enter');
    await expect(inspector.getByRole('heading', { name: /^Node writer/ })).toBeVisible();
    await tabTo(page, connectTo);
    await page.keyboard.press('ArrowDown');
    await tabTo(page, connect);
    await page.keyboard.press('Enter');
    await expect(inspector.getByRole('heading', { name: /^Edge writer → critic/ })).toBeVisible();
    await expect(inspector.getByLabel(/^Loop cap/)).toHaveValue('');

    await tabTo(page, node(page, 'critic'));
    await page.keyboard.press('Enter');
    await expect(inspector.getByRole('heading', { name: /^Node critic/ })).toBeVisible();
    await tabTo(page, connectTo);
    await page.keyboard.press('ArrowDown');
    await tabTo(page, connect);
    await page.keyboard.press('Enter');
    await expect(inspector.getByRole('heading', { name: /^Edge critic → writer/ })).toBeVisible();
    await expect(inspector.getByLabel(/^When/)).toHaveValue('approved');
    await expect(inspector.getByLabel(/^Loop cap/)).toHaveValue('2');
    await tabTo(page, inspector.getByLabel(/^When/));
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('rejected');

    // The pattern, on the Composition tab (WAI-ARIA tabs: arrows move between them).
    const tabs = page.getByRole('tablist', { name: 'Inspector' });
    await tabTo(page, tabs.getByRole('tab', { selected: true }));
    await page.keyboard.press('ArrowRight');
    await expect(tabs.getByRole('tab', { name: /^Composition/, selected: true })).toBeVisible();
    await tabTo(page, inspector.getByLabel('Pattern'));
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await expect(inspector.getByLabel('Pattern')).toHaveValue('CriticLoop');
    await expect(verdict(page)).toHaveText(/^Valid/, { timeout: 15_000 });
    await axe('compose-built-by-keyboard');

    // A loop cap past the server's limit: an error on that edge, listed with its field (12.27, 12.28).
    const loop = canvas(page).getByRole('group', { name: /^critic to writer \(rejected · max 2\)/ });
    await tabTo(page, loop);
    await page.keyboard.press('Enter');
    await expect(inspector.getByRole('heading', { name: /^Edge critic → writer/ })).toBeVisible();
    await tabTo(page, inspector.getByLabel(/^Loop cap/));
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('99');
    await expect(verdict(page)).toHaveText(/^\d+ problems?/, { timeout: 15_000 });
    await expect(canvas(page).getByRole('group', { name: /^critic to writer \(rejected · max 99\), \d+ problems?/ })).toBeVisible();
    await expect(inspector.getByRole('heading', { name: /^Edge critic → writer/ })).toBeVisible();
    await expect(inspector.getByRole('region', { name: 'Problems of this edge' })).toContainText(/spec\.edges\[1\]\.maxIterations/);
    await axe('compose-edge-error');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('3');
    await expect(verdict(page)).toHaveText(/^Valid/, { timeout: 15_000 });

    // Undo (outside a text field) takes the last step back: typing in one field is one step.
    await tabTo(page, page.getByRole('button', { name: 'Undo', exact: true }).first());
    await page.keyboard.press('Enter');
    await expect(inspector.getByLabel(/^Loop cap/)).toHaveValue('2');
    await tabTo(page, page.getByRole('button', { name: 'Redo', exact: true }));
    await page.keyboard.press('Enter');
    await expect(inspector.getByLabel(/^Loop cap/)).toHaveValue('3');

    // Delete removes the selected edge.
    await tabTo(page, canvas(page).getByRole('group', { name: /^critic to writer/ }));
    await page.keyboard.press('Enter');
    await page.keyboard.press('Delete');
    await expect(canvas(page).getByRole('group', { name: /^critic to writer/ })).toHaveCount(0);
  });

  test('export gives the manifests with the entries used; import loads a Composition, refuses other kinds and lists every problem first (12.65, 12.67)', async ({ page, axe }) => {
    await openCompose(page);
    await page.getByRole('button', { name: 'Load the demo (critic-loop)' }).click();
    await page.getByRole('button', { name: 'Export…' }).click();
    const exported = page.getByRole('dialog', { name: 'Export as YAML' });
    const yaml = exported.getByLabel('The manifests');
    await expect(yaml).toContainText('kind: Composition');
    await expect(yaml).toContainText('name: demo-tools');
    await expect(yaml).toContainText('kind: RegistryEntry');
    await expect(yaml).not.toContainText('managedFields');
    await axe('compose-export');
    await page.keyboard.press('Escape');

    await page.getByRole('button', { name: 'Import…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import YAML' });
    const text = dialog.getByLabel('Or the manifests themselves');
    // A YAML error: nothing loads, the problem is named with its document and line.
    await text.fill('apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nspec: [1\n');
    await dialog.getByRole('button', { name: 'Check' }).click();
    await expect(dialog.getByRole('region', { name: 'Problems' })).toContainText('Document 1, line');
    await expect(dialog.getByRole('button', { name: /^Load / })).toHaveCount(0);
    // A Composition and a kind the canvas does not take: the one loads, the other is listed with the kubectl command.
    await text.fill(
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata: {name: settings}',
        '---',
        'apiVersion: studio.orrery.dev/v1alpha1',
        'kind: Composition',
        'metadata: {name: two-steps}',
        'spec:',
        '  pattern: Pipeline',
        '  nodes:',
        '    - {id: first, kind: LLMAgent, model: scripted, instruction: Go.}',
        '    - {id: second, kind: LLMAgent, model: scripted, instruction: Go on.}',
        '  edges:',
        '    - {from: first, to: second}',
      ].join('\n'),
    );
    await dialog.getByRole('button', { name: 'Check' }).click();
    await expect(dialog.getByRole('region', { name: 'Not loaded' })).toContainText('ConfigMap settings');
    await axe('compose-import');
    await dialog.getByRole('button', { name: 'Load two-steps onto the canvas' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByText('Imported two-steps; it is not linked to a Composition until you save it.')).toBeVisible();
    await expect(node(page, 'first')).toBeVisible();
    await expect(verdict(page)).toHaveText(/^Valid/, { timeout: 15_000 });
    // Undo from the banner brings the demo back (12.25).
    await page.getByRole('status').filter({ hasText: 'Imported two-steps' }).getByRole('button', { name: 'Undo' }).click();
    await expect(node(page, 'critic')).toBeVisible();
  });

  test('every template runs from the canvas and its live graph is drawn; fan-out-fan-in runs to Succeeded (12.6)', async ({ page, axe }) => {
    test.setTimeout(600_000);
    const { alice, namespace } = readConsoleEnv();
    await openCompose(page);
    await page.getByRole('button', { name: 'Templates…' }).click();
    const gallery = page.getByRole('dialog', { name: 'Pattern gallery' });
    const names = await gallery.getByRole('button', { name: /^Load / }).evaluateAll((buttons) => buttons.map((b) => (b.getAttribute('aria-label') ?? '').replace(/^Load /, '')));
    await page.keyboard.press('Escape');
    // fan-out-fan-in last: its nodes answer with the scripted model's echo, so it runs to its end
    // (the writer of the others asks alice a question); the others are cancelled once their graph
    // is drawn.
    const whole = 'fan-out-fan-in';
    const order = [...names.filter((n) => n !== whole), whole];
    for (const name of order) {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
      await page.getByRole('button', { name: 'Templates…' }).click();
      await gallery.getByRole('button', { name: `Load ${name}` }).click();
      await expect(verdict(page)).toHaveText(/^Valid/, { timeout: 15_000 });
      await page.getByRole('button', { name: 'Run…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Run the canvas' });
      await expect(dialog).toContainText('Runs the canvas as it is (not saved as a Composition), inline');
      await dialog.getByLabel('Input').fill(`Release notes for ${name}`);
      await page.keyboard.press('ControlOrMeta+Enter');
      // The run's own page: its live graph.
      await expect(page).toHaveURL(new RegExp(`#/runs/${namespace}/`), { timeout: 15_000 });
      const run = decodeURIComponent(new URL(page.url()).hash.split('/').at(-1) ?? '');
      const graph = page.getByRole('application', { name: /^Graph of / });
      await expect(graph, `${name}: the run's graph`).toBeVisible({ timeout: 60_000 });
      if (name === whole) {
        await axe('compose-run-live', { screenshots: false });
        await expect(page.getByText('The run ended: Succeeded', { exact: false }), `${name} runs to its end`).toBeVisible({ timeout: 240_000 });
      } else {
        const cancelled = await api(alice.token, `${runPath(namespace, run)}/cancel`, { method: 'POST' });
        expect([202, 409], `${name}: cancel`).toContain(cancelled.status);
      }
    }
  });

  test('save writes the canvas as a Composition with alice\'s rights; a change made meanwhile is a conflict she resolves; bob may not save (12.53–12.56)', async ({ page, pageProblems, axe }) => {
    test.setTimeout(180_000);
    pageProblems.allowConsoleError(/status of (409|403) .*\/compositions\/canvas-notes[^/]*\)$/);
    const { alice, bob, namespace } = readConsoleEnv();
    const name = `canvas-notes-${Date.now().toString(36)}`;
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/compositions/${name}`;
    await openCompose(page);
    await page.getByRole('button', { name: 'Load the demo (critic-loop)' }).click();
    await expect(verdict(page)).toHaveText(/^Valid/, { timeout: 15_000 });
    // Ctrl+S on a canvas not linked to a Composition asks for a name (12.53).
    await page.keyboard.press('ControlOrMeta+S');
    const naming = page.getByRole('dialog', { name: 'Save as a new Composition' });
    await naming.getByLabel('Name of the new Composition').fill(name);
    await naming.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByText(new RegExp(`^Created ${name}`))).toBeVisible({ timeout: 15_000 });
    await expect(page.getByText(/unsaved changes/)).toHaveCount(0);
    // The cluster has it as the canvas had it, managed by orrery-console.
    const stored = await api(alice.token, path);
    expect(stored.status).toBe(200);
    expect((stored.body as { spec: { nodes: { id: string }[] } }).spec.nodes.map((n) => n.id)).toEqual(['research', 'writer', 'critic']);

    // alice edits on the canvas; meanwhile someone else (a script with alice's token, reading the
    // Composition once the operator has recorded it) changes it in the cluster.
    await page.getByRole('tab', { name: /^Composition/ }).click();
    await page.getByRole('complementary', { name: 'Inspector' }).getByLabel('Description', { exact: true }).fill('Changed on the canvas.');
    await expect.poll(async () => field((await api(alice.token, path)).body, 'status', 'revision'), { timeout: 30_000 }).toBe(1);
    const theirs = structuredClone((await api(alice.token, path)).body) as { metadata: { resourceVersion: string }; spec: { description: string } };
    theirs.spec.description = 'Changed by a script.';
    const put = await api(alice.token, path, { method: 'PUT', body: { spec: theirs.spec, resourceVersion: theirs.metadata.resourceVersion } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // The canvas follows the cluster: with her edit unsaved, a banner says so and her edit stays.
    await expect(page.getByRole('alert', { name: 'Changed in the cluster' })).toBeVisible({ timeout: 15_000 });
    // She saves anyway: a conflict, never an overwrite (12.54).
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const conflict = page.getByRole('alert', { name: 'Not saved: changed in the cluster' });
    await expect(conflict).toBeVisible({ timeout: 15_000 });
    await axe('compose-save-conflict');
    expect(((await api(alice.token, path)).body as { spec: { description: string } }).spec.description).toBe('Changed by a script.');
    // Keep theirs: the canvas takes the cluster's version.
    await conflict.getByRole('button', { name: 'Keep theirs' }).click();
    await expect(page.getByRole('complementary', { name: 'Inspector' }).getByLabel('Description', { exact: true })).toHaveValue('Changed by a script.');

    // Open lists it; Save copy makes another Composition (12.55, 12.56).
    await page.getByRole('button', { name: 'Open…' }).click();
    const opening = page.getByRole('dialog', { name: /^Open a Composition/ });
    await opening.getByLabel('Filter by name or description').fill(name);
    await expect(opening.getByRole('button', { name: `Open ${name}` })).toBeVisible();
    // The Open dialog closes and the copy dialog opens at once (as Escape then Ctrl+Shift+S
    // typed fast): the browser tells of the first one's close only after the second opened,
    // which must not close the second. Both in one task here, so the order is certain.
    await page.evaluate(() => {
      document.querySelector<HTMLDialogElement>('dialog[open]')?.close();
      window.dispatchEvent(new KeyboardEvent('keydown', { key: 'S', ctrlKey: true, shiftKey: true }));
    });
    const copying = page.getByRole('dialog', { name: 'Save a copy as a new Composition' });
    await expect(copying.getByLabel('Name of the new Composition')).toHaveValue(`${name}-copy`);
    await copying.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByText(new RegExp(`^Created ${name}-copy`))).toBeVisible({ timeout: 15_000 });
    expect((await api(alice.token, `${path}-copy`)).status).toBe(200);

    // bob has no editor Role: his save is refused, and the page says what he lacks.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, bob.token);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
    // Signing out forgot alice's canvas.
    await expect(page.getByText('The canvas is empty.')).toBeVisible();
    await page.getByRole('button', { name: 'Load the demo (critic-loop)' }).click();
    await page.getByRole('button', { name: 'Save copy…' }).click();
    await copying.getByLabel('Name of the new Composition').fill(`${name}-bob`);
    await copying.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('alert', { name: 'Not saved' })).toContainText('(403)');
    await expect(page.getByRole('alert', { name: 'Not saved' })).toContainText('composition-editor-role.yaml');
  });

  test('on a narrow screen the canvas is read-only and still opens what is selected in the inspector', async ({ page }) => {
    await page.setViewportSize({ width: 700, height: 900 });
    await openCompose(page);
    if (await page.getByText('The canvas is empty.').isVisible()) {
      await page.getByRole('button', { name: 'Load the demo (critic-loop)' }).click();
    }
    await expect(page.getByText('The canvas is read-only on a screen this narrow')).toBeVisible();
    await expect(page.getByRole('region', { name: 'Add a node' })).toHaveCount(0);
    const first = canvas(page).getByRole('group', { name: /^[a-z]/ }).first();
    const before = await canvas(page).getAttribute('aria-label');
    const inspected = page.getByRole('complementary', { name: 'Inspector' }).getByRole('heading', { name: /^(Node|Edge) / });
    // The canvas may still be laying the template out (off-thread) and replace its nodes: focus
    // and Enter again until the inspector opens, as a person would.
    await expect(async () => {
      await first.focus();
      await page.keyboard.press('Enter');
      await expect(inspected).toBeVisible({ timeout: 2_000 });
    }).toPass({ timeout: 20_000 });
    await page.keyboard.press('Delete');
    await expect(canvas(page)).toHaveAttribute('aria-label', before ?? '');
    await expect(page.getByRole('complementary', { name: 'Inspector' }).getByRole('button', { name: /^Remove/ })).toHaveCount(0);
  });
});
