// The console's browser tests (web/e2e/, `npm run e2e`): the built console as the sidecar serves
// it, under its real Content-Security-Policy, in Debian's Chromium (headless). There is no
// webServer: the console comes from a running Studio whose sidecar serves it, at
// ORRERY_CONSOLE_URL; `cargo test -p orrery-tests --test e2e_console` (under tests/e2e.sh)
// installs one and runs these specs against it. The whole environment contract is in
// e2e/fixtures.ts and web/README.md.
//
// Playwright never downloads a browser here: it launches /usr/lib/chromium/chromium (Debian's
// package `chromium`, scripts/install-packages.sh), or ORRERY_CHROMIUM.
import { defineConfig } from '@playwright/test';

const env = process.env;
const chromium = env['ORRERY_CHROMIUM'] ?? '/usr/lib/chromium/chromium';
const baseURL = env['ORRERY_CONSOLE_URL'];

export default defineConfig({
  testDir: './e2e',
  testMatch: '**/*.spec.ts',
  // Artifacts (traces of failed tests); `--output` gives each concurrent run its own.
  outputDir: 'test-results/artifacts',
  forbidOnly: true,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [['list', { printSteps: false }]],
  use: {
    ...(baseURL === undefined ? {} : { baseURL }),
    browserName: 'chromium',
    headless: true,
    launchOptions: { executablePath: chromium },
    viewport: { width: 1280, height: 800 },
    colorScheme: 'light',
    locale: 'en-GB',
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
});
