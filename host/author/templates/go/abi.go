package main

// The canonical ABI glue between the host and guard.go, by hand, so that the
// guard builds with Go alone (wit-bindgen's Go output needs modules from the
// Go module proxy). It covers the imports (ConfigGet, ScratchpadGet,
// ScratchpadSet, Log), reads the tool name, arguments and result of
// tool-call and tool-result events, and writes the flows that carry a
// string or nothing. Offsets are the wasm32 layouts of wit/hook.wit (the C
// bindings `wit-bindgen c wit --world hook` generates spell out the same
// numbers): follow them to read other events.

import "unsafe"

// Memory the host asked for (arguments, strings returned by imports) during
// the current call. The Go heap does not move; keeping a reference keeps it
// alive until the call is over.
var allocations [][]byte

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	buf := make([]byte, newSize+align)
	at := (align - uint32(uintptr(unsafe.Pointer(&buf[0])))%align) % align
	ptr := unsafe.Pointer(&buf[at])
	if old != nil {
		copy(unsafe.Slice((*byte)(ptr), newSize), unsafe.Slice((*byte)(old), min(oldSize, newSize)))
	}
	allocations = append(allocations, buf)
	return ptr
}

// address turns a linear-memory address into a pointer (wasm32: the same).
func address(at uint32) unsafe.Pointer { return unsafe.Pointer(uintptr(at)) }

func load32(base unsafe.Pointer, offset uintptr) uint32 {
	return *(*uint32)(unsafe.Add(base, offset))
}

// loadString copies the (pointer, length) string at base+offset.
func loadString(base unsafe.Pointer, offset uintptr) string {
	ptr, n := load32(base, offset), load32(base, offset+4)
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(address(ptr)), n))
}

// ---- imports

//go:wasmimport hookbox:hook/config@0.1.0 get
func configGet(key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport hookbox:hook/scratchpad@0.1.0 get
func scratchpadGet(key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport hookbox:hook/scratchpad@0.1.0 set
func scratchpadSet(key unsafe.Pointer, keyLen uint32, value unsafe.Pointer, valueLen uint32)

//go:wasmimport $root log
func hostLog(level uint32, message unsafe.Pointer, messageLen uint32)

// Log levels (the `log-level` enum).
const (
	LogTrace = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
)

// optionString calls an import returning option<string> (12 bytes: a tag,
// then the string at 4).
func optionString(call func(unsafe.Pointer, uint32, unsafe.Pointer), key string) (string, bool) {
	var ret [3]uint32
	call(unsafe.Pointer(unsafe.StringData(key)), uint32(len(key)), unsafe.Pointer(&ret))
	if ret[0]&0xff == 0 {
		return "", false
	}
	return loadString(unsafe.Pointer(&ret), 4), true
}

// ConfigGet reads a setting (the `config` import).
func ConfigGet(key string) (string, bool) { return optionString(configGet, key) }

// ScratchpadGet and ScratchpadSet are the run-scoped `scratchpad` import.
func ScratchpadGet(key string) (string, bool) { return optionString(scratchpadGet, key) }

func ScratchpadSet(key, value string) {
	scratchpadSet(unsafe.Pointer(unsafe.StringData(key)), uint32(len(key)),
		unsafe.Pointer(unsafe.StringData(value)), uint32(len(value)))
}

// Log writes to the host's log under the plugin's name.
func Log(level uint32, message string) {
	hostLog(level, unsafe.Pointer(unsafe.StringData(message)), uint32(len(message)))
}

// ---- the types the guard reads and answers

// Event kinds (the `event-kind` enum; also the `step-event` cases).
const (
	KindCompletionCall = iota
	KindCompletionResponse
	KindModelTurnFinished
	KindInvalidToolCall
	KindToolCall
	KindToolResult
	KindTextDelta
	KindToolCallDelta
	KindStreamResponseFinish
)

// Event is the part of a `step-event` abi.go reads: the kind of any event,
// the rest of tool-call and tool-result only.
type Event struct {
	Kind     uint8
	ToolName string
	Args     string
	Result   string // tool-result only
}

// Flow cases (the `flow` variant); Payload is the case's string.
const (
	FlowContinue      = 0
	FlowTerminate     = 1
	FlowSkip          = 2
	FlowRewriteArgs   = 3
	FlowRewriteResult = 4
)

type Flow struct {
	Case    uint8
	Payload string
}

// ---- exports

// The return area of an export, 8-aligned; and the flow's string, kept
// alive until the next call (the host copies it after we return).
var (
	returnArea [16]uint64
	returned   []byte
)

//go:wasmexport subscriptions
func exportSubscriptions() unsafe.Pointer {
	kinds := Subscriptions()
	list := make([]byte, len(kinds))
	copy(list, kinds)
	returned = list
	area := unsafe.Pointer(&returnArea)
	*(*uint32)(area) = uint32(uintptr(unsafe.Pointer(unsafe.SliceData(list))))
	*(*uint32)(unsafe.Add(area, 4)) = uint32(len(list))
	return area
}

// on-event's parameters are passed in memory (too many to flatten): the
// hook-context at 0, the step-event's tag at 32 and its payload at 40.
//
//go:wasmexport on-event
func exportOnEvent(args unsafe.Pointer) unsafe.Pointer {
	event := Event{Kind: *(*uint8)(unsafe.Add(args, 32))}
	payload := unsafe.Add(args, 40)
	switch event.Kind {
	case KindToolCall: // tool-name 0, tool-call-id 8, internal-call-id 20, args 28
		event.ToolName, event.Args = loadString(payload, 0), loadString(payload, 28)
	case KindToolResult: // ... as tool-call, then result 36
		event.ToolName, event.Args = loadString(payload, 0), loadString(payload, 28)
		event.Result = loadString(payload, 36)
	}
	flow := OnEvent(event)
	allocations = nil // the arguments and import results are copied out

	area := unsafe.Pointer(&returnArea)
	*(*uint8)(area) = flow.Case
	if flow.Case != FlowContinue {
		returned = []byte(flow.Payload)
		*(*uint32)(unsafe.Add(area, 8)) = uint32(uintptr(unsafe.Pointer(unsafe.SliceData(returned))))
		*(*uint32)(unsafe.Add(area, 12)) = uint32(len(returned))
	}
	return area
}

// A reactor: the host calls the exports; main never runs.
func main() {}
