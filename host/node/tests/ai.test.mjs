// hookbox/ai on the Vercel AI SDK's own loop (generateText, streamText) and
// its own mock model (MockLanguageModelV4), guarded by the example plugins.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { generateText, simulateReadableStream, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { FailedClosed, HookboxError, Terminated } from 'hookbox';
import { Guard } from 'hookbox/ai';
import { z } from 'zod';

import { SECRET, examples } from './support.mjs';

const usage = { inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const calls = (name, input) => ({
  content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: name, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
});
const says = (text) => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] });

/** A model that calls `name` with `input`, then answers `answer`; and the tools' record. */
function agent(name, input, answer = 'done') {
  const ran = [];
  const model = new MockLanguageModelV4({ doGenerate: [calls(name, input), says(answer)] });
  const record = (tool_) => async (args) => {
    ran.push([tool_, args]);
    return tool_ === 'read_object' ? { content: `config:\n${SECRET}` } : tool_ === 'read_file' ? `config:\n${SECRET}` : 'ok';
  };
  const schema = z.object({ path: z.string().optional(), command: z.string().optional(), text: z.string().optional() });
  const tools = Object.fromEntries(
    ['shell', 'write_file', 'read_file', 'read_object', 'puppet:panic', 'puppet:loop', 'puppet:flow:terminate:enough'].map((t) => [
      t,
      tool({ description: t, inputSchema: schema, execute: record(t) }),
    ]),
  );
  return { model, tools, ran };
}

async function guarded(name, input, { prompt = 'tidy up', answer } = {}) {
  const { stack, jail } = examples();
  const { model, tools, ran } = agent(name, input, answer);
  const run = new Guard(stack).startRun();
  const result = generateText({
    model: run.model(model),
    tools: run.tools(tools),
    abortSignal: run.signal,
    system: 'Be brief.',
    prompt,
    stopWhen: stepCountIs(4),
  });
  return { result, ran, model, jail, run };
}

/** What the model read as the tool's result in its second call. */
function toolOutput(model) {
  const prompt = model.doGenerateCalls[1].prompt;
  return prompt.find((m) => m.role === 'tool').content[0].output;
}

test('continue: the tool runs with its own arguments', async () => {
  const { result, ran, jail } = await guarded('write_file', { path: 'notes.txt', text: 'hi' });
  assert.equal((await result).text, 'done');
  assert.deepEqual(ran, [['write_file', { path: `${jail}/notes.txt`, text: 'hi' }]]);
});

test('skip: the tool does not run, the model reads the reason', async () => {
  const { result, ran, model } = await guarded('shell', { command: 'rm -rf /' });
  assert.equal((await result).text, 'done');
  assert.deepEqual(ran, []);
  assert.match(toolOutput(model).value, /denied by policy/);
});

test('rewrite-args: the tool runs with the guard’s arguments', async () => {
  const { result, ran, jail } = await guarded('write_file', { path: '/etc/passwd', text: 'x' });
  await result;
  assert.deepEqual(ran, [['write_file', { path: `${jail}/etc/passwd`, text: 'x' }]]);
});

test('rewrite-result: the model reads the redaction, text as text', async () => {
  const { result, model } = await guarded('read_file', { path: 'config' });
  await result;
  const output = toolOutput(model);
  assert.equal(output.type, 'text');
  assert.ok(output.value.includes('[REDACTED]') && !output.value.includes('wJalrXUtnFEMI'));
});

test('rewrite-result: an object result stays an object', async () => {
  const { result, model } = await guarded('read_object', { path: 'config' });
  const steps = (await result).steps;
  const output = toolOutput(model);
  assert.equal(output.type, 'json');
  assert.match(output.value.content, /\[REDACTED\]/);
  assert.equal(typeof steps[0].content.find((p) => p.type === 'tool-result').output, 'object');
});

test('patch-request: extra context in the system message, the first call only', async () => {
  const { result, model } = await guarded('write_file', { path: 'a' });
  await result;
  const [first, second] = model.doGenerateCalls.map((c) => c.prompt.filter((m) => m.role === 'system'));
  assert.equal(first.length, 1);
  assert.ok(first[0].content.startsWith('Be brief.\n\n<document id="house-rules">'));
  assert.deepEqual(second, [{ role: 'system', content: 'Be brief.' }]);
});

test('patch-request: a temperature and a preamble reach the model call', async () => {
  const { result, model } = await guarded('write_file', { path: 'a' }, { prompt: 'puppet:flow:patch-temperature:0.25' });
  await result;
  assert.equal(model.doGenerateCalls[0].temperature, 0.25);
  const { result: again, model: other } = await guarded('write_file', { path: 'a' }, { prompt: 'puppet:flow:patch-request:You are terse.' });
  await again;
  assert.equal(other.doGenerateCalls[1].prompt[0].content, 'You are terse.');
});

test('a flow the completion call cannot honour rejects the call, naming the plugin', async () => {
  const { result, ran } = await guarded('write_file', { path: 'a' }, { prompt: 'puppet:flow:skip:no' });
  await assert.rejects(result, (e) => e instanceof FailedClosed && e.plugin === 'puppet' && e.cause === 'unsupported-flow');
  assert.deepEqual(ran, []);
});

