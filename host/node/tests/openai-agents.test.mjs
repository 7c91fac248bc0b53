// hookbox/openai-agents on the SDK's own runner and its own scripted model
// (`@openai/agents-core/testing`'s ScriptedModel): no network, no key.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Agent,
  InputGuardrailTripwireTriggered,
  MCPServerStdio,
  OutputGuardrailTripwireTriggered,
  Runner,
  ToolCallError,
  ToolInputGuardrailTripwireTriggered,
  ToolOutputGuardrailTripwireTriggered,
  handoff,
  run,
  setTracingDisabled,
  tool,
  webSearchTool,
} from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall, modelResponder } from '@openai/agents-core/testing';
import { FailedClosed, HookboxError, Stack, Terminated } from 'hookbox';
import { Guard, stopOf } from 'hookbox/openai-agents';
import { z } from 'zod';

import { SECRET, examples, guest } from './support.mjs';

setTracingDisabled(true);

/** The tools' side effects; an agent whose model calls `name` with `args` once, then answers. */
class World {
  ran = [];

  constructor() {
    const record = (name, output) => async (args) => {
      this.ran.push([name, args]);
      return output(args);
    };
    this.tools = [
      tool({
        name: 'write_file',
        description: 'Write text to a file.',
        parameters: z.object({ path: z.string(), text: z.string() }),
        execute: record('write_file', ({ path }) => `wrote ${path}`),
      }),
      tool({
        name: 'shell',
        description: 'Run a command.',
        parameters: z.object({ command: z.string() }),
        execute: record('shell', ({ command }) => `ran ${command}: ${SECRET}`),
      }),
    ];
  }

  /** A tool whose name steers the puppet (`puppet:panic`: `tool()` would make it `puppet_panic`). */
  puppet(name) {
    const made = tool({ name: 'puppet', description: 'Runs.', parameters: z.object({}), execute: async () => (this.ran.push([name, {}]), 'ran') });
    return { ...made, name };
  }

  agent(name, args, { tools = this.tools } = {}) {
    const model = new ScriptedModel([[functionCall(name, args, { callId: 'call_1' })], [assistantMessage('done')]]);
    return { agent: new Agent({ name: 'worker', instructions: 'You work.', model, tools }), model };
  }
}

/** The tool outputs the model was sent. */
function outputs(model) {
  return model.calls.flatMap((c) => c.request.input.filter((i) => i.type === 'function_call_result').map((i) => i.output.text ?? JSON.stringify(i.output)));
}

const puppetOnly = (config) => Stack.fromFiles([guest('puppet')], { config: { puppet: config ?? {} } });

test('continue: the call runs with its own arguments', async () => {
  const { stack, jail } = examples();
  const world = new World();
  const { agent } = world.agent('write_file', { path: `${jail}/a.txt`, text: 'x' });
  assert.equal((await new Guard(stack).run(agent, 'write')).finalOutput, 'done');
  assert.deepEqual(world.ran, [['write_file', { path: `${jail}/a.txt`, text: 'x' }]]);
});

test('skip: a denied call never runs and the model reads why', async () => {
  const world = new World();
  const { agent, model } = world.agent('shell', { command: 'rm -rf /' });
  await new Guard(examples().stack).run(agent, 'clean');
  assert.deepEqual(world.ran, []);
  assert.match(outputs(model)[0], /denied by policy/);
});

test('rewrite-args: the rewritten arguments reach the tool', async () => {
  const { stack, jail } = examples();
  const world = new World();
  const { agent } = world.agent('write_file', { path: '/etc/passwd', text: 'x' });
  await new Guard(stack).run(agent, 'write');
  assert.deepEqual(world.ran, [['write_file', { path: `${jail}/etc/passwd`, text: 'x' }]]);
});

test('rewrite-args: refused where the tools cannot take rewritten arguments', async () => {
  const world = new World();
  const { agent, model } = world.agent('write_file', { path: '/etc/passwd', text: 'x' });
  await new Guard(examples().stack, { applyRewrites: false }).run(agent, 'write');
  assert.deepEqual(world.ran, []);
  assert.match(outputs(model)[0], /Not executed: the guard path-jail rewrote the arguments of `write_file`/);
});

test('rewrite-result: the redacted result is what the model reads', async () => {
  const world = new World();
  const { agent, model } = world.agent('shell', { command: 'cat .env' });
  await new Guard(examples().stack).run(agent, 'show');
  assert.equal(world.ran.length, 1);
  const [seen] = outputs(model);
  assert.ok(seen.includes('[REDACTED]') && !seen.includes('wJalrXUtnFEMI'), seen);
});

