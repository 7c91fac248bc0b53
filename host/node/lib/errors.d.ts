// Types of the errors hookbox throws (lib/errors.js).

/** Anything hookbox throws. */
export declare class HookboxError extends Error {}

/** A stack could not be loaded; the message names the plugin and the phase. */
export declare class LoadError extends HookboxError {}

/** Input that is not an event in hookbox's JSON form, or not JSON at all. */
export declare class InvalidEvent extends HookboxError {}

/** The run is over; every later step throws the same. */
export declare class Stopped extends HookboxError {
  /** The guard that ended the run (`hookbox` for the host). */
  readonly plugin: string;
}

/** A guard misbehaved or the host could not run it: the run failed closed. */
export declare class FailedClosed extends Stopped {
  /** trap, deadline, memory, stack, oversized, unsupported-flow, invalid-json, load or limit. */
  readonly cause: string;
  readonly detail: string;
}

/** A guard answered `terminate`. */
export declare class Terminated extends Stopped {
  readonly event: string;
  readonly reason: string;
}
