// A Vercel AI SDK agent loop guarded by hookbox's example plugins, on the
// SDK's own mock model (no network, no API key).
//
//   app="$(host/node/tests/setup.sh)"     # the package and the frameworks, installed
//   node "$app/examples/ai-guarded.mjs" target/node/guests
//
// PLUGIN_DIR holds deny-tools.wasm, path-jail.wasm and redact-secrets.wasm
// (default: target/node/guests, which `cargo run -p xtask -- guests
// target/node/guests` fills). The model asks for a destructive command, a
// write outside the workspace and a file holding a key: the first never
// runs, the second is jailed, and the key never reaches the model.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Stack } from 'hookbox';
import { Guard } from 'hookbox/ai';
import { z } from 'zod';

const plugins = process.argv[2] ?? 'target/node/guests';
const workspace = mkdtempSync(join(tmpdir(), 'hookbox-example-'));

const tools = {
  shell: tool({
    description: 'Run a shell command.',
    inputSchema: z.object({ command: z.string() }),
    execute: async ({ command }) => {
      console.log(`  tool ran: shell '${command}'`);
      return 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    },
  }),
  write_file: tool({
    description: 'Write a file.',
    inputSchema: z.object({ path: z.string(), text: z.string() }),
    execute: async ({ path }) => {
      console.log(`  tool ran: write_file '${path}'`);
      return `wrote ${path}`;
    },
  }),
};

const usage = { inputTokens: { total: 10 }, outputTokens: { total: 5 } };
const call = (toolCallId, toolName, input) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) });
const model = new MockLanguageModelV4({
  doGenerate: [
    {
      content: [
        call('c1', 'shell', { command: 'rm -rf /' }),
        call('c2', 'write_file', { path: '/etc/motd', text: 'hi' }),
        call('c3', 'shell', { command: 'cat .env' }),
      ],
      finishReason: { unified: 'tool-calls', raw: undefined },
      usage,
      warnings: [],
    },
    { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
  ],
});

const stack = Stack.fromFiles(
  ['deny-tools', 'path-jail', 'redact-secrets'].map((name) => join(plugins, `${name}.wasm`)),
  { config: { 'path-jail': { root: workspace } } },
);
const run = new Guard(stack).startRun();
let result;
try {
  result = await generateText({
    model: run.model(model),
    tools: run.tools(tools),
    abortSignal: run.signal,
    system: 'You tidy projects.',
    prompt: 'Tidy up this project',
    stopWhen: stepCountIs(3),
  });
} finally {
  run.close(); // or `using run = ...` where the runtime has explicit resource management
}
console.log('the model read:');
for (const message of model.doGenerateCalls.at(-1).prompt) {
  if (message.role === 'tool') for (const part of message.content) console.log(`  ${part.output.value}`);
}
console.log(`final answer: ${result.text}`);
