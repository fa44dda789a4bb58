package lcmsg_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// sdkDir returns the installed SDK package (see testenv.LangGraphSDK).
func sdkDir(t *testing.T) string {
	t.Helper()
	return testenv.LangGraphSDK(t, "dist/ui/messages.js")
}

// TestSDKReadsOurMessages runs the SDK's own code on our JSON: the
// messages-tuple chunks of a streamed reply, assembled by its
// MessageTupleManager as useStream does, give the reply's text,
// reasoning and parsed tool call under the message's id; and the
// canonical state messages coerce to the LangChain classes with their
// fields intact.
func TestSDKReadsOurMessages(t *testing.T) {
	dir := sdkDir(t)
	var tuples []json.RawMessage
	for _, e := range streamEvents() {
		b, err := lcmsg.Tuple(e, lcmsg.RunInfo{RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		tuples = append(tuples, b)
	}
	values := lcmsg.FromLLMAll(decodeFile(t, "input_type_form.json"))
	values = append(values, lcmsg.Remove("ai-2"))
	in, _ := json.Marshal(map[string]any{"tuples": tuples, "values": values})

	cmd := exec.Command("node", filepath.Join("testdata", "sdkread.mjs"), dir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Assembled map[string]struct {
			Type      string           `json:"type"`
			ID        string           `json:"id"`
			Content   string           `json:"content"`
			Reasoning string           `json:"reasoning"`
			ToolCalls []map[string]any `json:"tool_calls"`
			Node      string           `json:"node"`
		} `json:"assembled"`
		Values []struct {
			Type       string           `json:"type"`
			ID         string           `json:"id"`
			Text       string           `json:"text"`
			ToolCalls  []map[string]any `json:"tool_calls"`
			Invalid    []map[string]any `json:"invalid_tool_calls"`
			ToolCallID *string          `json:"tool_call_id"`
			Status     *string          `json:"status"`
			Reasoning  *string          `json:"reasoning"`
		} `json:"values"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}

	a, ok := got.Assembled["msg_1"]
	if !ok || len(got.Assembled) != 1 {
		t.Fatalf("assembled = %s: want one message msg_1", out)
	}
	wantCall := map[string]any{"name": "get_weather", "args": map[string]any{"city": "Lisbon"}, "id": "call_a", "type": "tool_call"}
	if a.Type != "ai" || a.Content != "Let me look" || a.Reasoning != "Check the weather." || a.Node != "agent" ||
		len(a.ToolCalls) != 1 || !reflect.DeepEqual(a.ToolCalls[0], wantCall) {
		t.Errorf("the SDK assembled %+v", a)
	}

	v := got.Values
	if len(v) != 7 {
		t.Fatalf("the SDK read %d state messages, want 7: %s", len(v), out)
	}
	types := []string{"system", "human", "ai", "tool", "tool", "ai", "remove"}
	for i, typ := range types {
		if v[i].Type != typ {
			t.Errorf("message %d: the SDK made a %q, want %q", i, v[i].Type, typ)
		}
	}
	if v[1].Text != "What is in this picture?" || v[5].Text != "Lisbon will be sunny. Want hotels?" {
		t.Errorf("texts %q, %q", v[1].Text, v[5].Text)
	}
	if len(v[2].ToolCalls) != 1 || v[2].ToolCalls[0]["id"] != "call-1" || len(v[2].Invalid) != 1 ||
		v[2].Reasoning == nil || *v[2].Reasoning != "The user wants weather first." {
		t.Errorf("ai message as the SDK reads it: %+v", v[2])
	}
	if v[4].Status == nil || *v[4].Status != "error" || v[4].ToolCallID == nil || *v[4].ToolCallID != "call-2" {
		t.Errorf("error tool message as the SDK reads it: %+v", v[4])
	}
	if v[6].ID != "ai-2" {
		t.Errorf("removal as the SDK reads it: %+v", v[6])
	}
}
