// Types of `hookbox/openai-agents` (lib/openai-agents.js): hookbox's guards
// on the OpenAI Agents SDK for JavaScript (`@openai/agents` 0.20).

import type {
  Agent,
  InputGuardrail,
  OutputGuardrail,
  RunConfig,
  RunResult,
  StreamedRunResult,
  ToolInputGuardrailDefinition,
  ToolOutputGuardrailDefinition,
} from '@openai/agents';

import type { HookboxError, Message, Run, Stack } from './index.js';

export interface GuardOptions {
  /**
   * `false`: a call whose arguments a guard rewrote is refused (the model
   * reads why) instead of run with them. Default `true`.
   */
  applyRewrites?: boolean;
  /** A stack holding plugins this guard never asks: `'refuse'` it (the default) or `'warn'`. */
  unheard?: 'refuse' | 'warn';
}

/** hookbox's guards on OpenAI Agents SDK runs, from `stack`. */
export declare class Guard {
  constructor(stack: Stack, options?: GuardOptions);
  readonly stack: Stack;
  readonly applyRewrites: boolean;
  readonly inputGuardrail: InputGuardrail;
  readonly outputGuardrail: OutputGuardrail;
  readonly toolInputGuardrail: ToolInputGuardrailDefinition;
  readonly toolOutputGuardrail: ToolOutputGuardrailDefinition;
  /**
   * Runs `fn` (the SDK runs it makes: normally one) as one hookbox run,
   * given to `fn`; closes the run when what `fn` returns settles (a
   * streamed result: when it completes).
   */
  session<T>(fn: (run: Run) => T | Promise<T>, options?: { runId?: string }): Promise<T>;
  /**
   * A copy of `agent` with hookbox's guardrails first on every tool, its
   * input and its output, and on every agent it can hand off to. Throws
   * `HookboxError` for a hosted, computer, shell or apply-patch tool, an
   * MCP server, and an agent used as a tool that was not protected itself.
   */
  protect<A extends Agent<any, any>>(agent: A): A;
  /** `config` (or a new one) with hookbox's model input filter first. */
  runConfig<C extends Partial<RunConfig>>(config?: C): C & Pick<RunConfig, 'callModelInputFilter'>;
  /** `new Runner(runConfig).run(protect(agent), input, options)` as one hookbox run. */
  run(agent: Agent<any, any>, input: string | unknown[], options?: RunOptions & { stream?: false }): Promise<RunResult<any, any>>;
  run(agent: Agent<any, any>, input: string | unknown[], options: RunOptions & { stream: true }): Promise<StreamedRunResult<any, any>>;
}

export interface RunOptions {
  /** The Runner's configuration. */
  runConfig?: Partial<RunConfig>;
  /** The hookbox run's id. */
  runId?: string;
  [option: string]: unknown;
}

/**
 * hookbox's error inside what an SDK run rejected with: the error itself,
 * a tripwire's `outputInfo`, or either inside a `ToolCallError`;
 * `undefined` when the run did not end by hookbox.
 */
export declare function stopOf(error: unknown): HookboxError | undefined;

/** The Responses input items of a model call as hookbox's messages, its instructions first. */
export declare function messagesOf(items: unknown, instructions?: string): Message[];