test('patch-request: extra context in the instructions of its turn only', async () => {
  const world = new World();
  const { agent, model } = world.agent('write_file', { path: 'a', text: 'x' });
  await new Guard(examples().stack).run(agent, 'write');
  const [first, second] = model.calls.map((c) => c.request.systemInstructions);
  assert.ok(first.startsWith('You work.\n\n<document id="house-rules">'), first);
  assert.equal(second, 'You work.');
});

test('patch-request: a preamble replaces the instructions', async () => {
  const model = new ScriptedModel([[assistantMessage('done')]]);
  const agent = new Agent({ name: 'worker', instructions: 'You work.', model });
  await new Guard(puppetOnly()).run(agent, 'puppet:flow:patch-request:You are terse.');
  assert.equal(model.calls[0].request.systemInstructions, 'You are terse.');
});

for (const [prompt, what] of [
  ['puppet:flow:patch-temperature:0.2', 'a temperature, which the SDK gives no per-call hook'],
  ['puppet:flow:skip:no', 'a skip of a model call'],
]) {
  test(`a flow the SDK cannot apply fails closed, never dropped: ${what}`, async () => {
    const world = new World();
    const { agent, model } = world.agent('write_file', { path: 'a', text: 'x' });
    await assert.rejects(new Guard(puppetOnly()).run(agent, prompt), (e) => {
      const stop = stopOf(e);
      return stop instanceof FailedClosed && stop.plugin === 'puppet' && stop.cause === 'unsupported-flow';
    });
    assert.equal(model.calls.length, 0);
    assert.deepEqual(world.ran, []);
  });
}

for (const [command, cause] of [['panic', 'trap'], ['loop', 'deadline'], ['grow', 'memory']]) {
  test(`a guest that fails closed (${cause}) at a tool call stops the run through the SDK's tripwire`, async () => {
    const world = new World();
    const { agent, model } = world.agent(`puppet:${command}`, {}, { tools: [world.puppet(`puppet:${command}`)] });
    await assert.rejects(new Guard(puppetOnly()).run(agent, 'go'), (e) => {
      assert.ok(e instanceof ToolCallError && e.error instanceof ToolInputGuardrailTripwireTriggered, e);
      const stop = stopOf(e);
      return stop instanceof FailedClosed && stop.plugin === 'puppet' && stop.cause === cause;
    });
    assert.deepEqual(world.ran, []);
    assert.equal(model.calls.length, 1, 'the model is not called again');
  });
}

test('a terminate at a tool call stops the run with Terminated', async () => {
  const world = new World();
  const name = 'puppet:flow:terminate:enough';
  const { agent } = world.agent(name, {}, { tools: [world.puppet(name)] });
  await assert.rejects(new Guard(puppetOnly()).run(agent, 'go'), (e) => {
    const stop = stopOf(e);
    return e.error instanceof ToolInputGuardrailTripwireTriggered && stop instanceof Terminated && stop.plugin === 'puppet' && stop.reason === 'enough';
  });
  assert.deepEqual(world.ran, []);
});

test('a terminate of the first turn stops the run before the model is called', async () => {
  const model = new ScriptedModel([[assistantMessage('done')]]);
  await assert.rejects(new Guard(puppetOnly()).run(new Agent({ name: 'worker', model }), 'puppet:flow:terminate:enough'), (e) => {
    const stop = stopOf(e);
    return e instanceof InputGuardrailTripwireTriggered && stop instanceof Terminated && stop.reason === 'enough';
  });
  assert.equal(model.calls.length, 0);
});

test('a guest failing on a result stops the run through the output tripwire', async () => {
  const world = new World();
  const { agent, model } = world.agent('puppet:panic', {}, { tools: [world.puppet('puppet:panic')] });
  const stack = puppetOnly({ subscribe: 'tool-result' });
  await assert.rejects(new Guard(stack).run(agent, 'go'), (e) => {
    assert.ok(e instanceof ToolCallError && e.error instanceof ToolOutputGuardrailTripwireTriggered, e);
    const stop = stopOf(e);
    return stop.plugin === 'puppet' && stop.cause === 'trap';
  });
  assert.deepEqual(world.ran, [['puppet:panic', {}]]);
  assert.equal(model.calls.length, 1);
});

