// The registry tab of Compose (rules 12.49–12.52), in Chromium against the real sidecar: the
// namespace's RegistryEntries as the operator's probes left them, read-only.
//
// - demo-writer (A2A): Ready, its card's pinned digest and how it was pinned, its skills allowed
//   or not, acting ones marked from the entry's `effect` (12.49, 12.50).
// - demo-tools (MCP): its transport's endpoint, its network, its tools and which are read-only
//   (12.51).
// - changing-writer: its card changed after it was pinned (tests/tests/e2e_console.rs starts its
//   writer again asking for a bearer token and asks for a probe), so it is PinChanged: open, with
//   the pinned and the proposed digest and the kubectl commands that accept exactly those pins
//   or probe again (12.49).
// - Nothing on the tab changes an entry: no button but the disclosures (12.52); axe in both themes.

import { type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { signIn } from './studio-api.ts';

async function openRegistry(page: Page): Promise<void> {
  await signIn(page, readConsoleEnv().alice.token);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
  const tabs = page.getByRole('tablist', { name: 'Inspector' });
  await tabs.getByRole('tab', { name: /^Registry/ }).click();
}

/** An entry's disclosure, by the name its summary starts with. */
const entry = (page: Page, name: string) => page.locator('details').filter({ has: page.locator('summary > code').getByText(name, { exact: true }) });

const DIGEST = /^[0-9a-f]{64}$/;

test.describe('compose: the registry, read-only, with a changed card', () => {
  test('each entry shows its readiness, pins, skills and tools, and a changed card its digests and the commands that accept it (12.49–12.52)', async ({ page, axe }) => {
    await openRegistry(page);
    const namespace = readConsoleEnv().namespace;
    const panel = page.getByRole('tabpanel');
    await expect(panel.getByRole('heading', { name: `Registry of ${namespace}` })).toBeVisible();
    await expect(panel.getByText('Read-only: entries are edited as resources (kubectl, GitOps).')).toBeVisible();

    // demo-writer: Ready, pinned, its skill allowed and read-only (its effect is ReadOnly).
    const writer = entry(page, 'demo-writer');
    await expect(writer.locator('summary')).toContainText('A2A agent');
    await expect(writer.locator('summary')).toContainText('Ready');
    await writer.locator('summary').click();
    const writerDigest = writer.locator('dt:text-is("Card digest") + dd');
    await expect(writerDigest).toContainText(/[0-9a-f]{64}/);
    const skills = writer.getByRole('table', { name: 'Skills of the card' });
    await expect(skills.getByRole('row').filter({ hasText: 'draft' })).toHaveText(/^draft\s*yes\s*read-only$/);

    // acting-writer, the same card registered `effect: Acting`: its skill is marked acting (12.50),
    // and the entry is refused here, where acting remotes are off.
    const acting = entry(page, 'acting-writer');
    await expect(acting.locator('summary')).toContainText('Not ready');
    await acting.locator('summary').click();
    await expect(acting.getByRole('table', { name: 'Skills of the card' }).getByRole('row').filter({ hasText: 'draft' })).toHaveText(/^draft\s*yes\s*acting$/);
    await expect(acting.locator('dt:text-is("Condition") + dd')).toContainText('acting remotes');

    // demo-tools: an MCP server with its tools classified.
    const tools = entry(page, 'demo-tools');
    await expect(tools.locator('summary')).toContainText('MCP server');
    await tools.locator('summary').click();
    await expect(tools.getByRole('definition').first()).toContainText('/mcp');
    const toolRows = tools.getByRole('table', { name: 'Tools' }).getByRole('row');
    await expect(toolRows.filter({ hasText: 'search_articles' })).toContainText('yes');

    // changing-writer: not Ready (PinChanged), open by itself, with both digests and the commands.
    const changed = entry(page, 'changing-writer');
    await expect(changed.locator('summary')).toContainText('Not ready (PinChanged)');
    const what = changed.getByRole('region', { name: 'What changed at changing-writer' });
    await expect(what).toBeVisible();
    const digests = await what.getByRole('listitem').filter({ hasText: /digest/ }).locator('code').allTextContents();
    expect(digests, 'the pinned and the proposed card digest').toHaveLength(2);
    const [pinned, proposed] = digests;
    expect(pinned).toMatch(DIGEST);
    expect(proposed).toMatch(DIGEST);
    expect(proposed).not.toBe(pinned);
    await expect(changed.locator('dt:text-is("Card digest") + dd')).toContainText(pinned ?? '');
    const commands = await changed.locator('code[tabindex="0"]').allTextContents();
    // Accepting names the digest of every pin the probe proposes (the card's among them); the
    // entry's condition names the same command.
    await expect(changed.locator('dt:text-is("Condition") + dd')).toContainText('studio.orrery.dev/accept-pins=');
    const accept = new RegExp(`^kubectl annotate registryentry changing-writer -n ${namespace} studio\\.orrery\\.dev/accept-pins=[0-9a-f]{16,64} --overwrite$`);
    expect(commands.filter((c) => accept.test(c)), 'the accept-pins command').toHaveLength(1);
    expect(commands).toContain(`kubectl annotate registryentry changing-writer -n ${namespace} studio.orrery.dev/reprobe="$(date +%s)" --overwrite`);

    // Read-only: nothing here is a button (the disclosures are summaries), and no entry can be tried.
    await expect(panel.getByRole('button')).toHaveCount(0);
    await axe('compose-registry');
  });
});
