// What the sidecar's console policy allows in the built files (docs/sidecar-api.md, "The
// console"): `script-src 'self'; style-src 'self'` with no 'unsafe-inline', no eval and no
// WebAssembly, `base-uri 'none'`, `form-action 'none'`; files under `assets/` are served as
// immutable, so each must carry a content hash in its name. `vite.config.ts` runs these checks
// on every build and fails it on any problem.

/** The policy the sidecar serves the console under (operator/src/sidecar/console.rs). */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; " +
  "form-action 'none'; frame-ancestors 'none'";

const TAG = /<([a-zA-Z][a-zA-Z0-9-]*)\b([^>]*)>/g;
const ATTRIBUTE = /([^\s=/"']+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g;

function attributes(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(ATTRIBUTE)) {
    const name = m[1];
    if (name === undefined) continue;
    const raw = m[2] ?? '';
    out.set(name.toLowerCase(), raw.replace(/^["']|["']$/g, ''));
  }
  return out;
}

/** A URL the page may load under the policy: this origin's hashed assets only. */
function isOwnAsset(url: string): boolean {
  return url.startsWith('/assets/') && !url.includes('..');
}

/** Everything in a built `index.html` that the console's policy would block or loosen. */
export function htmlProblems(html: string): string[] {
  const problems: string[] = [];
  for (const m of html.matchAll(TAG)) {
    const tag = (m[1] ?? '').toLowerCase();
    const attrs = attributes(m[2] ?? '');
    for (const [name, value] of attrs) {
      if (name === 'style') problems.push(`<${tag}> has a style attribute (style-src 'self')`);
      if (name.startsWith('on')) problems.push(`<${tag}> has an inline handler ${name}`);
      if (/^\s*javascript:/i.test(value)) problems.push(`<${tag} ${name}> is a javascript: URL`);
      if (name === 'nonce') problems.push(`<${tag}> carries a nonce: the sidecar serves none`);
    }
    if (tag === 'script') {
      const src = attrs.get('src');
      if (src === undefined) problems.push('an inline <script> (script-src has no unsafe-inline)');
      else if (!isOwnAsset(src)) problems.push(`<script src="${src}"> is not one of /assets/`);
    }
    if (tag === 'style') problems.push('an inline <style> (style-src has no unsafe-inline)');
    if (tag === 'base') problems.push("a <base> element (base-uri 'none')");
    if (tag === 'link') {
      const rel = attrs.get('rel') ?? '';
      const href = attrs.get('href') ?? '';
      if (/\b(stylesheet|modulepreload|preload|icon)\b/.test(rel) && !isOwnAsset(href)) {
        problems.push(`<link rel="${rel}" href="${href}"> is not one of /assets/`);
      }
    }
  }
  return problems;
}

/** `assets/<name>-<hash>.<ext>`: Vite's content hash, 8 characters of base64url. */
const HASHED_ASSET = /^assets\/[^/]+-[A-Za-z0-9_-]{8}\.[A-Za-z0-9]+$/;

/** Everything wrong with the names of the built files. */
export function fileProblems(fileNames: readonly string[]): string[] {
  const problems: string[] = [];
  if (!fileNames.includes('index.html')) problems.push('no index.html was built');
  for (const name of fileNames) {
    if (name.endsWith('.wasm')) problems.push(`${name}: WebAssembly is not allowed by the policy`);
    if (name === 'index.html' || name.endsWith('.map')) continue;
    if (!HASHED_ASSET.test(name)) {
      problems.push(`${name}: not under assets/ with a content hash (assets are served immutable)`);
    }
  }
  return problems;
}
