// hookbox guards for the Vercel AI SDK (`ai` 7).
//
//   const guard = new Guard(Stack.fromDirectory('plugins'));
//   using run = guard.startRun();
//   const result = await run.generateText({ model: openai('gpt-5'), tools: { shell, readFile }, prompt: 'Tidy up' });
//
// `run.generateText(options)` is the SDK's `generateText` with the three
// halves installed and the end checked. Called directly, it needs all of
// them, and `run.check` of its result: a stop inside a tool on the call's
// last step is, to the SDK, a tool error it resolves with.
//
//   const result = run.check(await generateText({
//     model: run.model(openai('gpt-5')),   // wrapLanguageModel + hookbox's middleware
//     tools: run.tools({ shell, readFile }),
//     abortSignal: run.signal,             // required: a stop inside a tool ends the call
//     prompt: 'Tidy up the project',
//   }));
//
// One guarded run is one hookbox run, for one `generateText` or
// `streamText` call (all its steps). Each hookbox event maps to the SDK's
// own hook:
//
// | hookbox event | the SDK's hook | continue | a rewrite | skip / refuse | the run ends (`Stopped`) |
// |---|---|---|---|---|---|
// | completion-call, every step | middleware `transformParams` | the call as it was | `preamble`, `extra_context`: the system message; `temperature`; `max_tokens`: `maxOutputTokens`; `tool_choice`: `toolChoice` (one specific tool: `{type: 'tool'}`; several: `required` among only those); `active_tools`: `tools` narrowed. `additional_params`, `history`: no place to apply them, so `FailedClosed` (unsupported-flow), never dropped | — | thrown: `generateText` rejects with it, `streamText`'s stream errors with it |
// | model-turn-finished | middleware `wrapGenerate`, after the model answered | the answer | — | — | thrown, as above |
// | text-delta | middleware `wrapStream`, each text delta (with the text so far) | passed on, less the tail held back (docs/contract.md#streamed-text); the SDK's `text-end` releases it | what no later delta can change of the rewrite of the text so far, so a secret split across deltas is never passed on | — | the stream errors with it |
// | stream-response-finish | middleware `wrapStream`, the `finish` part | passed on | — | — | the stream errors with it |
// | tool-call | the tool's `execute`, before it runs | runs | runs with the rewritten arguments (canonical JSON, parsed) | the reason is the tool's output; it does not run | `run.signal` aborts with it (so the call rejects with it) and `execute` throws it |
// | tool-result | the tool's `execute`, after it ran | its output | the rewrite: text stays text, an object the JSON object the rewrite is (not JSON: `FailedClosed`) | — | as tool-call |
//
// A rewrite never grants: the SDK's own approvals (`needsApproval`) still
// decide. What the SDK gives no execution hook is refused rather than left
// unguarded: a tool without `execute` (the caller runs it) and a
// provider-executed tool. A guard half installed is refused too: guarded
// tools under a model that is not `run.model(...)` end the call before the
// tool runs. Tool-call deltas and invalid tool calls are not
// mapped (the call itself is guarded before it runs).

import { generateText, wrapLanguageModel } from 'ai';

import { FailedClosed, HookboxError, Stopped } from './errors.js';

const FRAMEWORK = 'the Vercel AI SDK';
// What a model call's parameters can take of a request patch.
const PATCHABLE = ['preamble', 'extra_context', 'temperature', 'max_tokens', 'tool_choice', 'active_tools'];

/** hookbox's guards on AI SDK calls, from `stack`. */
export class Guard {
  /** @param {import('./index.js').Stack} stack */
  constructor(stack) {
    this.stack = stack;
  }

  /**
   * One guarded run: one hookbox run, pinned to the stack's version now,
   * for one `generateText` / `streamText` call. `signal`, if given, aborts
   * the run's own signal too.
   */
  startRun({ runId, signal } = {}) {
    return new GuardedRun(this.stack.startRun(runId), signal);
  }
}

/** A hookbox run for one AI SDK call: its model, its tools, its signal. */
export class GuardedRun {
  #controller = new AbortController();
  #prompt;
  #turn = 0;

  constructor(run, signal) {
    /** The hookbox run. */
    this.run = run;
    this.#follow(signal);
  }

  /** Aborts the run's signal when `signal` (if any) aborts. */
  #follow(signal) {
    if (!signal) return;
    if (signal.aborted) this.#controller.abort(signal.reason);
    else signal.addEventListener('abort', () => this.#controller.abort(signal.reason), { once: true });
  }

  /** Pass as `abortSignal`: it aborts with the `Stopped` when a guard ends the run inside a tool. */
  get signal() {
    return this.#controller.signal;
  }

