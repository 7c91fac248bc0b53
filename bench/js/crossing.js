// A JavaScript guard that does nothing but cross the boundary: what a call
// into StarlingMonkey costs apart from a guard's own work (BENCHMARKS.md,
// "Guards in other languages"). A tool call is lifted and answered
// `continue`; a tool result is lifted and handed straight back as a
// rewrite, so its string is lowered again.
export function subscriptions() {
  return ['tool-call', 'tool-result'];
}

export function onEvent(_ctx, event) {
  if (event.tag === 'tool-result') {
    return { tag: 'rewrite-result', val: event.val.result };
  }
  return { tag: 'continue' };
}