test('the first turn is asked before the model is called', async () => {
  const model = new ScriptedModel([[assistantMessage('done')]]);
  await assert.rejects(new Guard(puppetOnly()).run(new Agent({ name: 'worker', model }), 'puppet:panic'), (e) => {
    const stop = stopOf(e);
    return e instanceof InputGuardrailTripwireTriggered && stop instanceof FailedClosed && stop.plugin === 'puppet' && stop.cause === 'trap';
  });
  assert.equal(model.calls.length, 0);
});

test('a hosted tool is refused rather than left unguarded', () => {
  const agent = new Agent({ name: 'worker', tools: [webSearchTool()] });
  assert.throws(() => new Guard(examples().stack).protect(agent), (e) => e instanceof HookboxError && /no guardrail hook/.test(e.message));
});

test('MCP servers are refused rather than left unguarded', () => {
  const server = new MCPServerStdio({ command: 'true', name: 'fs' });
  assert.throws(() => new Guard(examples().stack).protect(new Agent({ name: 'worker', mcpServers: [server] })), /MCP/);
});

for (const asObject of [false, true]) {
  test(`an agent handed off to is guarded too (${asObject ? 'a handoff()' : 'an Agent'})`, async () => {
    const world = new World();
    const subModel = new ScriptedModel([[functionCall('shell', { command: 'rm -rf /' }, { callId: 'c2' })], [assistantMessage('sub done')]]);
    const sub = new Agent({ name: 'sub', model: subModel, tools: world.tools });
    const mainModel = new ScriptedModel([[functionCall('transfer_to_sub', {}, { callId: 'c1' })]]);
    const main = new Agent({ name: 'main', model: mainModel, handoffs: [asObject ? handoff(sub) : sub] });
    sub.handoffs = [main]; // a cycle, as real handoff graphs have
    const result = await new Guard(examples().stack).run(main, 'go');
    assert.deepEqual(world.ran, []);
    assert.equal(result.finalOutput, 'sub done');
  });
}

test('an agent used as a tool must be protected itself', async () => {
  const world = new World();
  const innerModel = new ScriptedModel([[functionCall('shell', { command: 'rm -rf /' }, { callId: 'c2' })], [assistantMessage('inner done')]]);
  const inner = new Agent({ name: 'inner', model: innerModel, tools: world.tools });
  const guard = new Guard(examples().stack);
  assert.throws(
    () => guard.protect(new Agent({ name: 'outer', tools: [inner.asTool({ toolName: 'helper', toolDescription: 'helps' })] })),
    (e) => e instanceof HookboxError && /runs agent "inner"/.test(e.message) && /guard\.protect/.test(e.message),
  );
  const outerModel = new ScriptedModel([[functionCall('helper', { input: 'go' }, { callId: 'c1' })], [assistantMessage('done')]]);
  const outer = new Agent({ name: 'outer', model: outerModel, tools: [guard.protect(inner).asTool({ toolName: 'helper', toolDescription: 'helps' })] });
  assert.equal((await guard.run(outer, 'go')).finalOutput, 'done');
  assert.deepEqual(world.ran, []);
  assert.match(innerModel.calls[1].request.input.at(-1).output.text, /denied by policy/);
});

test('run without the model input filter fails closed before any tool', async () => {
  const guard = new Guard(examples().stack);
  let world = new World();
  let { agent } = world.agent('write_file', { path: 'a.txt', text: 'x' });
  await assert.rejects(
    guard.session(() => run(guard.protect(agent), 'write')),
    (e) => e.error instanceof ToolInputGuardrailTripwireTriggered && /guard\.runConfig\(\)/.test(stopOf(e).message),
  );
  assert.deepEqual(world.ran, []);
  // Nor is an answer returned without it.
  const answers = new Agent({ name: 'worker', model: new ScriptedModel([[assistantMessage('done')]]) });
  await assert.rejects(guard.session(() => run(guard.protect(answers), 'hi')), OutputGuardrailTripwireTriggered);
  // With both halves, the same call runs, and the patch reached the model.
  world = new World();
  let model;
  ({ agent, model } = world.agent('write_file', { path: 'a.txt', text: 'x' }));
  await guard.session(() => new Runner(guard.runConfig()).run(guard.protect(agent), 'write'));
  assert.equal(world.ran.length, 1);
  assert.match(model.calls[0].request.systemInstructions, /<document id="house-rules">/);
});

