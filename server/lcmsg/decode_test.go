package lcmsg_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func decodeFile(t *testing.T, name string) []llm.Message {
	t.Helper()
	in, err := lcmsg.DecodeInput(readFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Remove) != 0 || in.ReplaceAll {
		t.Fatalf("removals in %s: %+v", name, in)
	}
	return in.Messages
}

// The SDK's message types (types.messages.d.ts), as a client sends them,
// become the Trellis messages they mean.
func TestDecodeTypeForm(t *testing.T) {
	ms := decodeFile(t, "input_type_form.json")
	want := []llm.Message{
		{ID: "sys-1", Role: llm.RoleSystem, Parts: []llm.Part{llm.Text("You plan trips.")}},
		{ID: "h-1", Role: llm.RoleUser, Parts: []llm.Part{
			llm.Text("What is in this picture?"),
			{Type: llm.PartImage, URL: "https://example.com/a.png", Detail: "low"},
			llm.ImageURL("data:image/png;base64,iVBORw0KGgo="),
		}},
		{ID: "ai-1", Role: llm.RoleAssistant, Reasoning: "The user wants weather first.", ToolCalls: []llm.ToolCall{
			{ID: "call-1", Name: "get_weather", Arguments: `{"city":"Lisbon","days":3}`},
			{ID: "call-2", Name: "search", Arguments: `{"q": "hotels`},
		}},
		{ID: "t-1", Role: llm.RoleTool, ToolCallID: "call-1", ToolName: "get_weather", Parts: []llm.Part{llm.Text("Sunny, 24°C")}},
		{ID: "t-2", Role: llm.RoleTool, ToolCallID: "call-2", ToolName: "search", IsError: true, Parts: []llm.Part{llm.Text("bad arguments: unterminated string")}},
		{ID: "ai-2", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("Lisbon will be sunny. "), llm.Text("Want hotels?")}},
	}
	if !reflect.DeepEqual(ms, want) {
		g, _ := json.MarshalIndent(ms, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("decoded\n%s\nwant\n%s", g, w)
	}
}

// The OpenAI-like role form, a bare string and a [role, content] pair are
// accepted too; messages without ids get fresh, distinct ones.
func TestDecodeRoleForm(t *testing.T) {
	ms := decodeFile(t, "input_role_form.json")
	if len(ms) != 7 {
		t.Fatalf("%d messages, want 7", len(ms))
	}
	ids := map[string]bool{}
	for i, m := range ms {
		if m.ID == "" || ids[m.ID] {
			t.Errorf("message %d has id %q: want a fresh distinct id", i, m.ID)
		}
		ids[m.ID] = true
	}
	roles := []llm.Role{llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool, llm.RoleAssistant, llm.RoleUser, llm.RoleUser}
	for i, r := range roles {
		if ms[i].Role != r {
			t.Errorf("message %d role %s, want %s", i, ms[i].Role, r)
		}
	}
	if c := ms[2].ToolCalls; len(c) != 1 || c[0].ID != "call-9" || c[0].Name != "get_weather" || c[0].Arguments != `{"city":"Lisbon"}` || len(ms[2].Parts) != 0 {
		t.Errorf("assistant tool call = %+v, parts %v", c, ms[2].Parts)
	}
	if ms[3].ToolCallID != "call-9" || ms[3].Text() != "Sunny" {
		t.Errorf("tool message = %+v", ms[3])
	}
	if ms[5].Text() != "and tomorrow?" || ms[6].Text() != "and the day after?" {
		t.Errorf("shorthand messages = %q, %q", ms[5].Text(), ms[6].Text())
	}
}

// The canonical output for the SDK's message types is pinned by golden
// files: the fields LangChain writes per type, in its order.
func TestCanonicalGolden(t *testing.T) {
	for _, name := range []string{"input_type_form.json", "input_role_form.json"} {
		ms := decodeFile(t, name)
		if name == "input_role_form.json" {
			for i := range ms { // fresh ids differ per run
				if !strings.HasPrefix(ms[i].ID, "msg_") {
					t.Fatalf("generated id %q", ms[i].ID)
				}
				ms[i].ID = "gen-" + string(rune('a'+i))
			}
		}
		got, err := json.MarshalIndent(lcmsg.FromLLMAll(ms), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "canonical_"+strings.TrimPrefix(name, "input_"), append(got, '\n'))
	}
}

