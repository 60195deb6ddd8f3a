// What every browser test of the console shares. Import `test` and `expect` from here, never
// from '@playwright/test', so each test gets:
//
// - `page`, watched: every `securitypolicyviolation` event in the page (an init script's
//   listener, reported through a binding) and every console error and uncaught exception fail
//   the test when it ends, listed readably. A test that expects a console error says so first:
//   `pageProblems.allowConsoleError(/status of 401/)` (Chromium logs every 4xx reply to a fetch).
// - `consoleEnv`: the Studio the specs run against, from the environment (below).
// - `axe(name)`: axe-core on the page as it is now, in the light and the dark theme in turn
//   (`prefers-color-scheme` emulated), with WCAG 2.0, 2.1 and 2.2 A/AA and best-practice rules;
//   the violations are attached to the report per theme and fail the test; a screenshot of
//   each theme is taken too (`<name>-light.png`, `<name>-dark.png`).
// - `shoot(name)`: a full-page screenshot `<name>.png` in the screenshots directory, also
//   attached to the report.
//
// The environment (tests/tests/e2e_console.rs sets it; web/README.md has the same list):
//   ORRERY_CONSOLE_URL          the sidecar serving the console (Playwright's baseURL)
//   ORRERY_CONSOLE_NAMESPACE    the namespace that Studio serves
//   ORRERY_TOKEN_ALICE          alice's bearer token (a person bound to the studio-user Role)
//   ORRERY_TOKEN_BOB            bob's bearer token (the same Role, another person)
//   ORRERY_CONSOLE_FINISHED_A   two finished runs of alice's, of one Composition (history.spec.ts;
//   ORRERY_CONSOLE_FINISHED_B   unset on a Studio without them)
//   ORRERY_KUBECTL, ORRERY_KUBECONFIG  a kubectl and the control plane's kubeconfig (contexts named
//                               for the users: admin, alice, …), for specs that change the cluster
//                               as a person at a terminal would (unset: those specs are skipped)
//   ORRERY_CONSOLE_RESTART_FILE where a spec asks for the sidecar to be killed or started again
//                               (drop.spec.ts; set only for a sidecar the test may kill): it
//                               writes {"id", "action": "kill" | "start"} elsewhere and renames
//                               it to this file; the answer {"id", "action", "error"} comes in
//                               <file>.done (tests/src/spec_sidecar.rs, web/README.md)
//   ORRERY_CONSOLE_SCREENSHOTS  where screenshots go (default web/test-results/screenshots)
//   ORRERY_CHROMIUM             the browser (playwright.config.ts; default /usr/lib/chromium/chromium)
import AxeBuilder from '@axe-core/playwright';
import { test as base, expect, type Page } from '@playwright/test';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

export { expect };

/** A person of the test control plane, by the name the cluster gives them. */
export interface Person {
  readonly name: string;
  readonly token: string;
}

/** The Studio the specs run against. */
export interface ConsoleEnv {
  /** The sidecar's URL, which serves the console and its API (`ORRERY_CONSOLE_URL`). */
  readonly url: string;
  /** The one namespace that install serves (`ORRERY_CONSOLE_NAMESPACE`). */
  readonly namespace: string;
  /** Two people bound to the example studio-user Role in that namespace. */
  readonly alice: Person;
  readonly bob: Person;
  /** Where screenshots are written (`ORRERY_CONSOLE_SCREENSHOTS`). */
  readonly screenshots: string;
}

/** The screenshots' directory: `ORRERY_CONSOLE_SCREENSHOTS`, else web/test-results/screenshots. */
export function screenshotsDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env['ORRERY_CONSOLE_SCREENSHOTS'];
  return dir === undefined || dir === '' ? path.resolve(import.meta.dirname, '..', 'test-results', 'screenshots') : path.resolve(dir);
}

