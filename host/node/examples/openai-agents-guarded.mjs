// An OpenAI Agents SDK agent guarded by hookbox's example plugins, on the
// SDK's own scripted model (no network, no API key).
//
//   app="$(host/node/tests/setup.sh)"     # the package and the frameworks, installed
//   node "$app/examples/openai-agents-guarded.mjs" target/node/guests
//
// PLUGIN_DIR holds deny-tools.wasm, path-jail.wasm and redact-secrets.wasm
// (default: target/node/guests, which `cargo run -p xtask -- guests
// target/node/guests` fills). The model asks for a destructive command, a
// write outside the workspace and a file holding a key: the first never
// runs, the second is jailed, and the key never reaches the model.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Agent, setTracingDisabled, tool } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents-core/testing';
import { Stack } from 'hookbox';
import { Guard } from 'hookbox/openai-agents';
import { z } from 'zod';

setTracingDisabled(true);
const plugins = process.argv[2] ?? 'target/node/guests';
const workspace = mkdtempSync(join(tmpdir(), 'hookbox-example-'));

const shell = tool({
  name: 'shell',
  description: 'Run a shell command.',
  parameters: z.object({ command: z.string() }),
  execute: async ({ command }) => {
    console.log(`  tool ran: shell '${command}'`);
    return 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  },
});
const writeFile = tool({
  name: 'write_file',
  description: 'Write a file.',
  parameters: z.object({ path: z.string(), text: z.string() }),
  execute: async ({ path }) => {
    console.log(`  tool ran: write_file '${path}'`);
    return `wrote ${path}`;
  },
});

const model = new ScriptedModel([
  [
    functionCall('shell', { command: 'rm -rf /' }, { callId: 'c1' }),
    functionCall('write_file', { path: '/etc/motd', text: 'hi' }, { callId: 'c2' }),
    functionCall('shell', { command: 'cat .env' }, { callId: 'c3' }),
  ],
  [assistantMessage('done')],
]);
const agent = new Agent({ name: 'tidier', instructions: 'You tidy projects.', model, tools: [shell, writeFile] });
const stack = Stack.fromFiles(
  ['deny-tools', 'path-jail', 'redact-secrets'].map((name) => join(plugins, `${name}.wasm`)),
  { config: { 'path-jail': { root: workspace } } },
);
const result = await new Guard(stack).run(agent, 'Tidy up this project');
console.log('the model read:');
for (const item of model.lastCall.request.input) {
  if (item.type === 'function_call_result') console.log(`  ${item.output.text}`);
}
console.log(`final answer: ${result.finalOutput}`);