// Every Trellis message survives the trip to LangChain's JSON and back.
func TestRoundTripFromLLM(t *testing.T) {
	ms := []llm.Message{
		llm.System("be brief"),
		llm.User("hi\nthere 👋"),
		llm.UserParts(llm.Text("look"), llm.Part{Type: llm.PartImage, URL: "https://x/y.png", Detail: "high"}),
		llm.UserParts(llm.Text("a"), llm.Text("b")),
		{ID: "m1", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("ok")}, Reasoning: "think", ReasoningSignature: "sig==",
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: `{"b":1,"a":[2]}`}, {ID: "c2", Name: "g", Arguments: `{"x":`}}},
		llm.ToolResult(llm.ToolCall{ID: "c1", Name: "f"}, "result"),
		llm.ToolError(llm.ToolCall{ID: "c2", Name: "g"}, "bad args"),
		{ID: "m2", Role: llm.RoleAssistant},
		{ID: "m3", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("add the label")}, Name: "reviewer"}, // a voice's name survives
	}
	data, err := json.Marshal(lcmsg.FromLLMAll(ms))
	if err != nil {
		t.Fatal(err)
	}
	in, err := lcmsg.DecodeInput(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Messages, ms) {
		g, _ := json.MarshalIndent(in.Messages, "", " ")
		w, _ := json.MarshalIndent(ms, "", " ")
		t.Errorf("round trip changed the messages:\n%s\nwant\n%s\nvia %s", g, w, data)
	}
	// One at a time through ToLLM too.
	for i, m := range ms {
		b, _ := json.Marshal(lcmsg.FromLLM(m))
		back, err := lcmsg.ToLLM(b)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Errorf("message %d: ToLLM = %+v, %v; want %+v", i, back, err, m)
		}
	}
}

// Arguments that are empty read as {} (LangChain needs an object); their
// key order and values are kept, whitespace is not.
func TestToolCallArguments(t *testing.T) {
	m := llm.Message{ID: "a", Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "1", Name: "none", Arguments: ""},
		{ID: "2", Name: "spaced", Arguments: "{ \"z\" : 1 , \"a\" : 2 }"},
		{ID: "3", Name: "list", Arguments: "[1,2]"},
	}}
	lc := lcmsg.FromLLM(m)
	if len(lc.ToolCalls) != 2 || string(lc.ToolCalls[0].Args) != "{}" || string(lc.ToolCalls[1].Args) != `{"z":1,"a":2}` {
		t.Errorf("tool_calls = %+v", lc.ToolCalls)
	}
	if len(lc.InvalidToolCalls) != 1 || lc.InvalidToolCalls[0].Args != "[1,2]" || lc.InvalidToolCalls[0].Error == "" {
		t.Errorf("invalid_tool_calls = %+v: an array is not an arguments object", lc.InvalidToolCalls)
	}
}

