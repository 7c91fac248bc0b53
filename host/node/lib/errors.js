// The errors hookbox throws. Every one is a `HookboxError`.

/** Anything hookbox throws. */
export class HookboxError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A stack could not be loaded: a plugin that is not a hookbox guard, a
 * directory that cannot be read, a manifest that does not parse. The
 * message names the plugin and the phase that failed.
 */
export class LoadError extends HookboxError {}

/**
 * Input that is not an event in hookbox's JSON form
 * (docs/contract.md#json-forms), or
 * that cannot be written as JSON. Nothing was asked.
 */
export class InvalidEvent extends HookboxError {}

/**
 * The run is over: a guard ended it, and every later step of the run
 * throws the same. `plugin` names the guard (`hookbox` for the host).
 */
export class Stopped extends HookboxError {
  constructor(message, { plugin }) {
    super(message);
    this.plugin = plugin;
  }
}

/**
 * A guard misbehaved (it trapped, ran out of time or memory, answered
 * what the event cannot honour ...) or the host could not run it, so the
 * run failed closed. `cause` is one of trap, deadline, memory, stack,
 * oversized, unsupported-flow, invalid-json, load, limit; `detail` says
 * what happened.
 */
export class FailedClosed extends Stopped {
  constructor(message, { plugin, cause, detail }) {
    super(message, { plugin });
    this.cause = cause;
    this.detail = detail;
  }
}

/** A guard answered `terminate`: `reason` is its reason, `event` the event. */
export class Terminated extends Stopped {
  constructor(message, { plugin, event, reason }) {
    super(message, { plugin });
    this.event = event;
    this.reason = reason;
  }
}

/** The error a native `Stop` (how a run ended) is thrown as. */
export function stopped(stop) {
  return stop.kind === 'terminated'
    ? new Terminated(stop.message, stop)
    : new FailedClosed(stop.message, stop);
}

/**
 * The native side's errors in their types: it prefixes what it throws
 * with the type's name (`LoadError: ...`, `InvalidEvent: ...`).
 */
export function typed(error) {
  const message = error instanceof Error ? error.message : String(error);
  for (const Type of [LoadError, InvalidEvent]) {
    const prefix = `${Type.name}: `;
    if (message.startsWith(prefix)) return new Type(message.slice(prefix.length));
  }
  return error;
}
