// hookbox for Node: sandboxed, fail-closed WebAssembly guards in-process.
//
//   import { Stack } from 'hookbox';
//   const stack = Stack.fromDirectory('plugins');   // hot-reloaded
//   const run = stack.startRun();                   // pinned to this version
//   const verdict = await run.toolCall('shell', { cmd: 'rm -rf /' });
//   if (verdict.kind !== 'run') { /* do not run it */ }
//   run.close();        // or `using run = ...` (TypeScript, Node 24)
//
// Guards are WebAssembly components (any language), each in its own
// sandbox with no capability it was not given and no state shared between
// runs. A guard that traps, hangs, eats memory or answers what the event
// cannot honour ends the run: the step rejects with `FailedClosed` naming
// the plugin and the cause, and so does every later step of the run.
//
// Every guard call runs on libuv's thread pool (the promise methods), so a
// guest running to its deadline never holds up the event loop; each has a
// `...Sync` twin on the calling thread. The rules are the core's
// (native/, the crate host/node): this file only converts values and
// throws JavaScript's errors. Framework guards: `hookbox/ai` (the Vercel AI
// SDK), `hookbox/openai-agents`.

import { createRequire } from 'node:module';

import { FailedClosed, HookboxError, InvalidEvent, LoadError, Stopped, Terminated, stopped, typed } from './errors.js';

const native = createRequire(import.meta.url)('../native/index.cjs');

export { FailedClosed, HookboxError, InvalidEvent, LoadError, Stopped, Terminated };

/** The name hookbox's own decisions carry (a closed run, a refused call). */
export const HOST = native.HOST;

/**
 * `value` as JSON text: text as it is, anything else stringified. What
 * JSON cannot say (NaN, Infinity, a BigInt, a cycle, undefined) is an
 * `InvalidEvent`, never a silent `null`.
 */
export function json(value, what = 'the value') {
  if (typeof value === 'string') return value;
  let text;
  try {
    text = JSON.stringify(value, (key, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) {
        throw new InvalidEvent(`${what} holds ${v} at \`${key}\`, which JSON cannot represent`);
      }
      return v;
    });
  } catch (error) {
    if (error instanceof InvalidEvent) throw error;
    throw new InvalidEvent(`${what} cannot be written as JSON: ${error.message}`);
  }
  if (text === undefined) throw new InvalidEvent(`${what} cannot be written as JSON (it is ${typeof value})`);
  return text;
}

async function native_(call) {
  try {
    return await call();
  } catch (error) {
    throw typed(error);
  }
}

function nativeSync(call) {
  try {
    return call();
  } catch (error) {
    throw typed(error);
  }
}

/** Guard plugins that runs start on: a watched directory, or files. */
export class Stack {
  #native;

  /** @internal */
  constructor(nativeStack) {
    if (!(nativeStack instanceof native.Stack)) {
      throw new HookboxError('make a Stack with Stack.fromDirectory or Stack.fromFiles');
    }
    this.#native = nativeStack;
  }

  /**
   * The plugins of `directory` (as its `hookbox.toml` lists them, or every
   * `*.wasm` in it). Watched unless `watch: false`: a change loads in the
   * background and new runs take it, while runs already started keep the
   * version they started on. Throws `LoadError` when the directory cannot
   * be read or watched; a plugin that does not load is listed in
   * `plugins` with its error (a required one fails every run closed).
   */
  static fromDirectory(directory, { watch = true, debounceMs = 200, maxInstances } = {}) {
    return new Stack(nativeSync(() => native.Stack.fromDirectory(String(directory), { watch, debounceMs, maxInstances })));
  }

  /**
   * The plugins at `paths`, asked in that order, each named for its file
   * stem; `config` maps a name to that plugin's configuration. Throws
   * `LoadError` naming the plugin and the phase when one does not load.
   */
  static fromFiles(paths, { config = {}, maxInstances } = {}) {
    const settings = Object.fromEntries(
      Object.entries(config).map(([name, values]) => [
        name,
        Object.fromEntries(Object.entries(values).map(([k, v]) => [k, String(v)])),
      ]),
    );
    return new Stack(nativeSync(() => native.Stack.fromFiles([...paths].map(String), { config: settings, maxInstances })));
  }

