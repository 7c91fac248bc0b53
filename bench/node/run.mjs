// What a guard costs a Node agent per event (issue 34), all ways in one
// process, interleaved round by round, medians:
//
// - `node`: `await run.toolCall(name, args)` of the `hookbox` package (the
//   guard call on libuv's thread pool), and `run.toolCallSync` (on the
//   calling thread); each with an object and with JSON text;
// - `rust`: the same calls decided by Rust's own loop inside the addon, in
//   this process (the binding's floor: what the Node call adds is the
//   difference);
// - `serve`: the same event posted to `hookbox serve` over one keep-alive
//   HTTP connection (node:http with a keep-alive agent);
// - `plain`: a guard written in JavaScript doing the same checks
//   (deny-tools' default argument patterns as regular expressions; for the
//   stack, path-jail's check too).
//
// A 1 KiB tool call, through one guard (deny-tools) and through the
// example stack (deny-tools, path-jail, redact-secrets, inject-context: the
// last two do not subscribe to tool calls, as in a real stack).
//
//   node bench/node/run.mjs [ROUNDS] [CALLS]
//
// needs the package installed (host/node/tests/setup.sh, release profile
// for real figures, into $HOOKBOX_NODE_APP, default target/node/app), the
// guests (`cargo run -p xtask -- guests target/node/guests`) and a
// `hookbox` binary (`cargo build --release -p hookbox-cli`; or
// $HOOKBOX_BIN).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const app = process.env.HOOKBOX_NODE_APP ?? join(root, 'target/node/app');
const guests = process.env.HOOKBOX_GUESTS ?? join(root, 'target/node/guests');
const bin = process.env.HOOKBOX_BIN ?? join(root, 'target/release/hookbox');
const { Stack } = await import(pathToFileURL(join(app, 'node_modules/hookbox/lib/index.js')).href);
const ROUNDS = Number(process.argv[2] ?? 15);
const CALLS = Number(process.argv[3] ?? 400);

const WORKSPACE = '/srv/work';
const ARGS = { path: `${WORKSPACE}/notes/today.md`, content: 'a line of notes, nothing to see. '.repeat(31) };
const ARGS_TEXT = JSON.stringify(ARGS);
assert.ok(ARGS_TEXT.length >= 1000 && ARGS_TEXT.length <= 1100, ARGS_TEXT.length);

const STACKS = {
  'one guard': ['deny-tools'],
  'example stack': ['deny-tools', 'path-jail', 'redact-secrets', 'inject-context'],
};
const DENY_ARGS = ['*rm -rf*', '*rm -fr*', '*mkfs*', '*dd if=*', '*| sh*', '*| bash*', '*.ssh/*', '*/etc/shadow*'];

/** deny-tools' default argument patterns (and path-jail's check) in JavaScript: what a user would write instead. */
function plainGuard(jail) {
  const patterns = DENY_ARGS.map((p) => new RegExp(`^${p.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's'));
  return (name, args) => {
    const text = JSON.stringify(args);
    if (patterns.some((p) => p.test(text))) return ['skip', args];
    if (jail && typeof args.path === 'string' && !args.path.startsWith(`${WORKSPACE}/`)) {
      return ['run', { ...args, path: posix.normalize(posix.join(WORKSPACE, args.path.replace(/^\/+/, ''))) }];
    }
    return ['run', args];
  };
}

function freePort() {
  return new Promise((done) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/** POSTs `body` over `agent`'s one keep-alive connection; resolves to the answer's text. */
function post(agent, port, path, body) {
  return new Promise((done, fail) => {
    const request = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => done(text));
      },
    );
    request.on('error', fail);
    request.end(body);
  });
}

async function serve(plugins, directory) {
  let manifest = '';
  for (const name of plugins) {
    copyFileSync(join(guests, `${name}.wasm`), join(directory, `${name}.wasm`));
    manifest += `[[plugin]]\nfile = "${name}.wasm"\n`;
    if (name === 'path-jail') manifest += `config = { root = "${WORKSPACE}" }\n`;
  }
  writeFileSync(join(directory, 'hookbox.toml'), manifest);
  const port = await freePort();
  const server = spawn(bin, ['serve', '--plugins', directory, '--listen', `127.0.0.1:${port}`], { stdio: 'ignore' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const { run_id: runId } = JSON.parse(await post(agent, port, '/runs', '{}'));
      return { server, agent, port, runId };
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const seconds = (started) => Number(process.hrtime.bigint() - started) / 1e9;

const scratch = mkdtempSync(join(tmpdir(), 'hookbox-bench-node-'));
const rows = [];
for (const [label, plugins] of Object.entries(STACKS)) {
  const stack = Stack.fromFiles(
    plugins.map((p) => join(guests, `${p}.wasm`)),
    { config: plugins.includes('path-jail') ? { 'path-jail': { root: WORKSPACE } } : {} },
  );
  const run = stack.startRun();
  const directory = join(scratch, label.replace(' ', '-'));
  mkdirSync(directory);
  const { server, agent, port, runId } = await serve(plugins, directory);
  const event = JSON.stringify({ event: 'tool-call', tool_name: 'write_file', args: ARGS_TEXT });
  const guard = plainGuard(plugins.includes('path-jail'));
  assert.equal((await run.toolCall('write_file', ARGS)).kind, 'run');

  const loop = (call) => async () => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) await call();
    return seconds(started);
  };
  const loopSync = (call) => () => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) call();
    return seconds(started);
  };
  const ways = {
    'node async (object)': loop(() => run.toolCall('write_file', ARGS)),
    'node async (JSON text)': loop(() => run.toolCall('write_file', ARGS_TEXT)),
    'node sync (object)': loopSync(() => run.toolCallSync('write_file', ARGS)),
    'node sync (JSON text)': loopSync(() => run.toolCallSync('write_file', ARGS_TEXT)),
    'rust in-process': () => run.timeToolCalls('write_file', ARGS_TEXT, CALLS),
    'serve (keep-alive HTTP)': async () => {
      const started = process.hrtime.bigint();
      let answer = '';
      for (let i = 0; i < CALLS; i++) answer = await post(agent, port, `/runs/${runId}/events`, event);
      assert.match(answer, /"flow"/);
      return seconds(started);
    },
    'plain-JavaScript guard': loopSync(() => guard('write_file', ARGS)),
  };
  const times = Object.fromEntries(Object.keys(ways).map((w) => [w, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [way, measure] of Object.entries(ways)) times[way].push((await measure()) / CALLS);
  }
  server.kill();
  agent.destroy();
  run.close();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  rows.push([label, Object.fromEntries(Object.entries(times).map(([w, t]) => [w, median(t)]))]);
}

console.log(`per 1 KiB tool call, median of ${ROUNDS} rounds of ${CALLS} calls, one process:`);
for (const [label, medians] of rows) {
  const base = medians['rust in-process'];
  console.log(`\n${label}:`);
  for (const [way, s] of Object.entries(medians)) {
    const extra = way === 'rust in-process' ? '' : `  (+${((s - base) * 1e6).toFixed(2)} µs over Rust, ${(s / base).toFixed(2)}x)`;
    console.log(`  ${way.padEnd(26)} ${(s * 1e6).toFixed(2).padStart(8)} µs${extra}`);
  }
}
