// Compiled (never run) by types.test.mjs with `tsc --strict`: the package's
// types as a TypeScript user meets them, against the frameworks' own types.
import { generateText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Agent, tool as agentTool } from '@openai/agents';
import { FailedClosed, Stack, type Decision, type ToolCallVerdict } from 'hookbox';
import { Guard as AiGuard } from 'hookbox/ai';
import { Guard as AgentsGuard, stopOf } from 'hookbox/openai-agents';
import { z } from 'zod';

export async function core(dir: string): Promise<string> {
  const stack = Stack.fromDirectory(dir, { watch: false });
  using run = stack.startRun('types');
  const verdict: ToolCallVerdict = await run.toolCall('shell', { command: 'ls' });
  const decision: Decision = run.sendSync({ event: 'tool-result', tool_name: 'shell', result: 'ok' });
  const call = await run.completionCall('hi', [{ role: 'user', content: 'hi' }], 1);
  call.requireOnly('my framework', ['preamble']);
  return `${verdict.kind} ${decision.flow} ${call.system('Be brief.') ?? ''} ${stack.generation}`;
}

export async function ai(stack: Stack): Promise<string> {
  using guarded = new AiGuard(stack).startRun();
  const shell = tool({ description: 'Run.', inputSchema: z.object({ command: z.string() }), execute: async ({ command }) => command });
  const result = await generateText({
    model: guarded.model(new MockLanguageModelV4()),
    tools: guarded.tools({ shell }),
    abortSignal: guarded.signal,
    prompt: 'hi',
  });
  return result.text;
}

export async function agents(stack: Stack): Promise<unknown> {
  const guard = new AgentsGuard(stack, { applyRewrites: true });
  const shell = agentTool({ name: 'shell', description: 'Run.', parameters: z.object({ command: z.string() }), execute: async ({ command }) => command });
  const agent: Agent = guard.protect(new Agent({ name: 'worker', tools: [shell] }));
  try {
    const result = await guard.run(agent, 'hi', { maxTurns: 3 });
    const streamed = await guard.run(agent, 'hi', { stream: true });
    return [result.finalOutput, streamed.finalOutput];
  } catch (error) {
    const stop = stopOf(error);
    if (stop instanceof FailedClosed) return `${stop.plugin}: ${stop.cause}`;
    throw error;
  }
}