  /**
   * A run (one agent session or task) on the newest version of the stack,
   * which it keeps to its end, with guest instances of its own.
   */
  startRun(runId) {
    return new Run(this.#native.startRun(runId));
  }

  /** The version new runs start on: 1, plus one per reload. */
  get generation() {
    return this.#native.generation;
  }

  /** How many plugins new runs get. */
  get size() {
    return this.#native.size;
  }

  /** Each plugin and how it loaded. */
  get plugins() {
    return this.#native.plugins;
  }

  /** Why a watched directory's latest change did not load, if it did not. */
  get directoryError() {
    return this.#native.directoryError ?? undefined;
  }

  /** Reloads a watched directory now; resolves to the new generation. */
  reload() {
    return this.#native.reload();
  }

  /**
   * The plugins new runs get that subscribe to none of the events named
   * in `sent` (`'tool-call'` ...): guards a caller sending only those
   * would never ask.
   */
  unheard(sent) {
    return nativeSync(() => this.#native.unheard([...sent]));
  }
}

/**
 * One agent run's guards. Its events are decided one at a time, in
 * order; close it (or `using run = ...`) to give its instances back.
 */
export class Run {
  #native;

  /** @internal */
  constructor(nativeRun) {
    this.#native = nativeRun;
  }

  /**
   * Asks the guards about `event` (an object in hookbox's JSON form, or
   * its JSON text); resolves to their decision. Rejects with
   * `FailedClosed` when the run failed closed (now or earlier),
   * `InvalidEvent` for input that is no event.
   */
  async send(event) {
    const text = this.#event(event);
    return this.#decision(await native_(() => this.#native.send(text)));
  }

    /** `send` on the calling thread. */
  sendSync(event) {
    const text = this.#event(event);
    return this.#decision(nativeSync(() => this.#native.sendSync(text)));
  }

  /**
   * The streamed text ended: the rest of it, as the guards last decided
   * it. A text-delta's decision shows only what no later delta can change
   * (`show`); this is what was held back.
   */
  textDone() {
    return nativeSync(() => this.#native.textDone());
  }

  /**
   * Before a tool runs: `kind` is `run` (with `args`, the guards' rewrite
   * or the call's own), `skip` (answer `reason` instead of running it) or
   * `refuse` (do not run it; the run goes on). A rewrite is never an
   * approval: the framework's own permissions still decide. Rejects with
   * `Stopped` when the run ends.
   */
  async toolCall(toolName, args, { toolCallId } = {}) {
    const text = this.#args(args);
    return this.#call(await this.#native.toolCall(toolName, text, toolCallId));
  }

  /** `toolCall` on the calling thread. */
  toolCallSync(toolName, args, { toolCallId } = {}) {
    const text = this.#args(args);
    return this.#call(this.#native.toolCallSync(toolName, text, toolCallId));
  }

  /**
   * After a tool ran with `args`: `kind` is `keep`, or `replace` with
   * `text`, what the model reads instead. Rejects with `Stopped` when the
   * run ends.
   */
  async toolResult(toolName, args, result, { toolCallId } = {}) {
    const text = this.#args(args);
    return this.#result(await this.#native.toolResult(toolName, text, String(result), toolCallId));
  }

  /** `toolResult` on the calling thread. */
  toolResultSync(toolName, args, result, { toolCallId } = {}) {
    const text = this.#args(args);
    return this.#result(this.#native.toolResultSync(toolName, text, String(result), toolCallId));
  }

  /**
   * Before a model call: `kind` is `continue`, or `patch`, this call only
   * (`system()` gives the system text it makes; `requireOnly()` throws
   * for fields a framework cannot apply). `messages` are `{role,
   * content}`; `turn` counts from 1. Rejects with `Stopped` when the run
   * ends.
   */
  async completionCall(prompt, messages, turn) {
    const text = this.#messages(messages);
    return this.#request(await native_(() => this.#native.completionCall(String(prompt), text, turn)));
  }

  /** `completionCall` on the calling thread. */
  completionCallSync(prompt, messages, turn) {
    const text = this.#messages(messages);
    return this.#request(nativeSync(() => this.#native.completionCallSync(String(prompt), text, turn)));
  }

  /**
   * Ends the run with `error` (a `FailedClosed`: its `plugin`, `cause`
   * and `detail`): what an adapter calls when a framework cannot honour a
   * decision. Every later step throws the same stop, as after a guard's
   * own; a run already over keeps its end. Throws the run's stop.
   */
  end(error) {
    const stop = this.#native.end(error.plugin ?? undefined, error.cause ?? 'unsupported-flow', error.detail ?? error.message);
    this.close();
    throw stopped(stop);
  }

  /** How the run ended (the `Stopped` every later step throws), if it has. */
  get stopped() {
    const stop = this.#native.stop;
    return stop ? stopped(stop) : undefined;
  }

  /**
   * Ends the run now, giving its plugin instances back. A run that had
   * ended throws its end again on every later step; one that had not
   * throws `FailedClosed` naming the host.
   */
  close() {
    this.#native.close();
  }

  [Symbol.dispose ?? Symbol.for('nodejs.dispose')]() {
    this.close();
  }

  /** The run's id. */
  get runId() {
    return this.#native.runId;
  }

  /** The version of the stack the run is pinned to. */
  get generation() {
    return this.#native.generation;
  }

  /** Whether the run has ended (every later step throws its end). */
  get isOver() {
    return this.#native.isOver;
  }

  /** @internal For bench/node: `n` tool calls decided by Rust's own loop; seconds. */
  timeToolCalls(toolName, args, n) {
    return this.#native.timeToolCalls(toolName, this.#args(args), n);
  }

  #event(event) {
    return json(event, 'the event');
  }

  #args(args) {
    return json(args ?? {}, 'the arguments');
  }

  #messages(messages) {
    return json(messages ?? [], 'the messages');
  }