test('a guardrail outside a hookbox run refuses to decide', async () => {
  const world = new World();
  const { agent } = world.agent('write_file', { path: 'a.txt', text: 'x' });
  const guard = new Guard(examples().stack);
  await assert.rejects(new Runner(guard.runConfig()).run(guard.protect(agent), 'write'), /outside a hookbox run/);
  assert.deepEqual(world.ran, []);
});

test('a streamed run is guarded, and its hookbox run ends with it', async () => {
  const world = new World();
  const { agent, model } = world.agent('shell', { command: 'rm -rf /' });
  const guard = new Guard(examples().stack);
  let hookboxRun;
  const result = await guard.session(
    (r) => {
      hookboxRun = r;
      return new Runner(guard.runConfig()).run(guard.protect(agent), 'clean', { stream: true });
    },
  );
  let text = '';
  for await (const chunk of result.toTextStream()) text += chunk;
  assert.equal(result.finalOutput, 'done');
  assert.deepEqual(world.ran, []);
  assert.match(outputs(model)[0], /denied by policy/);
  assert.ok(hookboxRun.isOver);
});

test("a handoff is asked as a tool call before its onHandoff runs", async () => {
  const handed = [];
  const stack = Stack.fromFiles([guest('deny-tools')]);
  const sub = new Agent({ name: 'sub', model: new ScriptedModel([[assistantMessage('sub done')]]) });
  const target = handoff(sub, {
    inputType: z.object({ command: z.string() }),
    onHandoff: (_ctx, input) => handed.push(input.command),
  });
  // deny-tools skips `rm -rf`: the SDK cannot answer a handoff, so the run
  // ends naming the guard, and onHandoff never ran.
  const denied = new Agent({
    name: 'main',
    model: new ScriptedModel([[functionCall('transfer_to_sub', { command: 'rm -rf /' }, { callId: 'c1' })]]),
    handoffs: [target],
  });
  const stop = await new Guard(stack).run(denied, 'go').then(() => undefined, (e) => stopOf(e) ?? e);
  assert.ok(stop instanceof FailedClosed, String(stop));
  assert.deepEqual([stop.plugin, stop.cause], ['deny-tools', 'unsupported-flow']);
  assert.deepEqual(handed, []);
  // A harmless handoff is taken, with its arguments.
  sub.model = new ScriptedModel([[assistantMessage('sub done')]]);
  const ok = new Agent({
    name: 'main',
    model: new ScriptedModel([[functionCall('transfer_to_sub', { command: 'ls' }, { callId: 'c1' })]]),
    handoffs: [target],
  });
  assert.equal((await new Guard(stack).run(ok, 'go')).finalOutput, 'sub done');
  assert.deepEqual(handed, ['ls']);
});

test('a plugin the guard would never ask is refused, or warned about', async () => {
  const stack = Stack.fromFiles([guest('deny-tools'), guest('puppet')], { config: { puppet: { subscribe: 'completion-response' } } });
  assert.deepEqual(stack.unheard(['completion-call', 'tool-call', 'tool-result']), ['puppet']);
  assert.throws(() => new Guard(stack), (e) => e instanceof HookboxError && /puppet/.test(e.message));
  const warned = [];
  const warn = (w) => warned.push(w.message);
  process.on('warning', warn);
  try {
    new Guard(stack, { unheard: 'warn' });
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', warn);
  }
  assert.ok(warned.some((m) => /puppet/.test(m)), String(warned));
  new Guard(Stack.fromFiles([guest('deny-tools')]));
});

test('a streamed run streams live: the session hands it over before the model has answered', async () => {
  let open;
  const gate = new Promise((resolve) => {
    open = resolve;
  });
  const model = new ScriptedModel([
    modelResponder(async () => {
      await gate;
      return [assistantMessage('late')];
    }),
  ]);
  const guard = new Guard(examples().stack);
  let hookboxRun;
  const handed = guard.session((r) => {
    hookboxRun = r;
    return new Runner(guard.runConfig()).run(guard.protect(new Agent({ name: 'w', model })), 'hi', { stream: true });
  });
  const result = await Promise.race([handed, new Promise((resolve) => setTimeout(resolve, 3000))]);
  assert.ok(result, 'the session held the stream back until the model had answered');
  assert.ok(!hookboxRun.isOver);
  open();
  let text = '';
  for await (const chunk of result.toTextStream()) text += chunk;
  await result.completed;
  assert.equal(result.finalOutput, 'late');
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(hookboxRun.isOver);
});