  /** `model` wrapped in hookbox's middleware. */
  model(model) {
    return wrapLanguageModel({ model, middleware: this.middleware() });
  }

  /** The language-model middleware alone, for `wrapLanguageModel`. */
  middleware() {
    return {
      specificationVersion: 'v4',
      transformParams: ({ params }) => this.#completionCall(params),
      wrapGenerate: async ({ doGenerate }) => {
        const result = await doGenerate();
        await this.#decide({
          event: 'model-turn-finished',
          turn: this.#turn,
          content: answerText(result.content),
          usage: usageOf(result.usage),
        });
        return result;
      },
      wrapStream: async ({ doStream }) => {
        const result = await doStream();
        return { ...result, stream: result.stream.pipeThrough(this.#guardStream()) };
      },
    };
  }

  /**
   * `tools` with each `execute` guarded. Throws `HookboxError` for a tool
   * hookbox cannot guard: one without `execute`, or provider-executed.
   */
  tools(tools) {
    return Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, this.#tool(name, t)]));
  }

  /**
   * The SDK's `generateText(options)`, guarded: `options.model` and
   * `options.tools` wrapped, the run's signal passed (an `abortSignal` of
   * the options aborts it too), and the run's stop thrown if a guard ended
   * it ([`check`]).
   */
  async generateText(options) {
    const { abortSignal, model, tools, ...rest } = options;
    this.#follow(abortSignal);
    const result = await generateText({
      ...rest,
      model: this.model(model),
      ...(tools ? { tools: this.tools(tools) } : {}),
      abortSignal: this.signal,
    });
    return this.check(result);
  }

  /**
   * `result` (of a `generateText` made with this run's model, tools and
   * signal), or the run's stop when a guard ended the run: a stop inside a
   * tool on the call's last step is a tool error to the SDK, which then
   * resolves as if the run went on.
   */
  check(result) {
    const stop = this.run.stopped;
    if (stop) throw stop;
    return result;
  }

  /** Ends the hookbox run, giving its instances back. */
  close() {
    this.run.close();
  }

  [Symbol.dispose ?? Symbol.for('nodejs.dispose')]() {
    this.close();
  }

  async #completionCall(params) {
    if (params.abortSignal !== this.signal) {
      throw new HookboxError(
        "a hookbox-guarded model was called without the guarded run's signal, so a guard's stop inside a tool " +
          'could not end the call: pass abortSignal: run.signal to generateText / streamText',
      );
    }
    const messages = messagesOf(params.prompt);
    this.#prompt ??= messages.find((m) => m.role === 'user')?.content ?? '';
    this.#turn += 1;
    const verdict = await this.run.completionCall(this.#prompt, messages, this.#turn);
    if (verdict.kind === 'continue') return params;
    verdict.requireOnly(FRAMEWORK, PATCHABLE);
    return patched(params, verdict);
  }

  #guardStream() {
    const texts = new Map();
    let content = '';
        const decide = (event) => this.#decide(event);
    const prompt = () => this.#prompt ?? '';
    const run = () => this.run;
    return new TransformStream({
      async transform(part, controller) {
        try {
                    if (part.type === 'text-delta') {
            const aggregated = (texts.get(part.id) ?? '') + part.delta;
            texts.set(part.id, aggregated);
            content += part.delta;
            // Only what no later delta can change is passed on: a guard
            // that redacts sees a secret whole before any of it is shown.
            const { show } = await decide({ event: 'text-delta', delta: part.delta, aggregated });
            if (show) controller.enqueue({ ...part, delta: show });
            return;
          } else if (part.type === 'text-end') {
            const rest = run().textDone();
            if (rest) controller.enqueue({ type: 'text-delta', id: part.id, delta: rest });
          } else if (part.type === 'tool-call') {
            content += `${content ? '\n' : ''}${part.toolName}(${part.input})`;
          } else if (part.type === 'finish') {
            await decide({
              event: 'stream-response-finish',
              prompt: prompt(),
              response: { content, usage: usageOf(part.usage) },
            });
          }
        } catch (stop) {
          controller.error(stop);
          return;
        }
        controller.enqueue(part);
      },
    });
  }

  /** Sends `event`; a terminate ends the run (thrown, and for every later step). */
  async #decide(event) {
    const decision = await this.run.send(event);
    if (decision.flow === 'terminate') throw this.run.stopped;
    return decision;
  }

  #tool(name, t) {
    if (typeof t?.execute !== 'function') {
      throw new HookboxError(
        `the tool \`${name}\` has no execute, so the caller runs it outside the SDK and hookbox cannot guard it; ` +
          'give it an execute, or guard the call where you run it (run.run.toolCall)',
      );
    }
    if (t.type === 'provider') {
      throw new HookboxError(
        `the tool \`${name}\` is provider-executed, so the SDK gives hookbox no hook before it runs; remove it or wrap it in a function tool`,
      );
    }
    const execute = t.execute;
    const run = this.run;
    const stop = (error) => {
      if (error instanceof Stopped) this.#controller.abort(error);
      throw error;
    };
    return {
      ...t,
      execute: async (input, options) => {
        if (this.#turn === 0) {
          // Half installed: the model call was never asked, so its checks
          // and patches never ran. Refused, and the whole call ended.
          const error = new HookboxError(
            `the guarded tool \`${name}\` ran under a model that is not the guarded run's, so the guards never saw the model call: ` +
              'pass model: run.model(yourModel) with tools: run.tools(...)',
          );
          this.#controller.abort(error);
          throw error;
        }
        const ids = { toolCallId: options?.toolCallId };
        const verdict = await run.toolCall(name, input ?? {}, ids).catch(stop);
        if (verdict.kind !== 'run') return verdict.reason ?? '';
        const output = await execute(verdict.args, options);
        const text = typeof output === 'string' ? output : JSON.stringify(output ?? null);
        const result = await run.toolResult(name, verdict.argsJson, text, ids).catch(stop);
        if (result.kind !== 'replace') return output;
        if (typeof output === 'string') return result.text;
        try {
          return JSON.parse(result.text);
        } catch {
          return stop(
            failed(
              result.by,
              `rewrote the result of \`${name}\`, which returns ${Array.isArray(output) ? 'an array' : typeof output}, to text that is not JSON; ` +
                `${FRAMEWORK} would hand the model a different shape`,
              run,
            ),
          );
        }
      },
    };
  }
}

