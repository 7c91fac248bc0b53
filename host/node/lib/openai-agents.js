// hookbox guards for the OpenAI Agents SDK for JavaScript (`@openai/agents` 0.20).
//
//   const guard = new Guard(Stack.fromDirectory('plugins'));
//   const result = await guard.run(agent, 'Tidy up the project');
//
// `guard.run` (or `run(...)` / `runner.run(...)` inside `guard.session()`)
// starts one hookbox run for the SDK run, on an agent `guard.protect` gave
// hookbox's guardrails. Each hookbox event maps to the SDK's own hook:
//
// | hookbox event | the SDK's hook | continue | a rewrite | skip / refuse | the run ends (`Stopped`) |
// |---|---|---|---|---|---|
// | completion-call, turn 1 | input guardrail (`runInParallel: false`: before the model is called) | allow | the patch, applied by the model input filter below | — | tripwire: `InputGuardrailTripwireTriggered`, `result.output.outputInfo` the `Stopped` |
// | completion-call, every turn | `RunConfig.callModelInputFilter` | the model input as it was | `preamble`, `extra_context`: the instructions, this call only; any other field (temperature, tools ...) cannot be applied there: `FailedClosed` (unsupported-flow), never dropped | — | thrown out of `run` |
// | tool-call | tool input guardrail of every function tool | allow | the tool's `invoke` runs with the rewritten arguments (`applyRewrites: false`: rejected, the tool does not run) | `rejectContent`: the reason is the tool's output (a tool with an `outputSchema`: its `errorFunction`'s), the tool does not run | `throwException`: `ToolInputGuardrailTripwireTriggered` |
// | tool-result | tool output guardrail | allow | `rejectContent` with the rewrite: what the model reads | — | `throwException`: `ToolOutputGuardrailTripwireTriggered` |
// | tool-call of a handoff (`transfer_to_...`) | the handoff's invocation, before its `onHandoff` | the handoff is taken | taken with the rewritten arguments | the SDK cannot answer a handoff instead of taking it: the run ends (`FailedClosed`, unsupported-flow, naming the guard) | thrown out of `run` |
//
// A rewrite never grants: the SDK's own approvals (`needsApproval`) still
// decide. `protect` guards every agent a run can reach: the agents it hands
// off to (an `Agent`, or a `handoff()`, whose target it replaces with the
// protected agent) and agents used as tools (which must be protected
// themselves: `guard.protect(inner).asTool(...)`). What the SDK gives no
// guardrail hook is refused rather than left unguarded: a hosted, computer,
// shell or apply-patch tool, an MCP server's tools.
//
// The SDK wraps a tool guardrail's tripwire in a `ToolCallError` (its
// `error`); `stopOf(error)` finds hookbox's own error (the `Stopped`, or the
// `HookboxError` of a missing half) in whatever the run rejected with.
//
// `run` called directly must be given both halves of the guard, or the run
// fails closed before any tool runs or any output is returned:
//
//   await guard.session(() => run(guard.protect(agent), input, { ...guard.runConfig() }));

import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

import {
  Handoff,
  Runner,
  handoff,
  ToolGuardrailFunctionOutputFactory as Output,
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
} from '@openai/agents';

import { FailedClosed, HookboxError, Stopped } from './errors.js';

const FRAMEWORK = 'the OpenAI Agents SDK';
// What `callModelInputFilter` can change of a model call.
const PATCHABLE = ['preamble', 'extra_context'];
const ROLES = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant', tool: 'tool' };

const SESSION = new AsyncLocalStorage();

// Which agent an `agent.asTool()` tool runs. The SDK keeps this in a module
// of its own that its package does not export; the same module instance is
// reached by its file. Without it (another layout), every agent tool is
// refused, since hookbox could not tell whether its agent is protected.
const agentOfTool = await (async () => {
  try {
    const core = createRequire(import.meta.url).resolve('@openai/agents-core');
    const registry = pathToFileURL(join(dirname(core), 'agentToolSourceRegistry.mjs')).href;
    return (await import(registry)).getAgentToolSourceAgent;
  } catch {
    return undefined;
  }
})();

