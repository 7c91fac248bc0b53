// The binding itself: runs, verdicts, fail-closed, reload, concurrency, the event loop.
import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { FailedClosed, HOST, HookboxError, InvalidEvent, LoadError, Stack, Stopped, Terminated } from 'hookbox';

import { SECRET, examples, guest, tempDir } from './support.mjs';

test('a tool call is run, rewritten or skipped as the guards say', async () => {
  const { stack, jail } = examples();
  const run = stack.startRun();
  const denied = await run.toolCall('shell', { command: 'rm -rf /' });
  assert.equal(denied.kind, 'skip');
  assert.equal(denied.by, 'deny-tools');
  assert.match(denied.reason, /denied/);
  const jailed = await run.toolCall('write_file', { path: '/etc/passwd', text: 'x' });
  assert.deepEqual([jailed.kind, jailed.by, jailed.rewritten], ['run', 'path-jail', true]);
  assert.deepEqual(jailed.args, { path: `${jail}/etc/passwd`, text: 'x' });
  const inside = JSON.stringify({ path: `${jail}/a.txt` });
  const plain = await run.toolCall('read_file', inside.replaceAll(':', ':  '));
  assert.deepEqual([plain.kind, plain.rewritten, plain.argsJson], ['run', false, inside]);
});

test('arguments that are not a JSON object are refused, not run', async () => {
  const verdict = await examples().stack.startRun().toolCall('read_file', '[1, 2]');
  assert.deepEqual([verdict.kind, verdict.by], ['refuse', HOST]);
  assert.match(verdict.reason, /not a JSON object/);
});

test('a secret in a result is replaced', async () => {
  const { stack } = examples();
  const verdict = await stack.startRun().toolResult('read_file', { path: 'a' }, `config:\n${SECRET}\n`);
  assert.deepEqual([verdict.kind, verdict.by], ['replace', 'redact-secrets']);
  assert.ok(!verdict.text.includes('wJalrXUtnFEMI') && verdict.text.includes('[REDACTED]'));
  assert.equal((await stack.startRun().toolResult('read_file', {}, 'nothing here')).kind, 'keep');
});

test('a request patch is the first turn only', async () => {
  const run = examples().stack.startRun();
  const first = await run.completionCall('fix it', [{ role: 'user', content: 'fix it' }], 1);
  assert.deepEqual([first.kind, first.by], ['patch', 'inject-context']);
  assert.equal(first.patch.extra_context[0].id, 'house-rules');
  assert.ok(first.system('Be brief.').startsWith('Be brief.\n\n<document id="house-rules">'));
  assert.equal((await run.completionCall('fix it', [], 2)).kind, 'continue');
});

test('send takes objects and JSON text, and refuses what is no event', async () => {
  const run = examples().stack.startRun();
  const event = { event: 'tool-call', tool_name: 'puppet:flow:skip:nope', args: {} };
  for (const form of [event, JSON.stringify(event)]) {
    assert.deepEqual(await run.send(form), { flow: 'skip', reason: 'nope', plugin: 'puppet' });
    assert.deepEqual(run.sendSync(form), { flow: 'skip', reason: 'nope', plugin: 'puppet' });
  }
  await assert.rejects(run.send({ event: 'nope' }), (e) => e instanceof InvalidEvent && /not an event/.test(e.message));
  assert.throws(() => run.sendSync('{'), InvalidEvent);
  assert.throws(() => run.toolCallSync('x', { n: NaN }), (e) => e instanceof InvalidEvent && /NaN/.test(e.message));
  const cycle = {};
  cycle.self = cycle;
  await assert.rejects(run.toolCall('x', cycle), InvalidEvent);
  await assert.rejects(run.toolCall('x', { n: 1n }), InvalidEvent);
  assert.ok(!run.isOver, 'input that is no event asks nothing and ends nothing');
});

for (const [command, cause] of [['panic', 'trap'], ['loop', 'deadline'], ['grow', 'memory']]) {
  test(`a guest that ${command}s fails the run closed (${cause}), and every later step`, async () => {
    const { stack } = examples();
    const run = stack.startRun();
    const named = (e) => e instanceof FailedClosed && e.plugin === 'puppet' && e.cause === cause;
    await assert.rejects(run.toolCall(`puppet:${command}`, {}), (e) => named(e) && /"puppet" failed closed/.test(e.message));
    assert.ok(run.isOver);
    await assert.rejects(run.toolCall('read_file', {}), named);
    await assert.rejects(run.send({ event: 'tool-call', tool_name: 'x', args: {} }), named);
    assert.throws(() => run.toolResultSync('read_file', {}, 'x'), named);
    await assert.rejects(run.completionCall('p', [], 1), named);
    assert.equal((await stack.startRun().toolCall('read_file', {})).kind, 'run', 'another run is not touched');
  });
}

test('a terminate throws Terminated naming the plugin, the event and the reason', () => {
  const run = examples().stack.startRun();
  assert.throws(
    () => run.toolCallSync('puppet:flow:terminate:enough', {}),
    (e) => e instanceof Terminated && e instanceof Stopped && e instanceof HookboxError &&
      e.plugin === 'puppet' && e.reason === 'enough' && e.event === 'tool-call',
  );
});

test('a file that is no guard is a LoadError naming it', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'broken.wasm'), Buffer.from('\0asm\x01\0\0\0', 'binary'));
  assert.throws(() => Stack.fromFiles([join(dir, 'broken.wasm')]), (e) => e instanceof LoadError && /broken/.test(e.message));
  assert.throws(() => Stack.fromDirectory(join(dir, 'nowhere'), { watch: false }), LoadError);
});

