// toolguard in C: denies tool calls by name and argument pattern, and
// redacts secrets from tool results. The behaviour is specified in
// languages/README.md; languages/conformance/ checks this build against it.
//
// Strings are (pointer, length) views of UTF-8 bytes, never NUL-terminated.
// Memory: the event passed to on-event is ours to free; the flow we return
// is freed by the generated post-return function; strings the host returns
// from imports are ours to free.

#include <stdlib.h>
#include <string.h>

#include "hook.h"

typedef hook_string_t str;

static const char DEFAULT_DENY_ARGS[] = "*rm -rf*,*.ssh/*";
static const char DEFAULT_SECRET_PREFIXES[] = "sk-,ghp_,AKIA,xoxb-";
static const char DEFAULT_SECRET_NAMES[] = "PASSWORD,SECRET,TOKEN,API_KEY";

static str cstr(const char *s) { return (str){(uint8_t *)s, strlen(s)}; }

// malloc that stops the guard (a trap: the run fails closed) rather than
// return NULL, which in wasm would be written through silently.
static void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (p == NULL) abort();
  return p;
}

static bool starts_with(str s, str prefix) {
  return s.len >= prefix.len && memcmp(s.ptr, prefix.ptr, prefix.len) == 0;
}

static bool ends_with(str s, str suffix) {
  return s.len >= suffix.len && memcmp(s.ptr + s.len - suffix.len, suffix.ptr, suffix.len) == 0;
}

static bool equal(str a, str b) { return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0; }

// The offset of `needle` in `s` at or after `from`, or -1.
static long find(str s, size_t from, str needle) {
  for (size_t i = from; i + needle.len <= s.len; i++) {
    if (memcmp(s.ptr + i, needle.ptr, needle.len) == 0) return (long)i;
  }
  return -1;
}

// A growable byte buffer; `take` hands its bytes over as a string.
typedef struct {
  uint8_t *ptr;
  size_t len, cap;
} buf;

static void push(buf *b, const uint8_t *bytes, size_t len) {
  if (b->len + len > b->cap) {
    b->cap = (b->len + len) * 2 + 16;
    b->ptr = realloc(b->ptr, b->cap);
    if (b->ptr == NULL) abort();
  }
  memcpy(b->ptr + b->len, bytes, len);
  b->len += len;
}

static void push_str(buf *b, str s) { push(b, s.ptr, s.len); }
static void push_c(buf *b, const char *s) { push(b, (const uint8_t *)s, strlen(s)); }

static void push_number(buf *b, uint64_t n) {
  char digits[24];
  size_t i = sizeof digits;
  do digits[--i] = (char)('0' + n % 10);
  while ((n /= 10) > 0);
  push(b, (const uint8_t *)digits + i, sizeof digits - i);
}

static str take(buf *b) { return (str){b->ptr, b->len}; }

// Frees a string the host returned. An empty one may point at no
// allocation at all: hook_string_free knows, plain free() would trap.
static void drop(str *s) { hook_string_free(s); }

// ---- settings

// A setting's value, owned by the caller; false (and empty) when unset.
static bool setting_value(const char *key, str *value) {
  str k = cstr(key);
  if (hookbox_hook_config_get(&k, value)) return true;
  // On `none` the bindings copy an uninitialised string into *value:
  // freeing that later would corrupt the heap.
  *value = (str){NULL, 0};
  return false;
}

// A comma-separated list: items trimmed of spaces and tabs, empty ones
// dropped. Items are views into `value`, which must outlive the list.
typedef struct {
  str *items;
  size_t len;
} list;

static bool blank(uint8_t c) { return c == ' ' || c == '\t'; }

static list split(str value) {
  list l = {xmalloc((value.len / 2 + 1) * sizeof(str)), 0};
  size_t start = 0;
  for (size_t i = 0; i <= value.len; i++) {
    if (i < value.len && value.ptr[i] != ',') continue;
    size_t a = start, z = i;
    while (a < z && blank(value.ptr[a])) a++;
    while (z > a && blank(value.ptr[z - 1])) z--;
    if (z > a) l.items[l.len++] = (str){value.ptr + a, z - a};
    start = i + 1;
  }
  return l;
}

// The list for `key`, or for `fallback` when unset. `*owned` receives the
// host's string to free after use (or an empty one).
static list setting(const char *key, const char *fallback, str *owned) {
  *owned = (str){NULL, 0};
  if (setting_value(key, owned)) return split(*owned);
  return split(cstr(fallback));
}

// ---- patterns