/** The session of the SDK run in progress, or a `HookboxError` saying how to start one. */
function session() {
  const current = SESSION.getStore();
  if (!current) {
    throw new HookboxError(
      'a hookbox guardrail ran outside a hookbox run: call guard.run, or run the SDK inside guard.session(() => ...)',
    );
  }
  return current;
}

/** The events this guard sends: a plugin waiting only for others is never asked. */
const SENT = ['completion-call', 'tool-call', 'tool-result'];

/** Refuses (or, with `unheard: 'warn'`, warns about) a stack holding plugins this guard would never ask. */
function checkHeard(stack, unheard) {
  if (unheard !== 'refuse' && unheard !== 'warn') throw new TypeError(`unheard is 'refuse' or 'warn', not ${unheard}`);
  const names = stack.unheard(SENT);
  if (names.length === 0) return;
  const message =
    `the plugins ${names.join(', ')} subscribe only to events hookbox's ${FRAMEWORK} guard never sends ` +
    `(it sends ${SENT.join(', ')}), so they would never be asked; remove them from this stack, or pass { unheard: 'warn' } to run without them`;
  if (unheard === 'refuse') throw new HookboxError(message);
  process.emitWarning(message, { code: 'HOOKBOX_UNHEARD' });
}

/** Fails unless the model input filter has run: without it, the guards' patches would be dropped and later turns never asked. */
function filtered(current) {
  if (!current.filtered) {
    throw new HookboxError(
      "hookbox's model input filter is not installed, so the guards' request patches would be dropped: " +
        'pass guard.runConfig() as the run options (or the Runner) of the SDK run (guard.run does)',
    );
  }
}

/** hookbox's guards on OpenAI Agents SDK runs, from `stack`. */
export class Guard {
  #protected = new WeakSet();

