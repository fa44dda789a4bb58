package aguiapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

// forwarded is what the wire reads of an input's forwardedProps; other
// members (front-ends forward their own props) are ignored.
type forwarded struct {
	// Configurable joins the run's config.configurable, as a LangGraph
	// run's config does: the run context the graph reads, over the
	// assistant's (docs/agui.md).
	Configurable json.RawMessage `json:"configurable"`
	// Command is LangGraph's command as the LangGraph AG-UI integration
	// forwards it; only resume is read.
	Command *struct {
		Resume json.RawMessage `json:"resume"`
	} `json:"command"`
}

// readForwarded decodes forwardedProps: absent or null is nothing; anything
// but an object is a 422, as are a configurable that is not an object and
// a command with members other than resume.
func readForwarded(raw json.RawMessage) (forwarded, *ResumeEntry, error) {
	var f forwarded
	if !isPresent(raw) {
		return f, nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return f, nil, fmt.Errorf("must be a JSON object")
	}
	if c, ok := members["configurable"]; ok && isPresent(c) {
		if !bytes.HasPrefix(bytes.TrimSpace(c), []byte("{")) {
			return f, nil, fmt.Errorf("configurable must be a JSON object of run settings")
		}
		f.Configurable = c
	}
	c, ok := members["command"]
	if !ok || !isPresent(c) {
		return f, nil, nil
	}
	var cmd map[string]json.RawMessage
	if err := json.Unmarshal(c, &cmd); err != nil {
		return f, nil, fmt.Errorf("command must be a JSON object")
	}
	for k := range cmd {
		if k != "resume" {
			return f, nil, fmt.Errorf("command.%s is not supported: the AG-UI wire reads only command.resume (state changes go through the LangGraph API)", k)
		}
	}
	if r, ok := cmd["resume"]; ok {
		return f, &ResumeEntry{Status: "resolved", Payload: r}, nil
	}
	return f, nil, nil
}

func isPresent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// runSettings sets a run's config and context from the input: the
// forwarded configurable as config.configurable, the context entries as
// the run context's tool.ClientContextKey (an agent built on agent/react
// shows them to its model as a system note).
func runSettings(kw *runs.Kwargs, f forwarded, entries []ContextEntry) {
	if f.Configurable != nil {
		kw.Config = mustJSON(map[string]json.RawMessage{"configurable": f.Configurable})
	}
	if len(entries) > 0 {
		es := make([]tool.ContextEntry, len(entries))
		for i, e := range entries {
			es[i] = tool.ContextEntry{Description: e.Description, Value: e.Value}
		}
		kw.Context = mustJSON(map[string]any{tool.ClientContextKey: es})
	}
}
