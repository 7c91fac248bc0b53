// Types of `hookbox/ai` (lib/ai.js): hookbox's guards on the Vercel AI SDK (`ai` 7).

import type { LanguageModel, LanguageModelMiddleware, Tool } from 'ai';

import type { Message, Run, Stack } from './index.js';

/** hookbox's guards on AI SDK calls, from `stack`. */
export declare class Guard {
  constructor(stack: Stack);
  readonly stack: Stack;
  /**
   * One guarded run: one hookbox run, pinned to the stack's version now,
   * for one `generateText` / `streamText` call. `signal`, if given, aborts
   * the run's own signal too.
   */
  startRun(options?: { runId?: string; signal?: AbortSignal }): GuardedRun;
}

/** A hookbox run for one AI SDK call: its model, its tools, its signal. */
export declare class GuardedRun implements Disposable {
  /** The hookbox run. */
  readonly run: Run;
  /** Pass as `abortSignal`: it aborts with the `Stopped` when a guard ends the run inside a tool. */
  readonly signal: AbortSignal;
  /** `model` wrapped in hookbox's middleware (`wrapLanguageModel`). */
  model<M extends LanguageModel>(model: M): M;
  /** The language-model middleware alone, for `wrapLanguageModel`. */
  middleware(): LanguageModelMiddleware;
  /**
   * `tools` with each `execute` guarded. Throws `HookboxError` for a tool
   * hookbox cannot guard: one without `execute`, or provider-executed.
   */
  tools<T extends Record<string, Tool>>(tools: T): T;
  /**
   * The SDK's `generateText(options)`, guarded: the model and tools
   * wrapped, the run's signal passed, and the run's stop thrown if a guard
   * ended it.
   */
  generateText<T extends Parameters<typeof import('ai').generateText>[0]>(options: T): ReturnType<typeof import('ai').generateText>;
  /** `result`, or the run's stop when a guard ended the run (a stop on the last step is a tool error to the SDK). */
  check<R>(result: R): R;
  /** Ends the hookbox run, giving its instances back. */
  close(): void;
  [Symbol.dispose](): void;
}

/** An AI SDK prompt (V4 messages) as hookbox's messages. */
export declare function messagesOf(prompt: ReadonlyArray<{ role: string; content: unknown }>): Message[];