  /**
   * @param {import('./index.js').Stack} stack
   * @param {{applyRewrites?: boolean, unheard?: 'refuse' | 'warn'}} [options]
   *   `applyRewrites: false` refuses a call whose arguments a guard
   *   rewrote instead of running it with them. `unheard`: what to do with
   *   a stack holding plugins that subscribe only to events this guard
   *   never sends (a model's answer, streamed text): refuse it (the
   *   default), or warn and run without them.
   */
  constructor(stack, { applyRewrites = true, unheard = 'refuse' } = {}) {
    checkHeard(stack, unheard);
    this.stack = stack;
    this.applyRewrites = applyRewrites;
    this.inputGuardrail = { name: 'hookbox', runInParallel: false, execute: (args) => this.#firstTurn(args) };
    this.outputGuardrail = { name: 'hookbox', execute: () => this.#finalOutput() };
    this.toolInputGuardrail = defineToolInputGuardrail({ name: 'hookbox', run: (data) => this.#toolCall(data) });
    this.toolOutputGuardrail = defineToolOutputGuardrail({ name: 'hookbox', run: (data) => this.#toolResult(data) });
  }

  /**
   * Runs `fn` (the SDK runs it makes: normally one) as one hookbox run,
   * given to `fn`; closes the run when what `fn` returns settles. A
   * streamed result is returned at once, so the caller reads it live, and
   * the run is closed when it completes.
   */
  async session(fn, { runId } = {}) {
    const current = { run: this.stack.startRun(runId), prompt: '', turn: 0, filtered: false, rewrites: new Map(), ranWith: new Map() };
    let result;
    try {
      result = await SESSION.run(current, () => fn(current.run));
    } catch (error) {
      current.run.close();
      throw error;
    }
    if (result?.completed instanceof Promise) {
      // A streamed result is handed over at once, so its caller reads the
      // stream live; the run ends when the stream does.
      result.completed.catch(() => {}).finally(() => current.run.close());
    } else {
      current.run.close();
    }
    return result;
  }

  /**
   * A copy of `agent` with hookbox's guardrails first on every tool, its
   * input and its output, and on every agent it can hand off to. Throws
   * `HookboxError` for what the SDK gives no guardrail hook (a hosted
   * tool, an MCP server) and for an agent used as a tool that was not
   * protected itself.
   */
  protect(agent) {
    return this.#protect(agent, new Map());
  }

  /**
   * Run options (`run(agent, input, options)`) or a Runner's config with
   * hookbox's model input filter; one `config` set runs after it.
   */
  runConfig(config = {}) {
    const theirs = config.callModelInputFilter;
    return {
      ...config,
      callModelInputFilter: async (data) => {
        const ours = await this.#completionCall(data.modelData);
        return theirs ? theirs({ ...data, modelData: ours }) : ours;
      },
    };
  }

  /**
   * `new Runner(runConfig).run(agent, input, options)`, guarded, as one
   * hookbox run. `options.runConfig` is the Runner's configuration.
   */
  async run(agent, input, { runConfig, runId, ...options } = {}) {
    const runner = new Runner(this.runConfig(runConfig));
    return this.session(() => runner.run(this.protect(agent), input, options), { runId });
  }

  #protect(agent, done) {
    if (this.#protected.has(agent)) return agent;
    if (done.has(agent)) return done.get(agent);
    if (agent.mcpServers?.length) {
      throw new HookboxError(
        `agent "${agent.name}" has MCP servers, whose tools the SDK runs without a function tool's guardrails; ` +
          'guard the MCP server with `hookbox mcp` instead, or remove it',
      );
    }
    const tools = agent.tools.map((tool) => this.#tool(agent, tool));
    const guarded = agent.clone({
      tools,
      inputGuardrails: [this.inputGuardrail, ...agent.inputGuardrails],
      outputGuardrails: [this.outputGuardrail, ...agent.outputGuardrails],
    });
    done.set(agent, guarded);
    this.#protected.add(guarded);
    guarded.handoffs = agent.handoffs.map((h) => this.#handoff(h instanceof Handoff ? h : handoff(h), done));
    return guarded;
  }

  /** `h`, asked as a tool call before it is taken (before its `onHandoff`), to a protected agent. */
  #handoff(h, done) {
    const target = this.#protect(h.agent, done);
    return h.clone({
      agent: target,
      onInvokeHandoff: async (context, args) => {
        const { run } = session();
        const verdict = await run.toolCall(h.toolName, args || '{}');
        if (verdict.kind !== 'run') {
          const detail = `answered the handoff \`${h.toolName}\` with ${verdict.kind} (${verdict.reason}); the SDK cannot answer a handoff instead of taking it, so the run ends`;
          run.end(new FailedClosed(detail, { plugin: verdict.by, cause: 'unsupported-flow', detail }));
        }
        await h.onInvokeHandoff(context, verdict.rewritten ? verdict.argsJson : args);
        return target;
      },
    });
  }

  #tool(agent, tool) {
    if (tool.type !== 'function') {
      throw new HookboxError(
        `the tool "${tool.name ?? tool.type}" of agent "${agent.name}" is a ${tool.type} tool, so the SDK gives it no guardrail hook ` +
          'and hookbox cannot guard it; remove it or wrap it in a function tool',
      );
    }
    const inner = agentOfTool ? agentOfTool(tool) : typeof tool.on === 'function' ? agent : undefined;
    if (inner !== undefined && !this.#protected.has(inner)) {
      throw new HookboxError(
        `the tool "${tool.name}" of agent "${agent.name}" runs agent "${agentOfTool ? inner.name : 'unknown'}", whose own tools ` +
          'would run unguarded; make it from a protected agent: guard.protect(agent).asTool(...)',
      );
    }
    const invoke = tool.invoke;
    const guarded = {
      ...tool,
      inputGuardrails: [this.toolInputGuardrail, ...(tool.inputGuardrails ?? [])],
      outputGuardrails: [this.toolOutputGuardrail, ...(tool.outputGuardrails ?? [])],
    };
    if (this.applyRewrites) {
      guarded.invoke = (context, input, details) => {
        const current = session();
        const id = details?.toolCall?.callId ?? '';
        const args = current.rewrites.get(id) ?? input;
        current.rewrites.delete(id);
        current.ranWith.set(id, args);
        return invoke.call(tool, context, args, details);
      };
    }
    return guarded;
  }

  async #firstTurn({ input }) {
    const current = session();
    try {
      await this.#first(current, input, undefined);
    } catch (stop) {
      if (stop instanceof Stopped) return { tripwireTriggered: true, outputInfo: stop };
      throw stop;
    }
    return { tripwireTriggered: false, outputInfo: undefined };
  }

  /** The completion-call of turn 1, asked once: by the input guardrail or the filter, whichever runs first. */
  #first(current, input, instructions) {
    if (!current.first) {
      const messages = messagesOf(input, instructions);
      current.prompt = typeof input === 'string' ? input : (messages.find((m) => m.role === 'user')?.content ?? '');
      current.first = current.run.completionCall(current.prompt, messages, 1);
    }
    return current.first;
  }

  async #completionCall(model) {
    const current = session();
    current.filtered = true;
    current.turn += 1;
    const verdict =
      current.turn === 1
        ? await this.#first(current, model.input, model.instructions)
        : await current.run.completionCall(current.prompt, messagesOf(model.input, model.instructions), current.turn);
    verdict.requireOnly(FRAMEWORK, PATCHABLE);
    if (verdict.kind === 'continue') return model;
    return { input: model.input, instructions: verdict.system(model.instructions) };
  }

  async #toolCall({ toolCall }) {
    let verdict;
    try {
      const current = session();
      filtered(current);
      verdict = await current.run.toolCall(toolCall.name, toolCall.arguments || '{}', { toolCallId: toolCall.callId });
      if (verdict.kind === 'run' && verdict.rewritten && this.applyRewrites) {
        current.rewrites.set(toolCall.callId, verdict.argsJson ?? '{}');
      }
    } catch (stop) {
      if (stop instanceof HookboxError) return Output.throwException(stop);
      throw stop;
    }
    if (verdict.kind !== 'run') return Output.rejectContent(verdict.reason ?? '', verdict);
    if (verdict.rewritten && !this.applyRewrites) {
      return Output.rejectContent(
        `Not executed: the guard ${verdict.by} rewrote the arguments of \`${toolCall.name}\`, ` +
          "and this agent's tools do not take rewritten arguments.",
        verdict,
      );
    }
    return Output.allow(verdict);
  }

  async #toolResult({ toolCall, output }) {
    let verdict;
    try {
      const current = session();
      const args = current.ranWith.get(toolCall.callId) ?? (toolCall.arguments || '{}');
      current.ranWith.delete(toolCall.callId);
      verdict = await current.run.toolResult(toolCall.name, args, textOf(output), { toolCallId: toolCall.callId });
    } catch (stop) {
      if (stop instanceof HookboxError) return Output.throwException(stop);
      throw stop;
    }
    if (verdict.kind === 'replace') return Output.rejectContent(verdict.text ?? '', verdict);
    return Output.allow(verdict);
  }

  #finalOutput() {
    try {
      filtered(session());
    } catch (missing) {
      return { tripwireTriggered: true, outputInfo: missing };
    }
    return { tripwireTriggered: false, outputInfo: undefined };
  }
}

