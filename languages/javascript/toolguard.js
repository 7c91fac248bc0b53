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

// Candidate assignment lines: the grammar below, at the start of the text or
// after a "\n" only. A superset (a regular expression can go back where the
// grammar does not); redactAssignment decides.
const ASSIGNMENT_LINE = /(?<![^\n])[ \t]*(?:export[ \t]+)?["']?[A-Za-z0-9_-]+["']?[ \t]*[=:]/g;

// StarlingMonkey interprets JavaScript (no JIT): a loop over every line
// costs ~20 µs a line. So native code finds the candidates (one regular
// expression over the text, indexOf for each prefix) and JavaScript only
// looks at those.
function redact(text) {
  const prefixes = setting('secret_prefixes');
  const names = setting('secret_names').map(upper);
  const edits = []; // [start, end, replacement]

  for (const match of text.matchAll(ASSIGNMENT_LINE)) {
    const start = match.index;
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline + 1;
    const redacted = redactAssignment(text.slice(start, end), names);
    if (redacted !== null) edits.push([start, end, redacted]);
  }
  for (const prefix of prefixes) {
    for (let at = text.indexOf(prefix); at >= 0; at = text.indexOf(prefix, at + 1)) {
      if (at > 0 && isNameChar(text.charCodeAt(at - 1))) continue; // not a token's start
      let end = at;
      while (isNameChar(text.charCodeAt(end))) end++;
      if (end - at >= prefix.length + 8) edits.push([at, end, '[REDACTED]']);
    }
  }
  if (edits.length === 0) return text;

  // Apply in order; a token inside a redacted assignment line, or one two
  // prefixes both found, is already covered.
  edits.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let done = 0;
  for (const [start, end, replacement] of edits) {
    if (start < done) continue;
    out += text.slice(done, start) + replacement;
    done = end;
  }
  return out + text.slice(done);
}

const isBlank = (c) => c === 32 || c === 9; // ' ' '\t'
const isQuote = (c) => c === 34 || c === 39; // '"' "'"
const isNameChar = (c) =>
  (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95 || c === 45;

// WS* ("export" WS+)? Q? NAME Q? WS* SEP, read left to right: `export`
// followed by a blank is always the prefix, never the NAME. A scan of the
// line's first characters (a regular expression per line costs ~25 µs in
// StarlingMonkey, which interprets them).
function redactAssignment(line, names) {
  let i = 0;
  while (isBlank(line.charCodeAt(i))) i++;
  if (line.startsWith('export', i) && isBlank(line.charCodeAt(i + 6))) {
    i += 6;
    while (isBlank(line.charCodeAt(i))) i++;
  }
  if (isQuote(line.charCodeAt(i))) i++;
  const start = i;
  while (isNameChar(line.charCodeAt(i))) i++;
  if (i === start) return null;
  const nameEnd = i;
  if (isQuote(line.charCodeAt(i))) i++;
  while (isBlank(line.charCodeAt(i))) i++;
  const sep = line.charCodeAt(i);
  if (sep !== 61 && sep !== 58) return null; // '=' ':'
  const rest = line.slice(i + 1).replace(/[ \t\r\n]/g, '');
  const name = upper(line.slice(start, nameEnd));
  if (rest === '' || !names.some((n) => name.endsWith(n))) return null;
  return `${line.slice(0, i + 1)}[REDACTED]${line.endsWith('\n') ? '\n' : ''}`;
}