func TestDecodeInputRemovals(t *testing.T) {
	in, err := lcmsg.DecodeInput([]byte(`[{"type":"remove","id":"a"},{"type":"human","content":"x","id":"h"},{"type":"remove","id":"b"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Remove, []string{"a", "b"}) || len(in.Messages) != 1 || in.ReplaceAll {
		t.Errorf("input = %+v", in)
	}
	in, err = lcmsg.DecodeInput([]byte(`[{"type":"human","content":"dropped"},{"type":"remove","id":"__remove_all__"},{"type":"human","content":"kept","id":"k"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !in.ReplaceAll || len(in.Messages) != 1 || in.Messages[0].ID != "k" || len(in.Remove) != 0 {
		t.Errorf("remove-all input = %+v: want only the messages after the marker, ReplaceAll set", in)
	}
	// A list of [role, content] pairs.
	in, err = lcmsg.DecodeInput([]byte(`[["user","q"],["assistant","a"]]`))
	if err != nil || len(in.Messages) != 2 || in.Messages[1].Role != llm.RoleAssistant || in.Messages[1].Text() != "a" {
		t.Errorf("pairs: %+v, %v", in, err)
	}
	// A single message object is a one-message input.
	in, err = lcmsg.DecodeInput([]byte(`{"role":"user","content":"solo"}`))
	if err != nil || len(in.Messages) != 1 || in.Messages[0].Text() != "solo" {
		t.Errorf("single message: %+v, %v", in, err)
	}
}

// Bad input is an error naming the field at fault, never a zero message.
func TestDecodeErrorsNameTheField(t *testing.T) {
	cases := []struct {
		in, path, msg string
	}{
		{`null`, "", "no messages"},
		{`[42]`, "[0]", "got a number"},
		{`[{"content":"x"}]`, "[0]", `needs a "type"`},
		{`[{"type":"function","content":"x"}]`, "[0].type", `unknown message type "function"`},
		{`[{"role":"bot","content":"x"}]`, "[0].role", `unknown role "bot"`},
		{`[{"type":"ai","role":"user","content":"x"}]`, "[0]", "disagree"},
		{`[{"type":"human","content":7}]`, "[0].content", "want a string or a list of parts"},
		{`[{"type":"human","content":[{"type":"audio","data":"x"}]}]`, "[0].content[0].type", `unsupported part type "audio"`},
		{`[{"type":"human","content":[{"text":"x"}]}]`, "[0].content[0].type", "needs a type"},
		{`[{"type":"human","content":[{"type":"image_url","image_url":{}}]}]`, "[0].content[0].image_url.url", "empty image URL"},
		{`[{"type":"human","content":[{"type":"image","data":"@@","mime_type":"image/png"}]}]`, "[0].content[0].data", "not base64"},
		{`[{"type":"human","content":[{"type":"image","data":"AAAA","mime_type":"text/plain"}]}]`, "[0].content[0].mime_type", "image MIME type"},
		{`[{"type":"human","id":5,"content":"x"}]`, "[0].id", "want a string, got a number"},
		{`[{"type":"ai","content":"","tool_calls":[{"name":"f","args":[1]}]}]`, "[0].tool_calls[0].args", "must be a JSON object"},
		{`[{"type":"ai","content":"","tool_calls":[{"args":{}}]}]`, "[0].tool_calls[0].name", "needs the tool's name"},
		{`[{"type":"ai","content":"","tool_calls":{"name":"f"}}]`, "[0].tool_calls", "want a list"},
		{`[{"type":"human","content":"x","tool_calls":[{"name":"f","args":{}}]}]`, "[0].tool_calls", "only ai"},
		{`[{"type":"tool","content":"x"}]`, "[0].tool_call_id", "must name the tool call"},
		{`[{"type":"tool","content":"x","tool_call_id":"c","status":"ok"}]`, "[0].status", `unknown status "ok"`},
		{`[{"type":"remove"}]`, "[0].id", "needs the id"},
		{`[{"type":"ai","content":"x","additional_kwargs":{"reasoning_content":1}}]`, "[0].additional_kwargs.reasoning_content", "want a string"},
		{`[{"type":"ai","content":"x","additional_kwargs":[]}]`, "[0].additional_kwargs", "want an object"},
	}
	for _, c := range cases {
		_, err := lcmsg.DecodeInput([]byte(c.in))
		var fe *lcmsg.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want a *FieldError", c.in, err)
			continue
		}
		if fe.Path != c.path || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%s: error at %q: %q; want at %q containing %q", c.in, fe.Path, fe.Msg, c.path, c.msg)
		}
	}
	if _, err := lcmsg.ToLLM([]byte(`{"type":"remove","id":"x"}`)); err == nil || !strings.Contains(err.Error(), "DecodeInput") {
		t.Errorf("ToLLM of a removal: %v", err)
	}
}
