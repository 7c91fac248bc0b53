// Types of `hookbox` (lib/index.js).

export { FailedClosed, HookboxError, InvalidEvent, LoadError, Stopped, Terminated } from './errors.js';
import type { Stopped } from './errors.js';

/** The name hookbox's own decisions carry (a closed run, a refused call). */
export declare const HOST: string;

/** JSON text, or a value written as JSON (non-finite numbers refused). */
export declare function json(value: unknown, what?: string): string;

/** One message of a model call's history. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** A tool call's arguments: an object, or JSON object text. */
export type Args = Record<string, unknown> | string;

/** The events a run's guards are asked about, in hookbox's JSON form (docs/contract.md#json-forms). */
export type Event =
  | { event: 'completion-call'; prompt: string; history?: Message[]; turn?: number }
  | { event: 'model-turn-finished'; turn: number; content: string; usage?: { input_tokens: number; output_tokens: number } }
  | { event: 'tool-call'; tool_name: string; args: Args; tool_call_id?: string; internal_call_id?: string }
  | { event: 'tool-result'; tool_name: string; result: string; args?: Args; tool_call_id?: string; internal_call_id?: string }
  | { event: 'invalid-tool-call'; tool_name: string; args: string; available_tools: string[]; allowed_tools: string[]; tool_call_id?: string };

/** A decision, in hookbox's JSON form: the flow, its fields, the plugin that made it. */
export interface Decision {
  flow: 'continue' | 'terminate' | 'skip' | 'rewrite-args' | 'rewrite-result' | 'patch-request' | 'fail' | 'retry' | 'repair';
  reason?: string;
  plugin?: string;
    rewritten?: unknown;
  shadow?: unknown;
  /** For a text-delta or a stream-response-finish: the streamed text to show now (docs/contract.md#streamed-text). */
  show?: string;
  [field: string]: unknown;
}

export interface ToolCallVerdict {
  /** `run`: run the tool with `args`. `skip`: answer `reason` instead. `refuse`: do not run it. */
  readonly kind: 'run' | 'skip' | 'refuse';
  readonly args?: Record<string, unknown>;
  /** `args` as the JSON text the guards decided on. */
  readonly argsJson?: string;
  readonly reason?: string;
  /** The plugin that rewrote, skipped or refused the call. */
  readonly by?: string;
  /** Whether a guard rewrote the arguments. */
  readonly rewritten: boolean;
}

export interface ToolResultVerdict {
  /** `keep` the result, or `replace` it with `text`. */
  readonly kind: 'keep' | 'replace';
  readonly text?: string;
  readonly by?: string;
}

/** The fields a request patch sets. */
export interface RequestPatch {
  preamble?: string;
  temperature?: number;
  max_tokens?: number;
  tool_choice?: 'auto' | 'none' | 'required' | { specific: string[] };
  active_tools?: string[];
  additional_params?: Record<string, unknown>;
  extra_context?: { id: string; text: string }[];
  history?: Message[];
}

export declare class ModelCall {
  private constructor();
  readonly kind: 'continue' | 'patch';
  readonly by?: string;
  readonly patch: RequestPatch;
  /** The system text the model reads this call, given the one it would have read. */
  system(system?: string | null): string | undefined;
  /** Throws `FailedClosed` (unsupported-flow) and ends the run if the patch sets a field not in `supported`. */
  requireOnly(framework: string, supported: string[]): void;
}

export interface PluginInfo {
  name: string;
  file?: string | null;
  required?: boolean | null;
  mode?: 'enforce' | 'shadow' | null;
  loaded: boolean;
  error?: string | null;
}

export declare class Stack {
  private constructor();
  static fromDirectory(directory: string, options?: { watch?: boolean; debounceMs?: number; maxInstances?: number }): Stack;
  static fromFiles(paths: Iterable<string>, options?: { config?: Record<string, Record<string, string>>; maxInstances?: number }): Stack;
  startRun(runId?: string): Run;
  readonly generation: number;
  readonly size: number;
  readonly plugins: PluginInfo[];
  readonly directoryError: string | undefined;
  reload(): Promise<number>;
  /** The plugins new runs get that subscribe to none of the events named in `sent`. */
  unheard(sent: Iterable<string>): string[];
}

export declare class Run {
  private constructor();
  send(event: Event | string): Promise<Decision>;
  sendSync(event: Event | string): Decision;
  toolCall(toolName: string, args: Args, options?: { toolCallId?: string }): Promise<ToolCallVerdict>;
  toolCallSync(toolName: string, args: Args, options?: { toolCallId?: string }): ToolCallVerdict;
  toolResult(toolName: string, args: Args, result: string, options?: { toolCallId?: string }): Promise<ToolResultVerdict>;
  toolResultSync(toolName: string, args: Args, result: string, options?: { toolCallId?: string }): ToolResultVerdict;
  completionCall(prompt: string, messages: Message[], turn: number): Promise<ModelCall>;
    completionCallSync(prompt: string, messages: Message[], turn: number): ModelCall;
  /** The streamed text ended: the rest of it the guards held back, as they last decided it. */
  textDone(): string;
  /** Ends the run with `error`, so every later step throws it too; throws it. */
  end(error: Stopped): never;
  close(): void;
  [Symbol.dispose](): void;
  readonly runId: string;
  readonly generation: number;
  readonly isOver: boolean;
  /** How the run ended (the `Stopped` every later step throws), if it has. */
  readonly stopped: Stopped | undefined;
}
