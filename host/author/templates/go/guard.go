// {{name}}: a hookbox guard. It skips calls to the tools its `deny`
// setting names (comma-separated; default `shell`) and lets every other
// call through. `hookbox test` runs the cases in `cases/`.
//
// abi.go connects these two functions to the host; wasi-stub.wat answers
// the Go runtime's own WASI calls.
package main

import "strings"

func Subscriptions() []byte { return []byte{KindToolCall} }

func OnEvent(event Event) Flow {
	if event.Kind != KindToolCall {
		return Flow{Case: FlowContinue}
	}
	deny, ok := ConfigGet("deny")
	if !ok {
		deny = "shell"
	}
	for _, name := range strings.Split(deny, ",") {
		if strings.TrimSpace(name) == event.ToolName {
			Log(LogWarn, "denied a call to `"+event.ToolName+"`")
			return Flow{FlowSkip, "`" + event.ToolName + "` is denied by policy"}
		}
	}
	return Flow{Case: FlowContinue}
}