function failed(plugin, detail, run) {
  const error = new FailedClosed(`hookbox stopped the run: plugin "${plugin}" failed closed (unsupported-flow): ${detail}`, {
    plugin,
    cause: 'unsupported-flow',
    detail,
  });
  try {
    run.end(error);
  } catch {
    // `end` throws the run's stop: the caller throws it.
  }
  return error;
}

/** The call's parameters with the patch applied (the fields PATCHABLE names). */
function patched(params, verdict) {
  const patch = verdict.patch;
  const out = { ...params };
  if ('preamble' in patch || 'extra_context' in patch) {
    const systems = params.prompt.filter((m) => m.role === 'system').map((m) => m.content);
    const system = verdict.system(systems.length ? systems.join('\n\n') : undefined);
    const rest = params.prompt.filter((m) => m.role !== 'system');
    out.prompt = system === undefined ? rest : [{ role: 'system', content: system }, ...rest];
  }
  if ('temperature' in patch) out.temperature = patch.temperature;
  if ('max_tokens' in patch) out.maxOutputTokens = patch.max_tokens;
  let allowed = patch.active_tools;
  if ('tool_choice' in patch) {
    const choice = patch.tool_choice;
    if (typeof choice === 'string') {
      out.toolChoice = { type: choice };
    } else if (choice.specific.length === 1) {
      out.toolChoice = { type: 'tool', toolName: choice.specific[0] };
    } else {
      out.toolChoice = { type: 'required' };
      allowed = allowed ? allowed.filter((n) => choice.specific.includes(n)) : choice.specific;
    }
  }
  if (allowed) out.tools = (params.tools ?? []).filter((t) => allowed.includes(t.name));
  return out;
}

/** A V4 prompt as hookbox's `{role, content}` messages. */
export function messagesOf(prompt) {
  return prompt.map((message) => ({
    role: message.role,
    content: typeof message.content === 'string' ? message.content : message.content.map(partText).filter(Boolean).join('\n'),
  }));
}

function partText(part) {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return part.text;
    case 'tool-call':
      return `${part.toolName}(${typeof part.input === 'string' ? part.input : JSON.stringify(part.input)})`;
    case 'tool-result':
      return outputText(part.output);
    case 'file':
      return `[file ${part.mediaType ?? ''}]`.trim();
    default:
      return '';
  }
}

function outputText(output) {
  if (!output) return '';
  if (typeof output.value === 'string') return output.value;
  if (output.type === 'content') return output.value.map((p) => p.text ?? '').join('\n');
  return JSON.stringify(output.value ?? null);
}

/** The answer's text, as rig's adapter gives it: text parts only, tool calls have their own event. */
function answerText(content) {
  return content
    .filter((part) => part.type === 'text')
    .map((part) => part.text)
    .join('');
}

function usageOf(usage) {
  const input = usage?.inputTokens?.total;
  const output = usage?.outputTokens?.total;
  if (input === undefined && output === undefined) return undefined;
  return { input_tokens: input ?? 0, output_tokens: output ?? 0 };
}