/** The environment contract above, read and checked: a missing variable is named. */
export function readConsoleEnv(env: NodeJS.ProcessEnv = process.env): ConsoleEnv {
  const missing: string[] = [];
  const need = (key: string): string => {
    const value = env[key];
    if (value === undefined || value === '') {
      missing.push(key);
      return '';
    }
    return value;
  };
  const url = need('ORRERY_CONSOLE_URL');
  const namespace = need('ORRERY_CONSOLE_NAMESPACE');
  const alice = need('ORRERY_TOKEN_ALICE');
  const bob = need('ORRERY_TOKEN_BOB');
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(', ')} not set: these specs run against a Studio whose sidecar serves the console; ` +
        '`tests/e2e.sh cargo test -p orrery-tests --test e2e_console` installs one and sets them (web/README.md)',
    );
  }
  return { url, namespace, alice: { name: 'alice', token: alice }, bob: { name: 'bob', token: bob }, screenshots: screenshotsDir(env) };
}

/** One `securitypolicyviolation` event, as the page saw it. */
export interface CspViolation {
  readonly directive: string;
  readonly blockedURI: string;
  readonly sourceFile: string;
  readonly line: number;
  readonly sample: string;
  readonly documentURI: string;
}

/** What went wrong in the page while a test ran: CSP violations, console errors, exceptions. */
export class PageProblems {
  readonly violations: CspViolation[] = [];
  readonly consoleErrors: string[] = [];
  readonly pageErrors: string[] = [];
  private readonly allowed: RegExp[] = [];

  /** Console errors matching `pattern` (on `text (url)`) are expected and do not fail the test. */
  allowConsoleError(pattern: RegExp): void {
    this.allowed.push(pattern);
  }

  consoleError(line: string): void {
    if (!this.allowed.some((p) => p.test(line))) this.consoleErrors.push(line);
  }

  /** Everything found so far, one line each (empty: nothing). */
  lines(): string[] {
    return [
      ...this.violations.map(
        (v) => `CSP violation: ${v.directive} blocked ${v.blockedURI || '(inline)'} at ${v.sourceFile || v.documentURI}:${v.line} ${v.sample}`.trimEnd(),
      ),
      ...this.consoleErrors.map((e) => `console error: ${e}`),
      ...this.pageErrors.map((e) => `uncaught exception: ${e}`),
    ];
  }

  /** Returns what was found and forgets it (for a test that provokes a problem on purpose). */
  take(): string[] {
    const lines = this.lines();
    this.violations.length = 0;
    this.consoleErrors.length = 0;
    this.pageErrors.length = 0;
    return lines;
  }
}

/** The binding the init script reports violations through. */
const REPORT_VIOLATION = '__orreryReportCspViolation';

/** Runs in the page before its own scripts (CDP, outside the page's policy). */
function listenForViolations(binding: string): void {
  window.addEventListener(
    'securitypolicyviolation',
    (event) => {
      const report = (window as unknown as Record<string, ((v: CspViolation) => Promise<void>) | undefined>)[binding];
      void report?.({
        directive: event.effectiveDirective,
        blockedURI: event.blockedURI,
        sourceFile: event.sourceFile,
        line: event.lineNumber,
        sample: event.sample,
        documentURI: event.documentURI,
      });
    },
    true,
  );
}

/** The accessibility rules every page is checked against. */
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] as const;

/** The two themes the console follows (`prefers-color-scheme`). */
export const THEMES = ['light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

export interface AxeOptions {
  /** CSS selectors axe leaves out (say why at the call). */
  readonly exclude?: readonly string[];
  /** Take `<name>-<theme>.png` while in each theme (default true). */
  readonly screenshots?: boolean;
}

/** Checks the page as it is now with axe, in both themes; fails the test on any violation. */
export type Axe = (name: string, options?: AxeOptions) => Promise<void>;

/** A full-page screenshot `<name>.png` in the screenshots directory; returns its path. */
export type Shoot = (name: string) => Promise<string>;

interface Fixtures {
  consoleEnv: ConsoleEnv;
  pageProblems: PageProblems;
  axe: Axe;
  shoot: Shoot;
}

export const test = base.extend<Fixtures>({
  // Automatic: a missing variable is named before any page opens, in every test.
  consoleEnv: [
    // eslint-disable-next-line no-empty-pattern -- Playwright's fixture signature
    async ({}, use) => {
      await use(readConsoleEnv());
    },
    { auto: true },
  ],

  // eslint-disable-next-line no-empty-pattern -- Playwright's fixture signature
  pageProblems: async ({}, use) => {
    await use(new PageProblems());
  },

  page: async ({ page, pageProblems }, use) => {
    await page.exposeBinding(REPORT_VIOLATION, (_source, violation: CspViolation) => {
      pageProblems.violations.push(violation);
    });
    await page.addInitScript(listenForViolations, REPORT_VIOLATION);
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      const { url } = message.location();
      pageProblems.consoleError(url === '' ? message.text() : `${message.text()} (${url})`);
    });
    page.on('pageerror', (error) => {
      pageProblems.pageErrors.push(error.stack ?? error.message);
    });
    await use(page);
    // A round trip to the page first, so that reports already sent have arrived.
    if (!page.isClosed()) await page.evaluate(() => 0).catch(() => 0);
    expect(pageProblems.lines(), 'CSP violations, console errors and uncaught exceptions in the page (none allowed)').toEqual([]);
  },

  shoot: async ({ page, consoleEnv }, use, testInfo) => {
    await use(async (name) => {
      await mkdir(consoleEnv.screenshots, { recursive: true });
      const file = path.join(consoleEnv.screenshots, `${name.replace(/[^A-Za-z0-9._-]+/g, '-')}.png`);
      const png = await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide' });
      await testInfo.attach(name, { body: png, contentType: 'image/png' });
      return file;
    });
  },

  axe: async ({ page, shoot }, use, testInfo) => {
    const initial = testInfo.project.use.colorScheme ?? 'light';
    await use(async (name, options = {}) => {
      const found: string[] = [];
      try {
        for (const theme of THEMES) {
          await page.emulateMedia({ colorScheme: theme });
          // The page follows the system's scheme (theme.ts) unless a theme was chosen: the check
          // is of the theme it names only once the page shows it.
          await expect(page.locator('html'), `the page turns ${theme} for axe`).toHaveAttribute('data-theme', theme);
          let builder = new AxeBuilder({ page }).withTags([...AXE_TAGS]);
          for (const selector of options.exclude ?? []) builder = builder.exclude(selector);
          const results = await builder.analyze();
          const lines = results.violations.flatMap((v) =>
            v.nodes.map(
              (node) =>
                `${theme}: ${v.id} (${v.impact ?? 'no impact given'}): ${v.help}\n` +
                `    at ${node.target.map((t) => String(t)).join(' ')}\n` +
                `    ${node.failureSummary?.replaceAll('\n', '\n    ') ?? ''}\n` +
                `    ${v.helpUrl}`,
            ),
          );
          await testInfo.attach(`axe ${name} (${theme})`, {
            body: lines.length > 0 ? lines.join('\n\n') : `no violation of ${AXE_TAGS.join(', ')}`,
            contentType: 'text/plain',
          });
          found.push(...lines);
          if (options.screenshots ?? true) await shoot(`${name}-${theme}`);
        }
      } finally {
        await page.emulateMedia({ colorScheme: initial });
      }
      expect(found, `axe: ${name} breaks no rule of ${AXE_TAGS.join(', ')} in either theme`).toEqual([]);
    });
  },
});

/** The sign-in form's parts, by role and name (what a person and a screen reader find). */
export function signInForm(page: Page) {
  return {
    token: page.getByLabel('Bearer token'),
    submit: page.getByRole('button', { name: 'Sign in' }),
    alert: page.getByRole('alert'),
  };
}

/** Opens the console (at `path`, a page's fragment like `/#/history`) and signs `person` in; returns once the header names them. */
export async function signIn(page: Page, person: Person, path = '/'): Promise<void> {
  await page.goto(path);
  const form = signInForm(page);
  await form.token.fill(person.token);
  await form.submit.click();
  await expect(page.getByRole('link', { name: person.name, exact: true })).toBeVisible();
}
