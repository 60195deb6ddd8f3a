// The canvas's layout (rules 12.10, 12.13, 12.20–12.24, 12.69), in Chromium against the real
// sidecar and under its policy (the fixtures fail a spec on any CSP violation):
//
// - The graph runs left to right on a wide canvas (1440×900, 1920×1080) and top to bottom on a
//   tall one; one spec always gives one layout (12.20, 12.22).
// - A node dragged by hand keeps the graph as it is through a resize that crosses the two
//   directions; Tidy lays it out again (12.21).
// - A graph loaded over another is fitted to its own nodes, never below 75 %; an import too big
//   for that starts at its first node; the fit holds as the window resizes until the person
//   zooms (12.23, 12.24).
// - Below 1280 px the palette is a rail of icons that keep their names and blurbs (12.13).
// - Until the schema answers (asked again after 1 s and 3 s) nothing is gated (12.10).

import { type Locator, type Page } from '@playwright/test';
import { expect, readConsoleEnv, test } from './fixtures.ts';
import { signIn } from './studio-api.ts';

async function openCompose(page: Page): Promise<void> {
  await signIn(page, readConsoleEnv().alice.token);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Compose' })).toBeVisible();
}

async function loadTemplate(page: Page, name: string): Promise<void> {
  await page.getByRole('button', { name: 'Templates…' }).click();
  const gallery = page.getByRole('dialog', { name: 'Pattern gallery' });
  await gallery.getByRole('button', { name: `Load ${name}` }).click();
  await expect(gallery).toBeHidden();
  await expect(page.getByText(`Loaded the template ${name}.`)).toBeVisible();
}

/** The element that says how the graph is laid out (`data-direction`, `data-moved`). */
const frame = (page: Page): Locator => page.locator('[data-direction]');

interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** A node's spec id: its accessible name starts with it (`writer, LLM agent…`). */
const ID_OF = (label: string | null): string => (label ?? '').split(',')[0] ?? '';

/** Where each node is drawn on screen, by id. */
async function screenBoxes(page: Page): Promise<Map<string, Box>> {
  const boxes = await frame(page)
    .locator('.react-flow__node')
    .evaluateAll((nodes) =>
      nodes.map((n) => {
        const r = n.getBoundingClientRect();
        return [n.getAttribute('aria-label'), { x: r.x, y: r.y, width: r.width, height: r.height }] as const;
      }),
    );
  return new Map(boxes.map(([label, box]) => [ID_OF(label), box]));
}

/** Each node's position on the graph (React Flow's coordinates, not the screen's), by id. */
async function graphPositions(page: Page): Promise<Record<string, string>> {
  const entries = await frame(page)
    .locator('.react-flow__node')
    .evaluateAll((nodes) => nodes.map((n) => [n.getAttribute('aria-label'), (n as HTMLElement).style.transform] as const));
  return Object.fromEntries(entries.map(([label, at]) => [ID_OF(label), at]));
}

/** The view's zoom and pan, as React Flow's viewport draws them. */
async function viewport(page: Page): Promise<string> {
  return (await frame(page).locator('.react-flow__viewport').getAttribute('style')) ?? '';
}

function zoomOf(style: string): number {
  const scale = /scale\(([\d.]+)\)/.exec(style);
  return scale === null ? Number.NaN : Number(scale[1]);
}

/** Waits until the view and the nodes have settled (two reads 300 ms apart agree); gives the view. */
async function settled(page: Page): Promise<string> {
  let last = '';
  let view = '';
  await expect
    .poll(
      async () => {
        view = await viewport(page);
        const now = `${view} ${JSON.stringify(await graphPositions(page))}`;
        const same = now === last && view !== '';
        last = now;
        return same;
      },
      { intervals: [300], timeout: 10_000 },
    )
    .toBe(true);
  return view;
}

/** The node boxes that lie wholly within the canvas's frame. */
async function inView(page: Page): Promise<string[]> {
  const box = await frame(page).boundingBox();
  if (box === null) throw new Error('the canvas is not on screen');
  const out: string[] = [];
  for (const [id, b] of await screenBoxes(page)) {
    if (b.x >= box.x - 1 && b.y >= box.y - 1 && b.x + b.width <= box.x + box.width + 1 && b.y + b.height <= box.y + box.height + 1) out.push(id);
  }
  return out.sort();
}

/** The ids of the pipeline template, in the order its edges run. */
const PIPELINE = ['research', 'writer', 'editor'];

