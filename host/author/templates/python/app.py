"""{{name}}: a hookbox guard. It skips calls to the tools its `deny`
setting names (comma-separated; default `shell`) and lets every other call
through. `hookbox test` runs the cases in `cases/`.

`wit_world` is generated from wit/ by componentize-py when it builds."""

import wit_world
from wit_world.imports import config
from wit_world.imports.types import EventKind, Flow_Continue, Flow_Skip, LogLevel, StepEvent_ToolCall


class WitWorld(wit_world.WitWorld):
    def subscriptions(self):
        return [EventKind.TOOL_CALL]

    def on_event(self, ctx, event):
        if not isinstance(event, StepEvent_ToolCall):
            return Flow_Continue()
        tool = event.value.tool_name
        deny = config.get("deny")
        if deny is None:
            deny = "shell"
        if tool in (name.strip() for name in deny.split(",")):
            wit_world.log(LogLevel.WARN, f"denied a call to `{tool}`")
            return Flow_Skip(f"`{tool}` is denied by policy")
        return Flow_Continue()
