// A2A 1.0 peer agent on the official @a2a-js/sdk 1.3 (npm), for Orrery's interop tests.
//
// Serves an A2A 1.0 agent card (JSON-RPC binding, protocolVersion "1.0") at
// /.well-known/agent-card.json and JSON-RPC at --rpc-path on 127.0.0.1, and prints
// `READY <card url>` on stdout once it listens. --port 0 (the default) picks a free port.
// Same modes and reply texts (../texts.json) as python/a2a_agent.py:
//   echo, ask (--rounds N), card-changes (--card-change skills|interface|security|
//   description|examples, --change-after N), inject, slow (--delay S), big-reply (--size B),
//   fail, mixed-parts; plus --interface-url, --require-bearer TOKEN, --request-log FILE.
//
// The SDK and express come from the cache that tests/peers/setup.sh fills:
//   PEERS=$(tests/peers/setup.sh)
//   ORRERY_PEERS_DIR=$PEERS node tests/peers/node/a2a_agent.mjs --mode ask
// (or --peers-dir DIR). ESM ignores NODE_PATH, so the modules are loaded with a
// require() rooted in $PEERS/node: the SDK's CommonJS build, consistently for every module.

import { appendFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';

const MODES = ['echo', 'ask', 'card-changes', 'inject', 'slow', 'big-reply', 'fail', 'mixed-parts'];
const CARD_CHANGES = ['skills', 'interface', 'security', 'description', 'examples'];
const CARD_PATH = '/.well-known/agent-card.json';

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: process.env.PEER_MODE ?? 'echo' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: process.env.PORT ?? '0' },
    name: { type: 'string', default: 'js-peer' },
    'rpc-path': { type: 'string', default: '/' },
    'interface-url': { type: 'string' },
    rounds: { type: 'string', default: '1' },
    delay: { type: 'string', default: '30' },
    size: { type: 'string', default: String(2 ** 20 + 4096) },
    'card-change': { type: 'string', default: 'skills' },
    'change-after': { type: 'string', default: '1' },
    'require-bearer': { type: 'string' },
    'request-log': { type: 'string' },
    'peers-dir': { type: 'string', default: process.env.ORRERY_PEERS_DIR },
    'exit-on-stdin-eof': { type: 'boolean', default: false },
  },
  strict: true,
});
const fail = (msg) => {
  console.error(`a2a_agent.mjs: ${msg}`);
  process.exit(2);
};
if (!MODES.includes(opt.mode)) fail(`--mode must be one of ${MODES.join(', ')}`);
if (!CARD_CHANGES.includes(opt['card-change'])) fail(`--card-change must be one of ${CARD_CHANGES.join(', ')}`);
if (!opt['rpc-path'].startsWith('/')) fail('--rpc-path must start with /');
const rounds = Number(opt.rounds);
const delayMs = Number(opt.delay) * 1000;
const size = Number(opt.size);
const changeAfter = Number(opt['change-after']);

const require = createRequire(opt['peers-dir'] ? join(opt['peers-dir'], 'node', 'package.json') : import.meta.url);
let express, sdk, server, serverExpress;
try {
  express = require('express');
  sdk = require('@a2a-js/sdk');
  server = require('@a2a-js/sdk/server');
  serverExpress = require('@a2a-js/sdk/server/express');
} catch (err) {
  fail(
    `cannot load @a2a-js/sdk/express (${err.code ?? err.message}); ` +
      'set ORRERY_PEERS_DIR to the directory tests/peers/setup.sh prints',
  );
}
const { Role, TaskState } = sdk;
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = server;
const { agentCardHandler, jsonRpcHandler, UserBuilder } = serverExpress;

const TEXTS = JSON.parse(readFileSync(new URL('../texts.json', import.meta.url), 'utf8'));
const fill = (template, values) =>
  Object.entries(values).reduce((t, [k, v]) => t.split(`{${k}}`).join(v), template);