/** A Pipeline Composition of `count` agents, as YAML, too long to fit the view at 75 %. */
function longPipeline(count: number): string {
  const ids = Array.from({ length: count }, (_, i) => `step-${String(i + 1).padStart(2, '0')}`);
  return [
    'apiVersion: studio.orrery.dev/v1alpha1',
    'kind: Composition',
    'metadata: {name: long-pipeline}',
    'spec:',
    '  pattern: Pipeline',
    '  nodes:',
    ...ids.map((id) => `    - {id: ${id}, kind: LLMAgent, model: scripted, instruction: Go on.}`),
    '  edges:',
    ...ids.slice(1).map((id, i) => `    - {from: ${ids[i] ?? ''}, to: ${id}}`),
  ].join('\n');
}

test.describe('compose: layout, fitting and the palette rail', () => {
  test('the graph runs left to right on a wide canvas and top to bottom on a tall one, and one spec gives one layout (12.20, 12.22, 12.69)', async ({ page }) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openCompose(page);
    await loadTemplate(page, 'pipeline');
    for (const [width, height] of [
      [1440, 900],
      [1920, 1080],
    ] as const) {
      await page.setViewportSize({ width, height });
      await expect(frame(page), `${width}×${height}`).toHaveAttribute('data-direction', 'RIGHT');
      await settled(page);
      // The layout runs off the main thread: on a busy machine two equal reads can come before
      // it lands, so the order itself is what is waited for (and fails if it never comes).
      await expect(async () => {
        const boxes = await screenBoxes(page);
        const xs = PIPELINE.map((id) => boxes.get(id)?.x ?? Number.NaN);
        expect(xs[0], `${width}×${height}: research left of writer`).toBeLessThan(xs[1] ?? Number.NaN);
        expect(xs[1], `${width}×${height}: writer left of editor`).toBeLessThan(xs[2] ?? Number.NaN);
        expect(await inView(page), `${width}×${height}: the whole graph is in view`).toEqual([...PIPELINE].sort());
      }).toPass({ timeout: 10_000 });
    }

    // Loading the same spec again lays it out the same (12.22): ranks follow the edges.
    const first = await graphPositions(page);
    await loadTemplate(page, 'debate');
    await loadTemplate(page, 'pipeline');
    await settled(page);
    expect(await graphPositions(page)).toEqual(first);

    // A canvas taller than wide: top to bottom.
    await page.setViewportSize({ width: 1200, height: 1900 });
    await expect(frame(page)).toHaveAttribute('data-direction', 'DOWN');
    await settled(page);
    const boxes = await screenBoxes(page);
    const ys = PIPELINE.map((id) => boxes.get(id)?.y ?? Number.NaN);
    expect(ys[0], 'research above writer').toBeLessThan(ys[1] ?? Number.NaN);
    expect(ys[1], 'writer above editor').toBeLessThan(ys[2] ?? Number.NaN);
  });

  test('a dragged graph keeps its places through a resize that crosses directions, until Tidy (12.21, 12.69)', async ({ page }) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openCompose(page);
    await loadTemplate(page, 'pipeline');
    await expect(frame(page)).toHaveAttribute('data-direction', 'RIGHT');
    await settled(page);
    const writer = frame(page).getByRole('group', { name: /^writer, / });
    const box = await writer.boundingBox();
    if (box === null) throw new Error('writer is not on screen');
    await page.mouse.move(box.x + box.width / 2, box.y + 10);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2, box.y + 90, { steps: 8 });
    await page.mouse.up();
    await expect(frame(page)).toHaveAttribute('data-moved', 'true');
    const dragged = await graphPositions(page);

    // Taller than wide would lay out top to bottom, but a person placed a node: nothing moves.
    await page.setViewportSize({ width: 1200, height: 1900 });
    await settled(page);
    expect(await graphPositions(page)).toEqual(dragged);
    await expect(frame(page)).toHaveAttribute('data-direction', 'RIGHT');
    expect(await inView(page), 'the moved graph is still fitted').toEqual([...PIPELINE].sort());

    // Tidy lays it out again, for the canvas's shape now.
    await page.getByRole('toolbar', { name: 'Canvas' }).getByRole('button', { name: 'Tidy' }).click();
    await expect(frame(page)).toHaveAttribute('data-direction', 'DOWN');
    await expect(frame(page)).toHaveAttribute('data-moved', 'false');
    await settled(page);
    expect(await graphPositions(page)).not.toEqual(dragged);
  });

  test('a graph loaded over another is fitted to its own nodes, an oversized import starts at its first node, and the fit holds until a zoom (12.23, 12.24, 12.69)', async ({ page }) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openCompose(page);

    // A large graph, then a small one over it: the view fits the small one, at 75 % or more.
    await loadTemplate(page, 'map-reduce');
    await settled(page);
    await loadTemplate(page, 'critic-loop');
    const fitted = await settled(page);
    expect(zoomOf(fitted)).toBeGreaterThanOrEqual(0.75);
    const ids = [...(await screenBoxes(page)).keys()].sort();
    expect(ids.length).toBe(3);
    expect(await inView(page)).toEqual(ids);

    // The window resizes: still fitted (12.24).
    await page.setViewportSize({ width: 1600, height: 1000 });
    expect(await settled(page)).not.toBe(fitted);
    expect(await inView(page)).toEqual(ids);

    // The person zooms: a resize no longer refits.
    await frame(page).locator('.react-flow__pane').hover();
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -200);
    await page.keyboard.up('Control');
    const zoomed = await settled(page);
    expect(zoomOf(zoomed)).toBeGreaterThan(zoomOf(fitted));
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(await settled(page)).toBe(zoomed);

    // An import too long for the view at 75 % starts at its first node, at 75 % (12.23).
    await page.getByRole('button', { name: 'Import…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import YAML' });
    await dialog.getByLabel('Or the manifests themselves').fill(longPipeline(30));
    await dialog.getByRole('button', { name: 'Check' }).click();
    await dialog.getByRole('button', { name: 'Load long-pipeline onto the canvas' }).click();
    await expect(dialog).toBeHidden();
    const start = await settled(page);
    expect(zoomOf(start)).toBeCloseTo(0.75, 2);
    const visible = await inView(page);
    expect(visible).toContain('step-01');
    expect(visible).not.toContain('step-30');
  });

  test('below 1280 px the palette is a rail of icons that keep their names and blurbs (12.13)', async ({ page, axe }) => {
    await page.setViewportSize({ width: 1200, height: 900 });
    await openCompose(page);
    const palette = page.getByRole('region', { name: 'Add a node' });
    const agent = palette.getByRole('button', { name: 'LLM agent', exact: true });
    await expect(agent).toBeVisible();
    await expect(agent).toHaveAttribute('title', /^LLM agent: ./);
    await expect(agent).toHaveAccessibleDescription(/^A model /);
    // The name is there for screen readers, not drawn: the button is an icon's width.
    await expect.poll(async () => (await agent.boundingBox())?.width ?? Number.POSITIVE_INFINITY).toBeLessThan(64);
    // A kind the server does not run keeps its reason on the rail too.
    await expect(palette.getByRole('button', { name: /^Handoff/ })).toHaveAttribute('title', /not available: /);
    await axe('compose-rail');
    await page.setViewportSize({ width: 1440, height: 900 });
    // Wide again: the palette's entries have their words back (once the page has seen the resize).
    await expect.poll(async () => (await agent.boundingBox())?.width ?? 0).toBeGreaterThan(120);
  });

  test('until the schema answers, every kind is offered and the server decides; once it answers the palette follows it (12.10)', async ({ page, pageProblems }) => {
    await openCompose(page);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Runs' }).click();
    // The next two asks fail, as a sidecar that is starting would; the third is the real answer.
    let failures = 2;
    pageProblems.allowConsoleError(/status of 503/);
    await page.route('**/api/v1/schema', async (route) => {
      if (failures > 0) {
        failures -= 1;
        await route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ loc: [], code: 'unavailable', message: 'starting' }) });
        return;
      }
      await route.continue();
    });
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Compose' }).click();
    const palette = page.getByRole('region', { name: 'Add a node' });
    await expect(palette.getByRole('status')).toHaveText('Reading what this server runs… every kind is offered meanwhile.');
    await expect(palette.getByRole('button', { name: /^Handoff/ })).not.toHaveAttribute('aria-disabled', 'true');
    // After 1 s and 3 s more the schema answers: Handoff, which this server does not run, is off.
    await expect(palette.getByRole('button', { name: /^Handoff/ })).toHaveAttribute('aria-disabled', 'true', { timeout: 10_000 });
    await expect(palette.getByRole('status')).toHaveCount(0);
    expect(failures).toBe(0);
  });
});
