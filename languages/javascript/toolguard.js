// toolguard in JavaScript: denies tool calls by name and argument pattern,
// and redacts secrets from tool results. The behaviour is specified in
// languages/README.md; languages/conformance/ checks this build against it.
import log from 'log';
import * as config from 'hookbox:hook/config@0.1.0';
import * as scratchpad from 'hookbox:hook/scratchpad@0.1.0';

const DEFAULTS = {
  deny: '',
  deny_args: '*rm -rf*,*.ssh/*',
  secret_prefixes: 'sk-,ghp_,AKIA,xoxb-',
  secret_names: 'PASSWORD,SECRET,TOKEN,API_KEY',
};

export function subscriptions() {
  return ['tool-call', 'tool-result'];
}

export function onEvent(_ctx, event) {
  switch (event.tag) {
    case 'tool-call':
      return checkCall(event.val);
    case 'tool-result': {
      const redacted = redact(event.val.result);
      return redacted === event.val.result
        ? { tag: 'continue' }
        : { tag: 'rewrite-result', val: redacted };
    }
    default:
      return { tag: 'continue' };
  }
}

function checkCall({ toolName: name, args }) {
  const maxSetting = config.get('max_denials');
  const max = maxSetting === undefined ? undefined : parseMax(maxSetting);
  if (max === null) {
    return terminate(`toolguard: \`max_denials\` must be a positive integer, got \`${maxSetting}\``);
  }
  const reason = denial(name, args);
  if (reason === undefined) return { tag: 'continue' };
  const count = Number(scratchpad.get('denials') ?? '0') + 1;
  scratchpad.set('denials', String(count));
  log('warn', reason);
  if (max !== undefined && count >= max) {
    return terminate(`toolguard: ${count} tool calls denied in this run (max_denials is ${max})`);
  }
  return { tag: 'skip', val: reason };
}

function denial(name, args) {
  if (setting('deny').some((p) => matches(p, name))) {
    return `toolguard: \`${name}\` is denied by policy`;
  }
  const pattern = setting('deny_args').find((p) => matches(p, args));
  if (pattern !== undefined) {
    return `toolguard: the arguments of \`${name}\` match \`${pattern}\``;
  }
  return undefined;
}

const terminate = (reason) => ({ tag: 'terminate', val: reason });

// 1 to 6 ASCII digits, at least 1; null when invalid.
function parseMax(value) {
  if (!/^[0-9]{1,6}$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 ? n : null;
}

// A comma-separated setting, or its default when unset.
function setting(key) {
  const value = config.get(key) ?? DEFAULTS[key];
  return value
    .split(',')
    .map((item) => item.replace(/^[ \t]+|[ \t]+$/g, ''))
    .filter((item) => item !== '');
}

// Whole-text match where `*` is any run of characters.
function matches(pattern, text) {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === text;
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (!text.startsWith(first)) return false;
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found < 0) return false;
    at = found + part.length;
  }
  return text.length - at >= last.length && text.endsWith(last);
}

const upper = (s) => s.replace(/[a-z]/g, (c) => c.toUpperCase()).replaceAll('-', '_');

function redact(text) {
  const prefixes = setting('secret_prefixes');
  const names = setting('secret_names').map(upper);
  // Most text has no secret: skip it line by line with cheap native string
  // searches before any regular expression runs (StarlingMonkey has no JIT).
  const mayAssign = text.includes('=') || text.includes(':');
  if (!mayAssign && !prefixes.some((p) => text.includes(p))) return text;
  let out = '';
  for (let start = 0; start < text.length; ) {
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline + 1;
    const line = text.slice(start, end);
    out += redactAssignment(line, names) ?? redactTokens(line, prefixes);
    start = end;
  }
  return out;
}

// WS* ("export" WS+)? Q? NAME Q? WS* SEP, read left to right: `export`
// followed by a blank is always the prefix, never the NAME.
const EXPORTED = /^[ \t]*export[ \t]+["']?([A-Za-z0-9_-]+)["']?[ \t]*[=:]/;
const PLAIN = /^[ \t]*["']?([A-Za-z0-9_-]+)["']?[ \t]*[=:]/;

function redactAssignment(line, names) {
  if (!line.includes('=') && !line.includes(':')) return null;
  const match = (/^[ \t]*export[ \t]/.test(line) ? EXPORTED : PLAIN).exec(line);
  if (match === null) return null;
  const rest = line.slice(match[0].length).replace(/[ \t\r\n]/g, '');
  const name = upper(match[1]);
  if (rest === '' || !names.some((n) => name.endsWith(n))) return null;
  return `${match[0]}[REDACTED]${line.endsWith('\n') ? '\n' : ''}`;
}

function redactTokens(line, prefixes) {
  if (!prefixes.some((p) => line.includes(p))) return line;
  return line.replace(/[A-Za-z0-9_-]+/g, (token) =>
    prefixes.some((p) => token.startsWith(p) && token.length >= p.length + 8) ? '[REDACTED]' : token,
  );
}
