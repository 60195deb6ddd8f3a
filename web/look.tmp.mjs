import { chromium } from '@playwright/test';
import { readFileSync } from 'node:fs';
const caps = JSON.parse(readFileSync('/tmp/caps.json', 'utf8'));
const composition = JSON.parse(readFileSync('/tmp/cschema.json', 'utf8'));
const [,, hash = '#/compose', out = '/tmp/look.png', theme = 'light', width = '1440', height = '900', actions = ''] = process.argv;
const browser = await chromium.launch({ executablePath: '/usr/lib/chromium/chromium' });
const page = await browser.newPage({ viewport: { width: Number(width), height: Number(height) }, colorScheme: theme });
page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'info') console.log('console', m.type(), m.text()); });
page.on('pageerror', (e) => console.log('page error:', e.message));
await page.route('**/api/v1/**', async (route) => {
  const url = new URL(route.request().url());
  const p = url.pathname;
  const json = (body, status = 200) => route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });
  if (p === '/api/v1/me') return json({ username: 'alice', groups: [], person: true, namespaces: ['team-a'] });
  if (p === '/api/v1/schema') return json({ composition, events: {}, capabilities: caps, budgetCeilings: caps.ceilings, approvalTimeoutSeconds: 900 });
  if (p.endsWith('/registry')) return json({ items: [{ name: 'demo-writer', spec: { a2a: { cardUrl: 'http://x', skills: ['draft'] } }, ready: true }, { name: 'scripted', spec: { model: {} }, ready: true }] });
  if (p.endsWith('/validate')) {
    const body = JSON.parse(route.request().postData() ?? '{}');
    const nodes = body.spec?.nodes ?? [];
    const errors = [];
    nodes.forEach((n, i) => { if (n.kind === 'LLMAgent' && !n.instruction) errors.push({ loc: ['spec', 'nodes', i, 'instruction'], field: `spec.nodes[${i}].instruction`, code: 'missing_instruction', message: `node ${n.id} needs an instruction` }); });
    if (!body.spec?.pattern) errors.push({ loc: ['spec', 'pattern'], field: 'spec.pattern', code: 'missing_pattern', message: 'choose a pattern' });
    return json({ valid: errors.length === 0, errors, warnings: [] });
  }
  if (p.includes('/runs/')) return json({ items: [] });
  if (p.endsWith('/compositions')) return json({ items: [] });
  return json({ loc: [], code: 'not_found', message: 'no route in look.mjs' }, 404);
});
await page.goto(`http://localhost:4173/`);
await page.getByLabel('Bearer token').fill('t');
await page.keyboard.press('Enter');
await page.getByText('Signed in as').waitFor();
await page.evaluate((h) => { window.location.hash = h; }, hash);
await page.waitForTimeout(800);
for (const step of actions.split(';').filter(Boolean)) {
  const [kind, arg] = step.split('=');
  if (kind === 'click') await page.getByRole('button', { name: arg, exact: true }).first().click();
  if (kind === 'load') { await page.getByRole('button', { name: 'Templates…' }).click(); await page.getByRole('button', { name: `Load ${arg}` }).click(); }
  if (kind === 'wait') await page.waitForTimeout(Number(arg));
  if (kind === 'node') await page.getByRole('group', { name: new RegExp(`^${arg},`) }).first().click();
  if (kind === 'key') await page.keyboard.press(arg);
}
await page.waitForTimeout(1200);
console.log("viewport", await page.locator(".react-flow__viewport").getAttribute("style").catch(() => "none"), "frame", JSON.stringify(await page.locator("[data-direction]").boundingBox().catch(() => null)));
console.log("nodes", await page.locator(".react-flow__node").count(), JSON.stringify(await page.locator(".react-flow__node").first().boundingBox().catch(() => null)), await page.locator(".react-flow__node").first().getAttribute("style").catch(() => null));
console.log("vis", await page.locator(".react-flow__node").first().evaluate((el) => { const cs = getComputedStyle(el); const r = el.getBoundingClientRect(); const top = document.elementFromPoint(r.x + 20, r.y + 20); return [cs.opacity, cs.display, cs.visibility, top?.className, top?.tagName]; }));
await page.screenshot({ path: out, fullPage: false });
await browser.close();
