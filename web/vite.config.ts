/// <reference types="vitest/config" />
// The console's build: web/dist, served by the sidecar (`--console-dir`, docs/sidecar-api.md "The
// console") under `script-src 'self'; style-src 'self'` with no 'unsafe-inline', no eval and no
// WebAssembly, `assets/*` cached as immutable. The `console-policy` plugin below fails the build
// when the output breaks any of that (checks in build/policy.ts, tested by build/policy.test.ts).
import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';
import { CONSOLE_CSP, fileProblems, htmlProblems } from './build/policy.ts';

function consolePolicy(): Plugin {
  return {
    name: 'console-policy',
    apply: 'build',
    enforce: 'post',
    writeBundle(_options, bundle) {
      const problems = fileProblems(Object.keys(bundle));
      const html = bundle['index.html'];
      if (html?.type === 'asset' && typeof html.source === 'string') {
        problems.push(...htmlProblems(html.source).map((p) => `index.html: ${p}`));
      } else {
        problems.push('index.html was not emitted as text');
      }
      if (problems.length > 0) {
        this.error(`the build breaks the console's policy:\n  ${problems.join('\n  ')}`);
      }
    },
  };
}

export default defineConfig({
  base: '/',
  plugins: [react(), tailwindcss(), consolePolicy()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Never inline an asset as a data: URL: fonts fall under default-src 'self', which has no data:.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  // `vite preview` serves the build under the sidecar's own policy, so a violation shows there too.
  preview: {
    headers: { 'Content-Security-Policy': CONSOLE_CSP },
  },
  test: {
    include: ['src/**/*.test.{ts,tsx}', 'build/**/*.test.ts'],
    environment: 'node',
    restoreMocks: true,
  },
});
