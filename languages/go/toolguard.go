// toolguard in Go: denies tool calls by name and argument pattern, and
// redacts secrets from tool results. The behaviour is specified in
// languages/README.md; languages/conformance/ checks this build against it.
package main

import (
	"strconv"
	"strings"
)

const (
	defaultDenyArgs       = "*rm -rf*,*.ssh/*"
	defaultSecretPrefixes = "sk-,ghp_,AKIA,xoxb-"
	defaultSecretNames    = "PASSWORD,SECRET,TOKEN,API_KEY"
)

func Subscriptions() []byte { return []byte{KindToolCall, KindToolResult} }

func OnEvent(event Event) Flow {
	switch event.Kind {
	case KindToolCall:
		return checkCall(event.ToolName, event.Args)
	case KindToolResult:
		if redacted := redact(event.Result); redacted != event.Result {
			return Flow{FlowRewriteResult, redacted}
		}
	}
	return Flow{Case: FlowContinue}
}

func checkCall(name, args string) Flow {
	value, hasMax := ConfigGet("max_denials")
	max, ok := parseMax(value)
	if hasMax && !ok {
		return Flow{FlowTerminate, "toolguard: `max_denials` must be a positive integer, got `" + value + "`"}
	}
	reason, denied := denial(name, args)
	if !denied {
		return Flow{Case: FlowContinue}
	}
	stored, _ := ScratchpadGet("denials")
	count, _ := strconv.Atoi(stored) // absent: 0
	count++
	ScratchpadSet("denials", strconv.Itoa(count))
	LogWarn(reason)
	if hasMax && count >= max {
		return Flow{FlowTerminate, "toolguard: " + strconv.Itoa(count) +
			" tool calls denied in this run (max_denials is " + strconv.Itoa(max) + ")"}
	}
	return Flow{FlowSkip, reason}
}

func denial(name, args string) (string, bool) {
	for _, pattern := range setting("deny", "") {
		if matches(pattern, name) {
			return "toolguard: `" + name + "` is denied by policy", true
		}
	}
	for _, pattern := range setting("deny_args", defaultDenyArgs) {
		if matches(pattern, args) {
			return "toolguard: the arguments of `" + name + "` match `" + pattern + "`", true
		}
	}
	return "", false
}

// parseMax accepts 1 to 6 ASCII digits with a value of at least 1.
func parseMax(value string) (int, bool) {
	if len(value) < 1 || len(value) > 6 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(value); i++ {
		if value[i] < '0' || value[i] > '9' {
			return 0, false
		}
		n = n*10 + int(value[i]-'0')
	}
	return n, n >= 1
}

// setting is a comma-separated list, or its default when unset.
func setting(key, fallback string) []string {
	value, ok := ConfigGet(key)
	if !ok {
		value = fallback
	}
	var items []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.Trim(item, " \t"); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// matches is a whole-text match where `*` is any run of characters.
func matches(pattern, text string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == text
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(text, first) {
		return false
	}
	at := len(first)
	for _, part := range parts[1 : len(parts)-1] {
		found := strings.Index(text[at:], part)
		if found < 0 {
			return false
		}
		at += found + len(part)
	}
	return len(text)-at >= len(last) && strings.HasSuffix(text, last)
}

func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// upper is ASCII upper case with `-` read as `_` (strings.ToUpper would
// also map `ſ` to `S`).
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		} else if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

func redact(text string) string {
	prefixes := setting("secret_prefixes", defaultSecretPrefixes)
	var names []string
	for _, name := range setting("secret_names", defaultSecretNames) {
		names = append(names, upper(name))
	}
	var out strings.Builder
	for len(text) > 0 {
		end := strings.IndexByte(text, '\n') + 1
		if end == 0 {
			end = len(text)
		}
		line := text[:end]
		if redacted, ok := redactAssignment(line, names); ok {
			out.WriteString(redacted)
		} else {
			redactTokens(&out, line, prefixes)
		}
		text = text[end:]
	}
	return out.String()
}

// redactAssignment reads WS* ("export" WS+)? Q? NAME Q? WS* SEP left to
// right and redacts what follows SEP if NAME looks secret.
func redactAssignment(line string, names []string) (string, bool) {
	i := 0
	skipBlanks := func() {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
	}
	isQuote := func() bool { return i < len(line) && (line[i] == '"' || line[i] == '\'') }
	skipBlanks()
	if strings.HasPrefix(line[i:], "export") && i+6 < len(line) && isBlank(line[i+6]) {
		i += 6
		skipBlanks()
	}
	if isQuote() {
		i++
	}
	start := i
	for i < len(line) && isNameByte(line[i]) {
		i++
	}
	name := line[start:i]
	if name == "" {
		return "", false
	}
	if isQuote() {
		i++
	}
	skipBlanks()
	if i >= len(line) || (line[i] != '=' && line[i] != ':') {
		return "", false
	}
	if strings.Trim(line[i+1:], " \t\r\n") == "" {
		return "", false
	}
	name = upper(name)
	for _, secret := range names {
		if strings.HasSuffix(name, secret) {
			end := ""
			if strings.HasSuffix(line, "\n") {
				end = "\n"
			}
			return line[:i+1] + "[REDACTED]" + end, true
		}
	}
	return "", false
}

func redactTokens(out *strings.Builder, line string, prefixes []string) {
	for i := 0; i < len(line); {
		start := i
		for i < len(line) && isNameByte(line[i]) {
			i++
		}
		if i == start {
			out.WriteByte(line[i])
			i++
			continue
		}
		token := line[start:i]
		secret := false
		for _, prefix := range prefixes {
			if strings.HasPrefix(token, prefix) && len(token) >= len(prefix)+8 {
				secret = true
				break
			}
		}
		if secret {
			out.WriteString("[REDACTED]")
		} else {
			out.WriteString(token)
		}
	}
}
