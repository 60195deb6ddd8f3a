// The browser half of the console's benchmark (tests/bench/src/bin/bench_console.rs starts it
// and reads what it prints; docs/benchmarks.md "The console"). It drives the built console in
// Debian's Chromium (headless, no download), served by a real sidecar, and prints one JSON
// object a line on standard output:
//
//   {"kind":"bundle", …}     the runs page's first load: every JavaScript file it fetched, raw
//                            and gzip-compressed sizes (the sidecar serves them uncompressed;
//                            gzip -9 is what a compressing proxy or ingress would send)
//   {"kind":"replay", …}     a finished run's "instant" replay: the page's own performance
//                            measure `orrery:replay-instant` (events read → model built → shown)
//   {"kind":"following","run":…}          the run page is open and its stream is connected
//   {"kind":"seen","run":…,"t":ms,"seq":n} the page's last applied seq changed (t: epoch ms)
//   {"kind":"heap","run":…,"usedBytes":n} the JS heap after a forced garbage collection
//
// It reads commands on standard input, one a line: `bundle`, `replay <name>`, `follow <name>`,
// `quit`. Environment: ORRERY_CONSOLE_URL, ORRERY_CONSOLE_NAMESPACE, ORRERY_TOKEN_ALICE,
// ORRERY_CHROMIUM (default /usr/lib/chromium/chromium).
import { createInterface } from 'node:readline';
import { gzipSync } from 'node:zlib';
import { chromium } from '@playwright/test';

const base = required('ORRERY_CONSOLE_URL');
const namespace = required('ORRERY_CONSOLE_NAMESPACE');
const token = required('ORRERY_TOKEN_ALICE');

function required(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`console-bench: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

function emit(object) {
  process.stdout.write(`${JSON.stringify(object)}\n`);
}

const browser = await chromium.launch({
  executablePath: process.env.ORRERY_CHROMIUM ?? '/usr/lib/chromium/chromium',
  headless: true,
});
const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
const page = await context.newPage();
const cdp = await context.newCDPSession(page);
await cdp.send('Performance.enable');
page.on('pageerror', (error) => {
  console.error(`console-bench: page error: ${error.message}`);
});

async function signIn() {
  await page.goto(`${base}/#/runs/${encodeURIComponent(namespace)}`);
  await page.getByLabel('Bearer token').fill(token);
  await page.getByLabel('Bearer token').press('Enter');
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

async function bundle() {
  const fresh = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const tab = await fresh.newPage();
  const scripts = new Map();
  tab.on('response', async (response) => {
    const url = response.url();
    if (!url.endsWith('.js')) return;
    try {
      const body = await response.body();
      scripts.set(new URL(url).pathname, { raw: body.length, gzip: gzipSync(body, { level: 9 }).length });
    } catch {
      // a response without a body (a redirect): nothing to count
    }
  });
  const started = Date.now();
  await tab.goto(`${base}/#/runs/${encodeURIComponent(namespace)}`);
  await tab.getByLabel('Bearer token').fill(token);
  await tab.getByLabel('Bearer token').press('Enter');
  await tab.getByRole('table').first().waitFor();
  const shownMs = Date.now() - started;
  await tab.waitForLoadState('networkidle');
  const files = [...scripts.entries()].map(([path, sizes]) => ({ path, ...sizes }));
  emit({
    kind: 'bundle',
    files,
    rawBytes: files.reduce((sum, f) => sum + f.raw, 0),
    gzipBytes: files.reduce((sum, f) => sum + f.gzip, 0),
    tableShownMs: shownMs,
  });
  await fresh.close();
}

async function replay(name) {
  await page.goto(`${base}/#/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/replay`);
  await page.getByRole('button', { name: /instant/i }).click();
  const measure = await page.waitForFunction(
    () => {
      const entries = performance.getEntriesByName('orrery:replay-instant', 'measure');
      const last = entries.at(-1);
      return last === undefined ? null : { durationMs: last.duration, detail: last.detail ?? null };
    },
    null,
    { timeout: 60_000, polling: 50 },
  );
  emit({ kind: 'replay', run: name, ...(await measure.jsonValue()) });
}

async function heap(run) {
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const used = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? null;
  const nodes = metrics.find((m) => m.name === 'Nodes')?.value ?? null;
  emit({ kind: 'heap', run, usedBytes: used, domNodes: nodes });
}

async function follow(name) {
  await page.goto(`${base}/#/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  const marker = page.locator('[data-run-last-seq]');
  await page.waitForFunction(() => document.querySelector('[data-run-stream="open"]') !== null, null, { timeout: 60_000, polling: 20 });
  emit({ kind: 'following', run: name });
  let last = -1;
  for (;;) {
    // One read of both, so the last seq seen is the one the page had when run.end was applied.
    const { seq, ended } = await marker.evaluate((element) => ({
      seq: Number(element.getAttribute('data-run-last-seq')),
      ended: element.getAttribute('data-run-ended') === 'true',
    }));
    if (seq !== last) {
      last = seq;
      emit({ kind: 'seen', run: name, t: Date.now(), seq });
    }
    if (ended) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await heap(name);
}

await signIn();
emit({ kind: 'ready' });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [command, argument] = line.trim().split(/\s+/, 2);
  try {
    if (command === 'bundle') await bundle();
    else if (command === 'replay' && argument) await replay(argument);
    else if (command === 'follow' && argument) await follow(argument);
    else if (command === 'quit') break;
    else console.error(`console-bench: unknown command ${line}`);
  } catch (error) {
    emit({ kind: 'error', command: line, message: error instanceof Error ? error.message : String(error) });
  }
}
await browser.close();
