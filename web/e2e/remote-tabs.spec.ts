// The run's A2A and MCP tabs (rules 12.47–12.51), in Chromium against a real run: alice starts a
// run whose `research` node searches demo-tools (MCP) and whose `drafter` asks demo-writer (A2A)
// for a draft, with content captured (the scripted model of tests/tests/e2e_console.rs).
//
// - A2A: the call with what was sent and its size, the task's states in order and the reply
//   text (12.47, 12.48); the remote the run uses with its card's skills and how it is pinned,
//   its skill read-only from the entry's effect (12.49, 12.50).
// - MCP: the call with its arguments and result, and the server with its tools classified; no
//   try-it anywhere (12.51).
// - The same calls in the replay of the run.

import { expect, readConsoleEnv, test } from './fixtures.ts';
import { api, consoleUrl, field, runPath, signInHere, startRun } from './studio-api.ts';

const SPEC = {
  pattern: 'Pipeline',
  budgets: { timeoutSeconds: 600, maxRemoteCalls: 2, maxToolCalls: 4 },
  nodes: [
    { id: 'research', kind: 'LLMAgent', model: 'scripted', instruction: 'Search the articles.', tools: ['mcp:demo-tools.search_articles'] },
    { id: 'drafter', kind: 'LLMAgent', model: 'scripted', instruction: 'Ask the writer for a draft.', tools: ['a2a:demo-writer.draft'] },
  ],
  edges: [{ from: 'research', to: 'drafter' }],
};

test.describe('run: the A2A and MCP tabs', () => {
  test('each remote and MCP call shows what was sent, the task states and the reply, beside the entries the run uses (12.47–12.51)', async ({ page, axe }) => {
    test.setTimeout(180_000);
    const { namespace, alice } = readConsoleEnv();
    const { name } = await startRun(alice.token, namespace, { composition: SPEC, input: 'search', captureContent: true });
    await expect
      .poll(async () => field((await api(alice.token, runPath(namespace, name))).body, 'status', 'phase'), { timeout: 90_000 })
      .toBe('Succeeded');

    await page.goto(`${consoleUrl()}/#/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
    await signInHere(page, alice.token);
    const tabs = page.getByRole('tablist', { name: 'About the run' });

    // A2A: one call, completed, with its request, its states and the reply (12.47, 12.48).
    await tabs.getByRole('tab', { name: 'A2A (1)' }).click();
    const calls = page.getByRole('list', { name: 'Calls to remote agents' });
    const call = calls.getByRole('button', { name: /^Call 1: drafter → demo-writer\.draft, completed, / });
    await call.click();
    await expect(call).toHaveAttribute('aria-expanded', 'true');
    const a2a = calls.locator('dd');
    await expect(a2a.filter({ hasText: /^Request by SendStreamingMessage: one text part, \d+ bytes/ })).toHaveCount(1);
    await expect(a2a.filter({ hasText: /completed$/ }).first()).toBeVisible();
    await expect(page.getByLabel('Request of call 1')).toContainText('# Version 2.4');
    await expect(page.getByLabel('Reply of call 1')).not.toBeEmpty();
    // The remote this run uses: its skill allowed and read-only (its effect), pinned (12.49, 12.50).
    await expect(page.getByRole('heading', { name: 'Remote agents this run uses' })).toBeVisible();
    const writer = page.locator('details').filter({ has: page.locator('summary > code').getByText('demo-writer', { exact: true }) });
    await writer.locator('summary').click();
    await expect(writer.getByRole('table', { name: 'Skills of the card' }).getByRole('row').filter({ hasText: 'draft' })).toHaveText(/^draft\s*yes\s*read-only$/);
    await expect(writer.locator('dt:text-is("Card digest") + dd')).toContainText(/[0-9a-f]{64}/);
    await axe('run-a2a');

    // MCP: the search, with its arguments and result, and the server's tools (12.51).
    await tabs.getByRole('tab', { name: 'MCP (1)' }).click();
    const mcpCalls = page.getByRole('list', { name: 'Calls to MCP tools' });
    const search = mcpCalls.getByRole('button', { name: /^Call 1: research → demo-tools\.search_articles, ok in / });
    await search.click();
    await expect(page.getByLabel('Arguments of call 1')).toContainText('search');
    await expect(page.getByLabel('Result of call 1')).not.toBeEmpty();
    await expect(page.getByRole('heading', { name: 'MCP servers this run uses' })).toBeVisible();
    const tools = page.locator('details').filter({ has: page.locator('summary > code').getByText('demo-tools', { exact: true }) });
    await tools.locator('summary').click();
    await expect(tools.getByRole('table', { name: 'Tools' }).getByRole('row').filter({ hasText: 'search_articles' })).toContainText('yes');
    // Nothing here calls a tool or a remote (7.13): the only buttons are the calls and the disclosures' summaries.
    await expect(page.getByRole('tabpanel').getByRole('button', { name: /try|fetch|call it/i })).toHaveCount(0);
    await axe('run-mcp');

    // The replay shows the same calls.
    await page.evaluate((hash) => {
      window.location.hash = hash;
    }, `#/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/replay`);
    await page.getByRole('button', { name: 'Instant replay' }).click();
    const replayTabs = page.getByRole('tablist', { name: 'Remote calls' });
    await expect(replayTabs.getByRole('tab', { name: 'A2A (1)' })).toBeVisible();
    await expect(replayTabs.getByRole('tab', { name: 'MCP (1)' })).toBeVisible();
  });
});
