// Starts npm @modelcontextprotocol/server-everything (the reference MCP test server) on
// loopback, for Orrery's interop tests, and prints `READY <endpoint url>` once it listens:
//   ORRERY_PEERS_DIR=$(tests/peers/setup.sh) node tests/peers/node/everything.mjs streamableHttp [--port 0]
//   ... everything.mjs sse [--port N]
// streamableHttp -> READY http://127.0.0.1:PORT/mcp   (POST/GET/DELETE, 2025-11-25 sessions)
// sse            -> READY http://127.0.0.1:PORT/sse   (GET /sse, then POST /message?sessionId=...)
//
// Why a wrapper: the server's own CLI (dist/index.js <transport>) takes its port only from
// $PORT, calls app.listen(PORT) with no host (so it binds every interface), and logs the
// configured port rather than the bound one (PORT=0 logs "port 0"). This wrapper runs that
// same CLI unchanged but makes its first listen() bind --host (default 127.0.0.1) on --port
// (default 0 = a free port) and report the real address. The plain command is in README.md.

import { createRequire } from 'node:module';
import net from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opt, positionals } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'peers-dir': { type: 'string', default: process.env.ORRERY_PEERS_DIR },
    'exit-on-stdin-eof': { type: 'boolean', default: false },
  },
  allowPositionals: true,
  strict: true,
});
const transport = positionals[0] ?? 'streamableHttp';
const paths = { streamableHttp: '/mcp', sse: '/sse' };
if (!(transport in paths)) {
  console.error(`everything.mjs: transport must be streamableHttp or sse, not ${transport}`);
  process.exit(2);
}

const require = createRequire(opt['peers-dir'] ? join(opt['peers-dir'], 'node', 'package.json') : import.meta.url);
let entry;
try {
  entry = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
} catch (err) {
  console.error(
    `everything.mjs: cannot find @modelcontextprotocol/server-everything (${err.code}); ` +
      'set ORRERY_PEERS_DIR to the directory tests/peers/setup.sh prints',
  );
  process.exit(2);
}

const listen = net.Server.prototype.listen;
let patched = false;
net.Server.prototype.listen = function (...args) {
  if (patched) return listen.apply(this, args);
  patched = true;
  const callbacks = args.filter((a) => typeof a === 'function');
  this.once('listening', () => {
    const { address, port } = this.address();
    const host = address.includes(':') ? `[${address}]` : address;
    console.log(`READY http://${host}:${port}${paths[transport]}`);
  });
  return listen.call(this, { host: opt.host, port: Number(opt.port) }, ...callbacks);
};

process.env.PORT = opt.port; // only what the server logs; the bind above is what counts
process.argv = [process.argv[0], entry, transport];
await import(pathToFileURL(entry).href);

// --exit-on-stdin-eof: stop when standard input closes, so a test that holds the peer's
// stdin pipe cannot leak the peer even if the test process dies.
if (opt['exit-on-stdin-eof']) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
