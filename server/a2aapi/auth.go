package a2aapi

import (
	"encoding/json"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/tool"
)

// A tool that needs credentials the run does not have raises
// tool.RequireAuth's interrupt (kind tool.AuthKind); a task waiting on one
// is auth-required rather than input-required, with the tool's request as
// its question. The next message on the task answers it like any
// question: the credentials as a data part, or text ("done" after signing
// in elsewhere), as the tool's message asks.

// waitState is the state of a task whose thread waits on waiting: the
// first interrupt says which.
func waitState(waiting []openaiapi.Waiting) a2a.TaskState {
	if len(waiting) > 0 && authRequest(waiting[0]) != nil {
		return a2a.TaskStateAuthRequired
	}
	return a2a.TaskStateInputRequired
}

// waits reports whether a task in state stops for its client's answer.
func waits(state a2a.TaskState) bool {
	return state == a2a.TaskStateInputRequired || state == a2a.TaskStateAuthRequired
}

// authRequest reads w as a tool's request for credentials (nil when it is
// another question).
func authRequest(w openaiapi.Waiting) *tool.AuthRequest {
	var r tool.AuthRequest
	if json.Unmarshal(w.Value, &r) != nil || r.Kind != tool.AuthKind {
		return nil
	}
	return &r
}

// authText is what an auth-required task's status message says.
func authText(r *tool.AuthRequest) string {
	var b strings.Builder
	b.WriteString("The tool " + r.Tool + " needs credentials: " + r.Message)
	if r.Scheme != "" {
		b.WriteString("\nScheme: " + r.Scheme)
	}
	if r.URL != "" {
		b.WriteString("\nAuthenticate at: " + r.URL)
	}
	b.WriteString("\n\nAnswer on this task with what it asks (a data part with the credentials, or text once done).")
	return b.String()
}
