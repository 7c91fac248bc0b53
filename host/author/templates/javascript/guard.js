// {{name}}: a hookbox guard. It skips calls to the tools its `deny`
// setting names (comma-separated; default `shell`) and lets every other
// call through. `hookbox test` runs the cases in `cases/`.
import log from 'log';
import * as config from 'hookbox:hook/config@0.1.0';

export function subscriptions() {
  return ['tool-call'];
}

export function onEvent(_ctx, event) {
  if (event.tag !== 'tool-call') return { tag: 'continue' };
  const tool = event.val.toolName;
  const deny = config.get('deny') ?? 'shell';
  if (deny.split(',').some((name) => name.trim() === tool)) {
    log('warn', `denied a call to \`${tool}\``);
    return { tag: 'skip', val: `\`${tool}\` is denied by policy` };
  }
  return { tag: 'continue' };
}
