// {{name}}: a hookbox guard. It skips calls to the tools its `deny`
// setting names (comma-separated; default `shell`) and lets every other
// call through. `hookbox test` runs the cases in `cases/`.
//
// hook.h is generated from wit/ by `hookbox build` (wit-bindgen-c). Strings are
// (pointer, length), not NUL-terminated; the event is ours to free, and the
// flow we return is freed by the bindings after the host has read it.

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

// `before`, then `tool`, then `after`, in a new string.
static hook_string_t quote(const char *before, hook_string_t tool, const char *after) {
  size_t a = strlen(before), b = strlen(after);
  hook_string_t s = {malloc(a + tool.len + b), a + tool.len + b};
  memcpy(s.ptr, before, a);
  memcpy(s.ptr + a, tool.ptr, tool.len);
  memcpy(s.ptr + a + tool.len, after, b);
  return s;
}

// Whether the comma-separated `list` names `tool` (each name trimmed of spaces).
static bool listed(hook_string_t list, hook_string_t tool) {
  for (size_t start = 0, end = 0; end <= list.len; start = ++end) {
    while (end < list.len && list.ptr[end] != ',') end++;
    size_t a = start, z = end;
    while (a < z && isspace(list.ptr[a])) a++;
    while (z > a && isspace(list.ptr[z - 1])) z--;
    if (z - a == tool.len && memcmp(list.ptr + a, tool.ptr, tool.len) == 0) return true;
  }
  return false;
}

void exports_hook_subscriptions(hook_list_event_kind_t *ret) {
  ret->len = 1;
  ret->ptr = malloc(sizeof(hook_event_kind_t));
  ret->ptr[0] = HOOKBOX_HOOK_TYPES_EVENT_KIND_TOOL_CALL;
}

void exports_hook_on_event(hook_hook_context_t *ctx, hook_step_event_t *event, hook_flow_t *ret) {
  ret->tag = HOOKBOX_HOOK_TYPES_FLOW_CONTINUE;
  if (event->tag == HOOKBOX_HOOK_TYPES_STEP_EVENT_TOOL_CALL) {
    hook_string_t tool = event->val.tool_call.tool_name, key, deny;
    hook_string_set(&key, "deny");
    if (!hookbox_hook_config_get(&key, &deny)) hook_string_dup(&deny, "shell");
    if (listed(deny, tool)) {
      hook_string_t message = quote("denied a call to `", tool, "`");
      hook_log(HOOKBOX_HOOK_TYPES_LOG_LEVEL_WARN, &message);
      hook_string_free(&message);
      ret->tag = HOOKBOX_HOOK_TYPES_FLOW_SKIP;
      ret->val.skip = quote("`", tool, "` is denied by policy");
    }
    hook_string_free(&deny);
  }
  hookbox_hook_types_hook_context_free(ctx);
  hook_step_event_free(event);
}