const now = () => new Date().toISOString();
const textPart = (text) => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const agentMessage = (text, taskId, contextId) => ({
  messageId: randomUUID(),
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  taskId,
  contextId,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const partsText = (parts) =>
  (parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');

function bigText(request) {
  const head = fill(TEXTS.echo, { request }) + '\n';
  const bodyLen = Math.max(size - Buffer.byteLength(head), 0);
  const unit = TEXTS.big_reply_unit;
  return head + unit.repeat(Math.ceil(bodyLen / unit.length) + 1).slice(0, bodyLen);
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.onCancel = () => {
      clearTimeout(t);
      resolve();
    };
  });

class PeerExecutor {
  running = new Map(); // taskId -> {canceled, onCancel}

  cancelTask = async (taskId) => {
    const run = this.running.get(taskId);
    if (run) {
      run.canceled = true;
      run.onCancel?.();
    }
  };

  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const { taskId, contextId } = ctx;
    const status = (state, message) =>
      bus.publish(
        AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: now() }, metadata: undefined }),
      );
    // Every execute() must publish a task (or message) first, follow-up turns included.
    const task = ctx.task
      ? { ...ctx.task }
      : {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
          artifacts: [],
          history: [msg],
          metadata: undefined,
        };
    bus.publish(AgentEvent.task(task));
    const userMsgs = (task.history ?? []).filter((m) => m.role === Role.ROLE_USER);
    if (!userMsgs.some((m) => m.messageId === msg.messageId)) userMsgs.push(msg);
    const [request, ...answers] = userMsgs.map((m) => partsText(m.parts));

    status(TaskState.TASK_STATE_WORKING, undefined);
    const mode = opt.mode;
    if (mode === 'ask' && answers.length < rounds) {
      const question = fill(TEXTS.question, { round: String(answers.length + 1), rounds: String(rounds) });
      status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(question, taskId, contextId));
      return;
    }
    if (mode === 'fail') {
      status(TaskState.TASK_STATE_FAILED, agentMessage(fill(TEXTS.failed, { request }), taskId, contextId));
      return;
    }
    if (mode === 'slow') {
      const run = { canceled: false };
      this.running.set(taskId, run);
      try {
        await sleep(delayMs, run);
      } finally {
        this.running.delete(taskId);
      }
      if (run.canceled) {
        status(TaskState.TASK_STATE_CANCELED, agentMessage(fill(TEXTS.canceled, { request }), taskId, contextId));
        return;
      }
    }
    let parts;
    if (mode === 'ask') parts = [textPart(fill(TEXTS.answered, { request, answers: answers.join('; ') }))];
    else if (mode === 'inject') parts = [textPart(fill(TEXTS.inject, { request }))];
    else if (mode === 'big-reply') parts = [textPart(bigText(request))];
    else if (mode === 'mixed-parts') {
      const m = TEXTS.mixed_parts;
      parts = [
        textPart(fill(m.text, { request })),
        { content: { $case: 'data', value: m.data }, metadata: undefined, filename: '', mediaType: 'application/json' },
        { content: { $case: 'url', value: m.url }, metadata: undefined, filename: 'attachment.pdf', mediaType: 'application/pdf' },
      ];
    } else parts = [textPart(fill(TEXTS.echo, { request }))];
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: randomUUID(), name: 'reply', description: '', parts, metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    status(TaskState.TASK_STATE_COMPLETED, undefined);
  }
}

function buildCard(base) {
  return {
    name: opt.name,
    description: `Deterministic A2A test peer (@a2a-js/sdk 1.3) in mode ${opt.mode}`,
    supportedInterfaces: [
      { url: opt['interface-url'] ?? base + opt['rpc-path'], protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ],
    provider: { organization: 'Orrery interop tests', url: 'https://example.invalid/orrery' },
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'draft',
        name: 'Draft',
        description: 'Drafts a short text from a request',
        tags: ['writing'],
        examples: ['Draft release notes for 1.2'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

function changedCard(card, kind, base) {
  const c = structuredClone(card);
  if (kind === 'skills') {
    c.skills.push({
      id: 'publish', name: 'Publish', description: 'Publishes a draft', tags: ['writing', 'acting'],
      examples: [], inputModes: [], outputModes: [], securityRequirements: [],
    });
  } else if (kind === 'interface') c.supportedInterfaces[0].url = base + '/v2';
  else if (kind === 'security') {
    c.securitySchemes = { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: '', description: '' } } };
    c.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  } else if (kind === 'description') c.description += ' (changed)';
  else if (kind === 'examples') c.skills[0].examples = ['Draft a changelog'];
  return c;
}

const app = express();
const httpServer = app.listen({ host: opt.host, port: Number(opt.port) });
httpServer.on('error', (err) => fail(`cannot listen on ${opt.host}:${opt.port}: ${err.message}`));
httpServer.on('listening', () => {
  const { port } = httpServer.address();
  const host = opt.host.includes(':') ? `[${opt.host}]` : opt.host;
  const base = `http://${host}:${port}`;
  const card = buildCard(base);
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new PeerExecutor());
  let fetches = 0;
  const cardProvider = async () => {
    fetches += 1;
    return opt.mode === 'card-changes' && fetches > changeAfter ? changedCard(card, opt['card-change'], base) : card;
  };

  if (opt['request-log']) {
    const logPath = opt['request-log'];
    // Parses JSON bodies early (the SDK's own express.json() then skips them) to log the raw bytes.
    app.use(express.json({ verify: (req, _res, buf) => { req.rawBody = buf.toString('utf8'); } }));
    app.use((req, _res, next) => {
      const entry = {
        time: Date.now() / 1000,
        method: req.method,
        path: req.path,
        query: new URLSearchParams(req.query).toString(),
        headers: req.headers,
        body: req.rawBody ?? '',
      };
      appendFileSync(logPath, JSON.stringify(entry) + '\n');
      next();
    });
    app.use((err, _req, res, next) => {
      if (err?.type !== 'entity.parse.failed') return next(err);
      res.status(200).json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    });
  }
  if (opt['require-bearer']) {
    app.use((req, res, next) => {
      if (req.path === CARD_PATH || req.get('authorization') === `Bearer ${opt['require-bearer']}`) return next();
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'missing or wrong bearer token' });
    });
  }
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: cardProvider }));
  const rpc = jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication });
  app.use(opt['rpc-path'], rpc);
  if (opt.mode === 'card-changes' && opt['card-change'] === 'interface') app.use('/v2', rpc);
  console.log(`READY ${base}${CARD_PATH}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    httpServer.close();
    httpServer.closeAllConnections?.();
    process.exit(0);
  });
}

// --exit-on-stdin-eof: stop when standard input closes, so a test that holds the peer's
// stdin pipe cannot leak the peer even if the test process dies.
if (opt['exit-on-stdin-eof']) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
