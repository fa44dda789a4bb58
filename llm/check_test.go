package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func TestRepairRewritesMalformedCalls(t *testing.T) {
	u := llm.User("u")
	cases := []struct {
		name string
		call llm.ToolCall
		want func(t *testing.T, c llm.ToolCall)
	}{
		{"empty name", llm.ToolCall{ID: "c1", Name: "", Arguments: `{}`}, func(t *testing.T, c llm.ToolCall) {
			if c.Name != llm.MissingToolName || c.ID != "c1" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"name with spaces", llm.ToolCall{ID: "c1", Name: "get weather", Arguments: `{}`}, func(t *testing.T, c llm.ToolCall) {
			if c.Name != "invalid_name_get_weather" {
				t.Errorf("name = %q", c.Name)
			}
		}},
		{"arguments not JSON", llm.ToolCall{ID: "c1", Name: "f", Arguments: `{"a":`}, func(t *testing.T, c llm.ToolCall) {
			if c.Arguments != `{"invalid_json":"{\"a\":"}` {
				t.Errorf("arguments = %s", c.Arguments)
			}
		}},
		{"arguments an array", llm.ToolCall{ID: "c1", Name: "f", Arguments: `[1]`}, func(t *testing.T, c llm.ToolCall) {
			if c.Arguments != `{"invalid_json":"[1]"}` {
				t.Errorf("arguments = %s", c.Arguments)
			}
		}},
		{"empty ID", llm.ToolCall{ID: "", Name: "f", Arguments: `{}`}, func(t *testing.T, c llm.ToolCall) {
			if !strings.HasPrefix(c.ID, "call_") {
				t.Errorf("ID = %q", c.ID)
			}
		}},
		{"ID with a colon", llm.ToolCall{ID: "functions.f:0", Name: "f"}, func(t *testing.T, c llm.ToolCall) {
			if !strings.HasPrefix(c.ID, "call_") {
				t.Errorf("ID = %q", c.ID)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := []llm.Message{u, llm.Assistant("", tc.call), llm.ToolError(tc.call, "Error: bad call"), llm.User("next")}
			if err := llm.CheckHistory(in); err == nil {
				t.Fatal("CheckHistory accepted the malformed call")
			}
			got := llm.RepairHistory(in)
			if err := llm.CheckHistory(got); err != nil {
				t.Fatalf("repaired history: %v", err)
			}
			if len(got) != 4 || got[2].Text() != "Error: bad call" || got[2].ToolCallID != got[1].ToolCalls[0].ID {
				t.Fatalf("the call's own result must follow it, under its new ID: %v", shape(got))
			}
			tc.want(t, got[1].ToolCalls[0])
			if in[1].ToolCalls[0] != tc.call {
				t.Error("the input was modified")
			}
			// Deterministic: the same history is repaired the same way.
			if d := cmp.Diff(got, llm.RepairHistory(in)); d != "" {
				t.Errorf("a second repair differs:\n%s", d)
			}
		})
	}
}

func TestRepairPairsReusedCallIDsByPosition(t *testing.T) {
	// A server that numbers calls per reply reuses "call_0" every turn.
	c := llm.ToolCall{ID: "call_0", Name: "f", Arguments: `{}`}
	in := []llm.Message{
		llm.User("u"), llm.Assistant("", c), llm.ToolResult(c, "first"),
		llm.Assistant("", c), llm.ToolResult(c, "second"),
	}
	got := llm.RepairHistory(in)
	if err := llm.CheckHistory(got); err != nil {
		t.Fatal(err)
	}
	if got[2].Text() != "first" || got[4].Text() != "second" {
		t.Errorf("results %q, %q: each turn must keep its own result", got[2].Text(), got[4].Text())
	}
	if got[1].ToolCalls[0].ID == got[3].ToolCalls[0].ID {
		t.Error("the reused ID was kept twice")
	}
}

func TestCheckHistoryNamesTheProblem(t *testing.T) {
	a := llm.ToolCall{ID: "a", Name: "f"}
	for _, tc := range []struct {
		msgs []llm.Message
		want string
	}{
		{[]llm.Message{llm.Assistant("", a)}, "not answered"},
		{[]llm.Message{llm.ToolResult(a, "x")}, "is a tool message"},
		{[]llm.Message{llm.Assistant("", a), llm.ToolResult(a, "1"), llm.Assistant("", a), llm.ToolResult(a, "2")}, "used by message 0 too"},
		{[]llm.Message{llm.Assistant("", llm.ToolCall{ID: "a", Name: "f", Arguments: "7"}), llm.ToolResult(a, "1")}, "not a JSON object"},
	} {
		if err := llm.CheckHistory(tc.msgs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckHistory(%v) = %v, want %q", shape(tc.msgs), err, tc.want)
		}
	}
	if err := llm.CheckHistory([]llm.Message{llm.User("u"), llm.Assistant("", a), llm.ToolResult(a, "1"), llm.Assistant("ok")}); err != nil {
		t.Errorf("valid history: %v", err)
	}
}

// replyModel answers every request with reply, recording the requests.
type replyModel struct {
	reply llm.Message
	reqs  []*llm.Request
}

func (m *replyModel) Name() string { return "test:reply" }
func (m *replyModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.reqs = append(m.reqs, req)
	return &llm.Response{Message: m.reply.Clone()}, nil
}
func (m *replyModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	panic("not streamed")
}

func TestCallGivesReplyCallsUsableIDs(t *testing.T) {
	old := llm.ToolCall{ID: "call_0", Name: "f", Arguments: "{}"}
	history := []llm.Message{llm.User("u"), llm.Assistant("", old), llm.ToolResult(old, "r")}
	m := &replyModel{reply: llm.Assistant("",
		llm.ToolCall{ID: "call_0", Name: "f"},                // reused from the history
		llm.ToolCall{ID: "", Name: "f"},                      // missing
		llm.ToolCall{ID: "x y", Name: "f"},                   // malformed
		llm.ToolCall{ID: "dup", Name: "f"},                   // fine
		llm.ToolCall{ID: "dup", Name: "", Arguments: "oops"}, // repeated, and a bad name and arguments
	)}
	resp, err := llm.Call(context.Background(), m, &llm.Request{Messages: history})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{"call_0": true}
	for i, c := range resp.Message.ToolCalls {
		if c.ID == "" || seen[c.ID] || strings.ContainsAny(c.ID, " :") {
			t.Errorf("call %d has ID %q", i, c.ID)
		}
		seen[c.ID] = true
	}
	if resp.Message.ToolCalls[3].ID != "dup" {
		t.Errorf("a good ID was changed: %q", resp.Message.ToolCalls[3].ID)
	}
	if c := resp.Message.ToolCalls[4]; c.Name != "" || c.Arguments != "oops" {
		t.Errorf("the name and arguments must stay as written, for the tool node to report: %+v", c)
	}
}

// FuzzRepairHistory builds histories from random operations and checks
// that a repaired history always passes CheckHistory, and that repairing
// it again changes nothing.
func FuzzRepairHistory(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("assistant calls with odd names and ids"))
	f.Add([]byte{2, 2, 2, 3, 3, 3, 1, 0, 255, 128})
	names := []string{"f", "", "get weather", "ok-name", strings.Repeat("n", 70), "ünï", "a.b"}
	ids := []string{"a", "b", "", "a", "x y", "call_0", strings.Repeat("i", 80)}
	args := []string{"{}", "", `{"a":1}`, `{"a":`, "[1]", "null", `"s"`, " { } "}
	f.Fuzz(func(t *testing.T, ops []byte) {
		var msgs []llm.Message
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			switch op % 5 {
			case 0:
				msgs = append(msgs, llm.User(fmt.Sprint(arg)))
			case 1, 2:
				n := arg%3 + 1
				var calls []llm.ToolCall
				for k := range n {
					calls = append(calls, llm.ToolCall{ID: ids[(arg+k)%len(ids)], Name: names[(arg/3+k)%len(names)], Arguments: args[(arg/7+k)%len(args)]})
				}
				msgs = append(msgs, llm.Assistant("", calls...))
			case 3:
				msgs = append(msgs, llm.ToolResult(llm.ToolCall{ID: ids[arg%len(ids)]}, fmt.Sprint(arg)))
			case 4:
				msgs = append(msgs, llm.Assistant(fmt.Sprint(arg)))
			}
		}
		got := llm.RepairHistory(msgs)
		if err := llm.CheckHistory(got); err != nil {
			t.Fatalf("repaired history is invalid: %v\nin:  %v\nout: %v", err, shape(msgs), shape(got))
		}
		again := llm.RepairHistory(got)
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("repairing twice changed the history:\n%s", d)
		}
		for _, m := range got {
			for _, c := range m.ToolCalls {
				var v map[string]any
				if strings.TrimSpace(c.Arguments) != "" && json.Unmarshal([]byte(c.Arguments), &v) != nil {
					t.Fatalf("arguments %q are not an object", c.Arguments)
				}
			}
		}
	})
}
