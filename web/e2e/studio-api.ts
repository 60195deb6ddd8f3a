// What the specs do outside the page, as a second person or a script would: call the sidecar's
// API with Node's fetch and a person's token, start runs, read fields of a reply; and the two
// page steps every spec repeats (signing in by pasting a token, reading the timeline's seqs).
// The Studio comes from the environment fixtures.ts documents (ORRERY_CONSOLE_URL, …).

import { type Locator, type Page } from '@playwright/test';
import { expect } from './fixtures.ts';

/** The sidecar serving the console, without a trailing slash (read when first needed). */
export function consoleUrl(): string {
  const url = process.env['ORRERY_CONSOLE_URL'] ?? '';
  if (url === '') throw new Error('ORRERY_CONSOLE_URL is not set: run the specs through tests/tests/e2e_console.rs');
  return url.replace(/\/$/, '');
}

/** A reply of the API: its status and its JSON body (null when empty). */
export interface Reply {
  readonly status: number;
  readonly body: unknown;
}

/** Calls the API as `token`'s holder: `init.body` is sent as JSON. */
export async function api(token: string, path: string, init: { readonly method?: string; readonly body?: unknown } = {}): Promise<Reply> {
  const response = await fetch(`${consoleUrl()}${path}`, {
    method: init.method ?? 'GET',
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

/** The value at `path` in a JSON value, or undefined. */
export function field(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}

/** The API path of a run. */
export const runPath = (namespace: string, name: string): string => `/api/v1/runs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;

/** Starts a run as `token`'s holder (`body`: what `POST /api/v1/runs/{ns}` takes); expects 201 and returns its name and UID. */
export async function startRun(token: string, namespace: string, body: Record<string, unknown>): Promise<{ readonly name: string; readonly uid: string }> {
  const started = await api(token, `/api/v1/runs/${encodeURIComponent(namespace)}`, { method: 'POST', body });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const name = field(started.body, 'metadata', 'name');
  const uid = field(started.body, 'metadata', 'uid');
  if (typeof name !== 'string' || typeof uid !== 'string') throw new Error(`the started run has no name or UID: ${JSON.stringify(started.body)}`);
  return { name, uid };
}

/** Opens the console and signs in by pasting `token` (it lives in the page's memory only). */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${consoleUrl()}/`);
  await signInHere(page, token);
}

/** Signs in on the page as it is (the console asks for a token wherever it was opened). */
export async function signInHere(page: Page, token: string): Promise<void> {
  const box = page.getByLabel('Bearer token');
  await box.fill(token);
  await box.press('Enter');
  await expect(page.getByText('Signed in as')).toBeVisible();
}

/**
 * Every seq the timeline lists, scrolling its region from top to bottom (it draws only the rows
 * in view): the distinct seqs in order, and those listed on more than one row at once.
 */
export async function timelineSeqs(region: Locator): Promise<{ readonly seqs: number[]; readonly twice: number[] }> {
  const seqs = new Set<number>();
  const twice = new Set<number>();
  await region.evaluate((el) => {
    el.scrollTop = 0;
  });
  for (;;) {
    await region.page().waitForTimeout(50);
    const inView = await region.locator('tr[data-seq]').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))));
    inView.forEach((seq, i) => {
      if (inView.indexOf(seq) !== i) twice.add(seq);
      seqs.add(seq);
    });
    const more = await region.evaluate((el) => {
      if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) return false;
      el.scrollTop += el.clientHeight / 2;
      return true;
    });
    if (!more) break;
  }
  return { seqs: [...seqs].sort((a, b) => a - b), twice: [...twice] };
}

/** Presses Tab until `target` has the focus (what a keyboard-only person does), at most `max` times. */
export async function tabTo(page: Page, target: Locator, max = 120): Promise<void> {
  for (let i = 0; i < max; i += 1) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`${String(target)} never took the focus after ${max} presses of Tab`);
}

/** Whether the environment gives a kubectl and a kubeconfig (`ORRERY_KUBECTL`, `ORRERY_KUBECONFIG`). */
export function hasKubectl(): boolean {
  return (process.env['ORRERY_KUBECTL'] ?? '') !== '' && (process.env['ORRERY_KUBECONFIG'] ?? '') !== '';
}

/** Runs kubectl as `user` (a context of the control plane's kubeconfig), as a person at a terminal would; gives its output. */
export async function kubectl(user: string, ...args: string[]): Promise<string> {
  const exe = process.env['ORRERY_KUBECTL'] ?? '';
  const config = process.env['ORRERY_KUBECONFIG'] ?? '';
  if (exe === '' || config === '') throw new Error('ORRERY_KUBECTL and ORRERY_KUBECONFIG are not set: run the specs through tests/tests/e2e_console.rs');
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    execFile(exe, ['--kubeconfig', config, '--context', user, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(`kubectl ${args.join(' ')}: ${error.message}\n${stderr}`));
    });
  });
}