  #decision(text) {
    const decision = JSON.parse(text);
    const failed = decision.fail_closed;
    if (failed) throw new FailedClosed(decision.reason, failed);
    return decision;
  }

  #call(verdict) {
    if (verdict.stop) throw stopped(verdict.stop);
    return new ToolCallVerdict(verdict);
  }

  #result(verdict) {
    if (verdict.stop) throw stopped(verdict.stop);
    return Object.freeze({ kind: verdict.kind, text: verdict.text ?? undefined, by: verdict.by ?? undefined });
  }

  #request(verdict) {
    if (verdict.stop) throw stopped(verdict.stop);
    return new ModelCall(verdict, this);
  }
}

/**
 * A tool call's answer. `args` is parsed from `argsJson` when first read:
 * a caller that only looks at `kind` does not pay for parsing them.
 */
class ToolCallVerdict {
  #argsJson;
  #args;

  constructor(verdict) {
    this.kind = verdict.kind;
    this.#argsJson = verdict.args ?? undefined;
    this.reason = verdict.reason ?? undefined;
    this.by = verdict.by ?? undefined;
    this.rewritten = verdict.rewritten;
    Object.freeze(this);
  }

  /** The arguments to run the tool with (canonical JSON text). */
  get argsJson() {
    return this.#argsJson;
  }

  /** The arguments to run the tool with, parsed. */
  get args() {
    if (this.#args === undefined && this.#argsJson !== undefined) this.#args = JSON.parse(this.#argsJson);
    return this.#args;
  }
}

/** What to change of the model call about to be made, for this call only. */
export class ModelCall {
  #native;
  #run;

  /** @internal */
  constructor(nativeCall, run) {
    this.#native = nativeCall;
    this.#run = run;
    /** `continue` or `patch`. */
    this.kind = nativeCall.kind;
    /** The plugin whose patch it is (the first, when several merged). */
    this.by = nativeCall.by ?? undefined;
    /**
     * The fields the patch sets, by their JSON names: `preamble`,
     * `temperature`, `max_tokens`, `tool_choice`, `active_tools`,
     * `additional_params` (an object), `extra_context`, `history`.
     */
    this.patch = JSON.parse(nativeCall.patch);
    Object.freeze(this);
  }

  /**
   * The system text the model reads this call, given the one it would
   * have read: the patch's preamble in its place if it sets one, then each
   * extra-context document as a `<document id="...">` block.
   */
  system(system) {
    return this.#native.system(system ?? undefined) ?? undefined;
  }

  /**
   * Throws `FailedClosed` (the patch's plugin, cause `unsupported-flow`)
   * if the patch sets a field not in `supported`, which `framework`
   * cannot apply, rather than drop it; the run ends with it.
   */
  requireOnly(framework, supported) {
    const stop = this.#native.requireOnly(framework, supported);
    if (stop) this.#run.end(stopped(stop));
  }
}