for (const [tool_, cause] of [['puppet:panic', 'trap'], ['puppet:loop', 'deadline']]) {
  test(`a guest that fails closed (${cause}) at a tool call rejects the whole call, naming it`, async () => {
    const { result, ran, model, run } = await guarded(tool_, {});
    await assert.rejects(result, (e) => e instanceof FailedClosed && e.plugin === 'puppet' && e.cause === cause);
    assert.deepEqual(ran, []);
    assert.equal(model.doGenerateCalls.length, 1, 'the model is not called again');
    await assert.rejects(run.run.toolCall('read_file', {}), FailedClosed);
  });
}

test('a terminate at a tool call rejects with Terminated', async () => {
  const { result } = await guarded('puppet:flow:terminate:enough', {});
  await assert.rejects(result, (e) => e instanceof Terminated && e.plugin === 'puppet' && e.reason === 'enough');
});

test('a terminate of the answer (model-turn-finished) rejects the call', async () => {
  const { result } = await guarded('write_file', { path: 'a' }, { answer: 'puppet:flow:terminate:not that' });
  await assert.rejects(result, (e) => e instanceof Terminated && e.event === 'model-turn-finished' && e.reason === 'not that');
});

function streamed(deltas) {
  const chunks = [
    { type: 'text-start', id: 't' },
    ...deltas.map((delta) => ({ type: 'text-delta', id: 't', delta })),
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ];
  return new MockLanguageModelV4({ doStream: { stream: simulateReadableStream({ chunks }) } });
}

test('streaming: text deltas pass through the guards to the caller, the word being written held back', async () => {
  const { stack } = examples();
  const run = new Guard(stack).startRun();
  const result = streamText({ model: run.model(streamed(['Hel', 'lo'])), prompt: 'hi', abortSignal: run.signal });
  const parts = [];
  for await (const text of result.textStream) parts.push(text);
  // redact-secrets reads the text streamed so far: the word being written
  // is held until the text ends.
  assert.deepEqual(parts, ['Hello']);
});

test('streaming: a secret split across deltas never reaches the caller', async () => {
  const { stack } = examples();
  const run = new Guard(stack).startRun();
  const deltas = ['Your config: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MD', 'ENG/bPxRfiCYEXAMPLEKEY', ' and that is all of it.'];
  const result = streamText({ model: run.model(streamed(deltas)), prompt: 'hi', abortSignal: run.signal });
  const parts = [];
  for await (const text of result.textStream) parts.push(text);
  assert.ok(parts.every((part) => !part.includes('wJalr') && !part.includes('EXAMPLEKEY')), JSON.stringify(parts));
  const text = parts.join('');
  assert.ok(text.startsWith('Your config: ') && text.endsWith(' and that is all of it.') && text.includes('[REDACTED'), text);
  assert.equal(await result.text, text);
});

test('streaming: a guest that traps on a delta errors the stream, naming it', async () => {
  const { stack } = examples();
  const run = new Guard(stack).startRun();
  const result = streamText({ model: run.model(streamed(['Hel', 'puppet:panic', 'never'])), prompt: 'hi', abortSignal: run.signal, onError() {} });
  const parts = [];
  await assert.rejects(
    (async () => {
      for await (const text of result.textStream) parts.push(text);
    })(),
    (e) => e instanceof FailedClosed && e.plugin === 'puppet' && e.cause === 'trap',
  );
  // Nothing was shown: the first delta was one word, held.
  assert.deepEqual(parts, []);
});

test('a call without the run’s signal is refused before the model is called', async () => {
  const { stack } = examples();
  const { model, tools } = agent('write_file', { path: 'a' });
  const run = new Guard(stack).startRun();
  await assert.rejects(generateText({ model: run.model(model), tools: run.tools(tools), prompt: 'x' }), (e) => e instanceof HookboxError && /abortSignal: run.signal/.test(e.message));
  assert.equal(model.doGenerateCalls.length, 0);
});

test('what the SDK gives no execution hook is refused, not left unguarded', () => {
  const run = new Guard(examples().stack).startRun();
  assert.throws(() => run.tools({ ask: tool({ description: 'd', inputSchema: z.object({}) }) }), /no execute/);
});

test('guarded tools under an unguarded model are refused: the call ends before the tool runs', async () => {
  const { stack } = examples();
  const { model, tools, ran } = agent('write_file', { path: 'a' });
  const run = new Guard(stack).startRun();
  await assert.rejects(
    generateText({ model, tools: run.tools(tools), abortSignal: run.signal, prompt: 'x', stopWhen: stepCountIs(4) }),
    (e) => e instanceof HookboxError && /run\.model/.test(e.message),
  );
  assert.deepEqual(ran, []);
});

test('a terminate on the last step ends the call too: the SDK would resolve it as a tool error', async () => {
  const { stack } = examples();
  const { model, tools, ran } = agent('puppet:flow:terminate:enough', {});
  const run = new Guard(stack).startRun();
  await assert.rejects(
    run.generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(1) }),
    (e) => e instanceof Terminated && e.plugin === 'puppet' && e.reason === 'enough',
  );
  assert.deepEqual(ran, []);
  // Called directly, `check` gives the same end.
  const again = agent('puppet:flow:terminate:enough', {});
  const direct = new Guard(stack).startRun();
  const result = await generateText({
    model: direct.model(again.model),
    tools: direct.tools(again.tools),
    abortSignal: direct.signal,
    prompt: 'go',
    stopWhen: stepCountIs(1),
  });
  assert.throws(() => direct.check(result), (e) => e instanceof Terminated && e.reason === 'enough');
});