test('config for a plugin that is not there is a LoadError', () => {
  assert.throws(() => Stack.fromFiles([guest('deny-tools')], { config: { path_jail: { root: '/srv' } } }), (e) => e instanceof LoadError && /path_jail/.test(e.message));
});

test('a reload mid-run keeps the run pinned', async () => {
  const dir = tempDir();
  copyFileSync(guest('puppet'), join(dir, 'guard.wasm'));
  const manifest = (version) => writeFileSync(join(dir, 'hookbox.toml'), `[[plugin]]\nfile = "guard.wasm"\n[plugin.config]\nversion = "${version}"\n`);
  manifest('v1');
  const stack = Stack.fromDirectory(dir, { debounceMs: 50 });
  assert.equal(stack.plugins[0].file, 'guard.wasm');
  const pinned = stack.startRun();
  manifest('v2');
  for (let i = 0; i < 200 && stack.generation < 2; i++) {
    await stack.reload();
    await sleep(50);
  }
  assert.equal(stack.generation, 2);
  assert.equal((await pinned.toolCall('puppet:version', {})).reason, 'v1');
  assert.equal((await stack.startRun().toolCall('puppet:version', {})).reason, 'v2');
  assert.equal(pinned.generation, 1);
});

test('32 concurrent runs share no guest state', async () => {
  const { stack } = examples();
  const drive = async () => {
    const run = stack.startRun();
    const counts = [];
    for (let i = 0; i < 5; i++) counts.push((await run.toolCall('puppet:count', {})).reason);
    run.close();
    return counts;
  };
  const seen = await Promise.all(Array.from({ length: 32 }, drive));
  const expected = [1, 2, 3, 4, 5].map((n) => `global=${n} scratch=${n}`);
  assert.deepEqual(seen, Array(32).fill(expected));
});

test("the event loop runs on while a guest runs to its deadline (a timer's lateness)", async () => {
  const { stack } = examples();
  // The same 5 ms timer, while the guest loops to its deadline on libuv's
  // pool (async), and on this thread (sync): its worst lateness in each.
  const lateness = async (during) => {
    let worst = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last - 5);
      last = now;
    }, 5);
    await during();
    await sleep(20);
    clearInterval(timer);
    return worst;
  };
  const async_ = await lateness(() => assert.rejects(stack.startRun().toolCall('puppet:loop', {}), FailedClosed));
  const sync = await lateness(async () => {
    await sleep(10);
    assert.throws(() => stack.startRun().toolCallSync('puppet:loop', {}), FailedClosed);
  });
  // The sync call holds the loop for the whole deadline (100 ms); the async
  // one must not hold it for a fraction of that.
  assert.ok(sync >= 80, `the sync call held the loop only ${sync.toFixed(1)} ms`);
  assert.ok(async_ < sync / 4, `a timer was ${async_.toFixed(1)} ms late during the async call (sync: ${sync.toFixed(1)} ms)`);
});

test('closing a run gives its instances back; using one closes it', async () => {
  const stack = Stack.fromFiles([guest('deny-tools')], { maxInstances: 1 });
  const run = stack.startRun();
  assert.equal((await run.toolCall('read_file', {})).kind, 'run');
  await assert.rejects(stack.startRun().toolCall('read_file', {}), (e) => e instanceof FailedClosed && e.cause === 'limit' && /max_instances/.test(e.message));
  run[Symbol.dispose]();
  await assert.rejects(run.toolCall('read_file', {}), (e) => e instanceof FailedClosed && /closed/.test(e.message));
  assert.ok(run.isOver);
  assert.equal((await stack.startRun().toolCall('read_file', {})).kind, 'run');
});

test('a shadow guard is reported and never acted on', async () => {
  const dir = tempDir();
  copyFileSync(guest('puppet'), join(dir, 'trial.wasm'));
  writeFileSync(join(dir, 'hookbox.toml'), '[[plugin]]\nfile = "trial.wasm"\nmode = "shadow"\n');
  const stack = Stack.fromDirectory(dir, { watch: false });
  assert.equal(stack.plugins[0].mode, 'shadow');
  const run = stack.startRun();
  const decision = await run.send({ event: 'tool-call', tool_name: 'puppet:flow:skip:would-block', args: {} });
  assert.equal(decision.flow, 'continue');
  assert.deepEqual(decision.shadow, [{ plugin: 'trial', flow: { flow: 'skip', reason: 'would-block' } }]);
  assert.equal((await run.toolCall('puppet:panic', {})).kind, 'run');
});

test('a process can hold many stacks', async () => {
  const stacks = Array.from({ length: 20 }, () => examples().stack);
  for (const stack of stacks) assert.equal((await stack.startRun().toolCall('read_file', {})).kind, 'run');
});

test('a stop is thrown again, the same, on every later step, closed or not', async () => {
  const stack = Stack.fromFiles([guest('puppet')], { config: { puppet: { subscribe: 'tool-call' } } });
  for (const command of ['flow:terminate:enough', 'panic']) {
    const run = stack.startRun();
    const first = await run.toolCall(`puppet:${command}`, {}).catch((stop) => stop);
    assert.ok(first instanceof Stopped, String(first));
    for (const closed of [false, true]) {
      if (closed) run.close();
      for (const later of [
        () => run.toolCall('ls', {}),
        () => run.toolResult('ls', {}, 'x'),
        () => run.completionCall('p', [], 2),
        () => Promise.resolve().then(() => run.toolCallSync('ls', {})),
      ]) {
        const again = await later().then(() => undefined, (stop) => stop);
        assert.equal(again?.constructor, first.constructor);
        assert.equal(again.message, first.message);
        assert.equal(again.plugin, 'puppet');
      }
    }
    assert.equal(run.stopped.message, first.message);
  }
});
