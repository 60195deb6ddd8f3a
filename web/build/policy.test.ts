import { describe, expect, it } from 'vitest';
import { fileProblems, htmlProblems } from './policy.ts';

const GOOD = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <title>Orrery Studio</title>
    <script type="module" crossorigin src="/assets/index-Bq3xZ_9a.js"></script>
    <link rel="modulepreload" crossorigin href="/assets/vendor-Zx81-aaA.js">
    <link rel="stylesheet" crossorigin href="/assets/index-C0ffee12.css">
  </head>
  <body><div id="root"></div></body>
</html>`;

describe('the built page under the console policy', () => {
  it('accepts a page that only loads its own hashed assets', () => {
    expect(htmlProblems(GOOD)).toEqual([]);
  });

  it.each([
    ['<script>window.x = 1</script>', 'an inline <script>'],
    ['<script type="module">import "/x.js"</script>', 'an inline <script>'],
    ['<style>body{}</style>', 'an inline <style>'],
    ['<div style="color:red"></div>', 'style attribute'],
    ['<body onload="go()">', 'inline handler onload'],
    ['<a href="javascript:go()">', 'javascript: URL'],
    ['<script nonce="abc" src="/assets/a-12345678.js"></script>', 'carries a nonce'],
    ['<script src="https://cdn.example/a.js"></script>', 'is not one of /assets/'],
    ['<link rel="stylesheet" href="/style.css">', 'is not one of /assets/'],
    ['<base href="/">', '<base> element'],
  ])('refuses %s', (html, problem) => {
    const problems = htmlProblems(html);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });

  it('wants every asset hashed under assets/ and no WebAssembly', () => {
    expect(fileProblems(['index.html', 'assets/index-Bq3xZ_9a.js', 'assets/index-C0ffee12.css'])).toEqual([]);
    expect(fileProblems(['assets/index-Bq3xZ_9a.js'])).toEqual(['no index.html was built']);
    expect(fileProblems(['index.html', 'assets/index.js'])[0]).toContain('content hash');
    expect(fileProblems(['index.html', 'favicon.ico'])[0]).toContain('not under assets/');
    expect(fileProblems(['index.html', 'assets/elk-Bq3xZ_9a.wasm'])[0]).toContain('WebAssembly');
  });
});