// Whole-text match where `*` is any run of bytes.
static bool matches(str pattern, str text) {
  long star = find(pattern, 0, cstr("*"));
  if (star < 0) return equal(pattern, text);
  str first = {pattern.ptr, (size_t)star};
  if (!starts_with(text, first)) return false;
  size_t at = first.len;
  size_t p = (size_t)star + 1;
  for (;;) {
    long next = find(pattern, p, cstr("*"));
    if (next < 0) break;
    str part = {pattern.ptr + p, (size_t)next - p};
    long found = find(text, at, part);
    if (found < 0) return false;
    at = (size_t)found + part.len;
    p = (size_t)next + 1;
  }
  str last = {pattern.ptr + p, pattern.len - p};
  return text.len - at >= last.len && ends_with(text, last);
}

// ---- tool-call

static hook_flow_t flow(uint8_t tag, buf *text) {
  hook_flow_t f = {.tag = tag};
  if (tag == HOOKBOX_HOOK_TYPES_FLOW_TERMINATE) f.val.terminate = take(text);
  if (tag == HOOKBOX_HOOK_TYPES_FLOW_SKIP) f.val.skip = take(text);
  if (tag == HOOKBOX_HOOK_TYPES_FLOW_REWRITE_RESULT) f.val.rewrite_result = take(text);
  return f;
}

// 1 to 6 ASCII digits, at least 1; 0 when invalid.
static uint64_t parse_max(str value) {
  if (value.len < 1 || value.len > 6) return 0;
  uint64_t n = 0;
  for (size_t i = 0; i < value.len; i++) {
    if (value.ptr[i] < '0' || value.ptr[i] > '9') return 0;
    n = n * 10 + (value.ptr[i] - '0');
  }
  return n;
}

// Writes the reason a call is denied into `reason`; false when it is not.
static bool denial(str name, str args, buf *reason) {
  str owned;
  list deny = setting("deny", "", &owned);
  bool denied = false;
  for (size_t i = 0; i < deny.len && !denied; i++) denied = matches(deny.items[i], name);
  if (denied) {
    push_c(reason, "toolguard: `");
    push_str(reason, name);
    push_c(reason, "` is denied by policy");
  }
  free(deny.items);
  drop(&owned);
  if (denied) return true;

  list deny_args = setting("deny_args", DEFAULT_DENY_ARGS, &owned);
  for (size_t i = 0; i < deny_args.len && !denied; i++) {
    if (matches(deny_args.items[i], args)) {
      denied = true;
      push_c(reason, "toolguard: the arguments of `");
      push_str(reason, name);
      push_c(reason, "` match `");
      push_str(reason, deny_args.items[i]);
      push_c(reason, "`");
    }
  }
  free(deny_args.items);
  drop(&owned);
  return denied;
}

static hook_flow_t check_call(hookbox_hook_types_tool_call_t *call) {
  buf text = {0};
  str max_value;
  uint64_t max = 0;
  bool has_max = setting_value("max_denials", &max_value);
  if (has_max) {
    max = parse_max(max_value);
    if (max == 0) {
      push_c(&text, "toolguard: `max_denials` must be a positive integer, got `");
      push_str(&text, max_value);
      push_c(&text, "`");
      drop(&max_value);
      return flow(HOOKBOX_HOOK_TYPES_FLOW_TERMINATE, &text);
    }
    drop(&max_value);
  }
  if (!denial(call->tool_name, call->args, &text)) {
    return (hook_flow_t){.tag = HOOKBOX_HOOK_TYPES_FLOW_CONTINUE};
  }

  str key = cstr("denials"), stored;
  uint64_t count = 0;
  if (hookbox_hook_scratchpad_get(&key, &stored)) {
    for (size_t i = 0; i < stored.len; i++) count = count * 10 + (stored.ptr[i] - '0');
    drop(&stored);
  }
  count += 1;
  buf number = {0};
  push_number(&number, count);
  str value = take(&number);
  hookbox_hook_scratchpad_set(&key, &value);
  free(number.ptr);

  str message = take(&text);
  hook_log(HOOKBOX_HOOK_TYPES_LOG_LEVEL_WARN, &message);
  if (has_max && count >= max) {
    text.len = 0;
    push_c(&text, "toolguard: ");
    push_number(&text, count);
    push_c(&text, " tool calls denied in this run (max_denials is ");
    push_number(&text, max);
    push_c(&text, ")");
    return flow(HOOKBOX_HOOK_TYPES_FLOW_TERMINATE, &text);
  }
  return flow(HOOKBOX_HOOK_TYPES_FLOW_SKIP, &text);
}

// ---- tool-result

static bool name_byte(uint8_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// ASCII upper case with `-` read as `_`, in place.
static void upper(uint8_t *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    if (s[i] >= 'a' && s[i] <= 'z') s[i] -= 'a' - 'A';
    if (s[i] == '-') s[i] = '_';
  }
}