/**
 * hookbox's error inside what an SDK run rejected with: `error` itself, a
 * tripwire's `outputInfo`, or either inside a `ToolCallError`; `undefined`
 * when the run did not end by hookbox.
 */
export function stopOf(error) {
  for (let e = error, depth = 0; e && depth < 4; depth++) {
    if (e instanceof HookboxError) return e;
    const info = e.result?.output?.outputInfo;
    if (info instanceof HookboxError) return info;
    e = e.error;
  }
  return undefined;
}

/** A content value as text: a string as is, parts as their text joined, anything else as JSON. */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  if (typeof content?.text === 'string') return content.text;
  return JSON.stringify(content ?? null);
}

/** The Responses input items a model call sends, as hookbox's `{role, content}`, its instructions first. */
export function messagesOf(items, instructions) {
  const messages = instructions ? [{ role: 'system', content: instructions }] : [];
  if (typeof items === 'string') return [...messages, { role: 'user', content: items }];
  for (const item of items ?? []) {
    if (item.type === 'function_call') {
      messages.push({ role: 'assistant', content: `${item.name}(${item.arguments ?? ''})` });
    } else if (item.type === 'function_call_result') {
      messages.push({ role: 'tool', content: textOf(item.output) });
    } else if (ROLES[item.role]) {
      messages.push({ role: ROLES[item.role], content: textOf(item.content) });
    }
  }
  return messages;
}
