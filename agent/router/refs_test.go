package router_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

func withID(c llm.ToolCall, id string) llm.ToolCall {
	c.ID = id
	return c
}

// A reference in an argument is replaced with the earlier call's full
// output (JSON-escaped where it lands in a string); the record keeps the
// reference, which is the call chain.
func TestReferenceResolved(t *testing.T) {
	var r ran
	tables := `orders, "customers" <joined> ` + strings.Repeat("x", 3000) // longer than the history keeps
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("find_tables", `{}`)),                                           // call_1
		llmtest.ToolCalls(llmtest.Call("write_sql", `{"text":"Use {{call:call_1}} and { call_1 }."}`)), // call_2
		llmtest.Text("Done."),
	)
	g := mustNew(t, router.Config{Model: m, Tools: []tool.Tool{fixedTool(&r, "find_tables", tables), echoTool(&r, "write_sql", "SQL for: ")}})
	res, err := g.Invoke(context.Background(), react.Input("Write the SQL."))
	if err != nil {
		t.Fatal(err)
	}
	want := "Use " + tables + " and { call_1 }."
	if got := r.argsOf("write_sql"); !cmp.Equal(got, []string{want}) {
		t.Fatalf("write_sql received %q", got)
	}
	rec, _ := tool.LookupCall(res.State, react.Calls, "call_2")
	if rec.Arguments != `{"text":"Use {{call:call_1}} and { call_1 }."}` || rec.Result != "SQL for: "+want {
		t.Errorf("record %+v", rec)
	}
	if got := router.References(rec.Arguments); !cmp.Equal(got, []string{"call_1"}) {
		t.Errorf("References = %v", got)
	}
	if finished(t, res.State).Answer != "Done." {
		t.Error("wrong answer")
	}
}

// References the router cannot resolve are not run: the model gets a tool
// error saying which reference is wrong and why.
func TestReferenceRejected(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("broken", `{}`), llmtest.Call("find_tables", `{}`)), // call_1 fails, call_2 succeeds
		llmtest.ToolCalls(
			withID(llmtest.Call("find_tables", `{}`), "c_a"),
			withID(llmtest.Call("write_sql", `{"text":"{{call:nope}}"}`), "c_unknown"),
			withID(llmtest.Call("write_sql", `{"text":"{{call:c_self}}"}`), "c_self"),
			withID(llmtest.Call("write_sql", `{"text":"{{call:c_a}}"}`), "c_sibling"),
			withID(llmtest.Call("write_sql", `{"text":"{{ call:call_1 }}"}`), "c_failed"),
		),
		llmtest.Text("I could not write it."),
	)
	broken := tool.MustFunc("broken", "Always fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}, tool.ReadOnly())
	g := mustNew(t, router.Config{Model: m, Logger: slog.New(slog.DiscardHandler),
		Tools: []tool.Tool{broken, fixedTool(&r, "find_tables", "orders"), echoTool(&r, "write_sql", "")}})
	res, err := g.Invoke(context.Background(), react.Input("Write the SQL."))
	if err != nil {
		t.Fatal(err)
	}
	if n := r.get("write_sql"); n != 0 {
		t.Errorf("write_sql ran %d times", n)
	}
	sent := m.LastRequest().Messages
	for id, want := range map[string]string{
		"c_unknown": "{{call:nope}} refers to no earlier call: no call has the ID \"nope\"; calls with outputs: call_2 (find_tables)",
		"c_self":    "{{call:c_self}} refers to this call itself",
		"c_sibling": "{{call:c_a}} refers to a call of the same reply, which has not finished yet",
		"c_failed":  "{{call:call_1}} refers to a call of broken that failed (disk full)",
	} {
		msg := toolResult(t, sent, id)
		if !msg.IsError || !strings.Contains(msg.Text(), want) || !strings.Contains(msg.Text(), "The call was not run") {
			t.Errorf("%s: the model saw %q (error %v); want it to say %q", id, msg.Text(), msg.IsError, want)
		}
		rec, _ := tool.LookupCall(res.State, react.Calls, id)
		if !strings.HasPrefix(rec.Error, "bad reference: ") {
			t.Errorf("%s: record error %q", id, rec.Error)
		}
	}
	if toolResult(t, sent, "c_a").Text() != "orders" {
		t.Error("the sibling without references did not run")
	}
}

// Outputs that contain references are expanded too; references that loop
// are refused, naming the cycle.
func TestReferenceCycle(t *testing.T) {
	var r ran
	notes := map[string]string{"a": "see {{call:n2}}", "b": "see {{call:n1}}", "c": "base", "d": "wraps {{call:n3}}"}
	note := tool.MustFunc("note", "Returns a stored note.", func(_ context.Context, a textArgs) (string, error) {
		return notes[a.Text], nil
	}, tool.ReadOnly())
	m := llmtest.New().Reply(
		llmtest.ToolCalls(
			withID(llmtest.Call("note", `{"text":"a"}`), "n1"),
			withID(llmtest.Call("note", `{"text":"b"}`), "n2"),
			withID(llmtest.Call("note", `{"text":"c"}`), "n3"),
			withID(llmtest.Call("note", `{"text":"d"}`), "n4"),
		),
		llmtest.ToolCalls(
			withID(llmtest.Call("write_sql", `{"text":"{{call:n1}}"}`), "w1"),
			withID(llmtest.Call("write_sql", `{"text":"{{call:n4}} / {{call:n4}}"}`), "w2"),
		),
		llmtest.Text("done"),
	)
	g := mustNew(t, router.Config{Model: m, Tools: []tool.Tool{note, echoTool(&r, "write_sql", "")}})
	if _, err := g.Invoke(context.Background(), react.Input("go")); err != nil {
		t.Fatal(err)
	}
	sent := m.LastRequest().Messages
	if msg := toolResult(t, sent, "w1"); !msg.IsError || !strings.Contains(msg.Text(), "the references form a cycle (w1 → n1 → n2 → n1)") {
		t.Errorf("w1: the model saw %q", msg.Text())
	}
	if got := r.argsOf("write_sql"); !cmp.Equal(got, []string{"wraps base / wraps base"}) {
		t.Errorf("write_sql received %q", got)
	}
}

func TestReferences(t *testing.T) {
	text := "a {{call:x1}} b {{ call: y-2 }} {{call:x1}} {call:z} {{call:}}"
	if got := router.References(text); !cmp.Equal(got, []string{"x1", "y-2"}) {
		t.Errorf("References = %v", got)
	}
	if router.Ref("x1") != "{{call:x1}}" {
		t.Error(router.Ref("x1"))
	}
}