// Appends the redacted assignment and returns true, if `line` is one.
static bool redact_assignment(str line, list names, buf *out) {
  size_t i = 0;
  while (i < line.len && blank(line.ptr[i])) i++;
  if (starts_with((str){line.ptr + i, line.len - i}, cstr("export")) && i + 6 < line.len &&
      blank(line.ptr[i + 6])) {
    i += 6;
    while (i < line.len && blank(line.ptr[i])) i++;
  }
  if (i < line.len && (line.ptr[i] == '"' || line.ptr[i] == '\'')) i++;
  size_t start = i;
  while (i < line.len && name_byte(line.ptr[i])) i++;
  size_t name_len = i - start;
  if (name_len == 0) return false;
  if (i < line.len && (line.ptr[i] == '"' || line.ptr[i] == '\'')) i++;
  while (i < line.len && blank(line.ptr[i])) i++;
  if (i >= line.len || (line.ptr[i] != '=' && line.ptr[i] != ':')) return false;

  bool rest = false;
  for (size_t j = i + 1; j < line.len; j++) {
    uint8_t c = line.ptr[j];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') rest = true;
  }
  if (!rest) return false;
  uint8_t *name = xmalloc(name_len);
  memcpy(name, line.ptr + start, name_len);
  upper(name, name_len);
  bool secret = false;
  for (size_t n = 0; n < names.len && !secret; n++) {
    secret = ends_with((str){name, name_len}, names.items[n]);
  }
  free(name);
  if (!secret) return false;
  push(out, line.ptr, i + 1);
  push_c(out, "[REDACTED]");
  if (line.ptr[line.len - 1] == '\n') push_c(out, "\n");
  return true;
}

static void redact_tokens(str line, list prefixes, buf *out) {
  size_t i = 0;
  while (i < line.len) {
    size_t start = i;
    while (i < line.len && name_byte(line.ptr[i])) i++;
    if (i == start) {
      push(out, line.ptr + i, 1);
      i++;
      continue;
    }
    str token = {line.ptr + start, i - start};
    bool secret = false;
    for (size_t p = 0; p < prefixes.len && !secret; p++) {
      secret = starts_with(token, prefixes.items[p]) && token.len >= prefixes.items[p].len + 8;
    }
    if (secret) {
      push_c(out, "[REDACTED]");
    } else {
      push_str(out, token);
    }
  }
}

static hook_flow_t check_result(hookbox_hook_types_tool_result_t *result) {
  str owned_prefixes, owned_names;
  list prefixes = setting("secret_prefixes", DEFAULT_SECRET_PREFIXES, &owned_prefixes);
  list names = setting("secret_names", DEFAULT_SECRET_NAMES, &owned_names);
  // Upper-case the names in a copy (the default is a read-only literal).
  buf names_copy = {0};
  for (size_t n = 0; n < names.len; n++) push_str(&names_copy, names.items[n]);
  size_t offset = 0;
  for (size_t n = 0; n < names.len; n++) {
    names.items[n].ptr = names_copy.ptr + offset;
    offset += names.items[n].len;
  }
  upper(names_copy.ptr, names_copy.len);

  str text = result->result;
  buf out = {0};
  size_t start = 0;
  while (start < text.len) {
    size_t end = start;
    while (end < text.len && text.ptr[end] != '\n') end++;
    if (end < text.len) end++;  // keep the '\n'
    str line = {text.ptr + start, end - start};
    if (!redact_assignment(line, names, &out)) redact_tokens(line, prefixes, &out);
    start = end;
  }

  free(prefixes.items);
  free(names.items);
  free(names_copy.ptr);
  drop(&owned_prefixes);
  drop(&owned_names);
  if (equal(take(&out), text)) {
    free(out.ptr);
    return (hook_flow_t){.tag = HOOKBOX_HOOK_TYPES_FLOW_CONTINUE};
  }
  return flow(HOOKBOX_HOOK_TYPES_FLOW_REWRITE_RESULT, &out);
}

// ---- exports

void exports_hook_subscriptions(hook_list_event_kind_t *ret) {
  ret->len = 2;
  ret->ptr = xmalloc(2 * sizeof(hook_event_kind_t));
  ret->ptr[0] = HOOKBOX_HOOK_TYPES_EVENT_KIND_TOOL_CALL;
  ret->ptr[1] = HOOKBOX_HOOK_TYPES_EVENT_KIND_TOOL_RESULT;
}

void exports_hook_on_event(hook_hook_context_t *ctx, hook_step_event_t *event, hook_flow_t *ret) {
  switch (event->tag) {
    case HOOKBOX_HOOK_TYPES_STEP_EVENT_TOOL_CALL:
      *ret = check_call(&event->val.tool_call);
      break;
    case HOOKBOX_HOOK_TYPES_STEP_EVENT_TOOL_RESULT:
      *ret = check_result(&event->val.tool_result);
      break;
    default:
      *ret = (hook_flow_t){.tag = HOOKBOX_HOOK_TYPES_FLOW_CONTINUE};
  }
  hookbox_hook_types_hook_context_free(ctx);
  hookbox_hook_types_step_event_free(event);
}
