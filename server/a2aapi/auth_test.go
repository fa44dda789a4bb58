package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// A tool that needs credentials (tool.RequireAuth) leaves its task
// auth-required, with the tool's request as text and as data; a stream
// ends there; the credentials sent on the task as a data part resume the
// run, which completes with them.
func TestAuthRequired(t *testing.T) {
	e := newEnv(t)
	c := e.client("calendar-a", false)
	task := send(t, c, userText("What is on today?", ""))
	if task.Status.State != a2a.TaskStateAuthRequired || !strings.Contains(text(task.Status.Message), "The tool calendar needs credentials: Give a calendar token.") {
		t.Fatalf("task %v %q; want auth-required with the tool's request", task.Status.State, text(task.Status.Message))
	}
	ints, _ := data(task.Status.Message)["interrupts"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["kind"] == nil || !strings.Contains(text(task.Status.Message), "Scheme: bearer") {
		t.Errorf("the request's data %v", data(task.Status.Message))
	}
	if p, _ := ints[0].(map[string]any)["payload"].(map[string]any); p["kind"] != tool.AuthKind || p["tool"] != "calendar" {
		t.Errorf("the request's payload %v", p)
	}
	var last a2a.Event
	for ev, err := range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if st, ok := last.(*a2a.Task); !ok || st.Status.State != a2a.TaskStateAuthRequired {
		t.Errorf("subscribing to the waiting task ended with %#v; want the task, auth-required", last)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"token": "t-1"}))
	m.TaskID = task.ID
	got := send(t, c, m)
	if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || text(got.Status.Message) != "Signed in with t-1" {
		t.Errorf("after the credentials: %v %q", got.Status.State, text(got.Status.Message))
	}
}

// Across a hop: a local graph calls the remote calendar agent over A2A;
// its auth-required task is a local interrupt carrying the tool's request
// (kind auth_required, so the local wires show auth-required too), and
// the credentials given locally go down on the same task, which completes.
func TestAuthRequiredAcrossAHop(t *testing.T) {
	e := newEnv(t)
	g := remoteGraph(t, remoteAgent(t, e, "calendar-a"), "What is on today?")
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local-1")}
	_, err := g.Invoke(context.Background(), graph.Writes(remoteReply.Set("")), opts...)
	ie, ok := errors.AsType[*graph.InterruptError](err)
	if !ok || len(ie.Interrupts) != 1 {
		t.Fatalf("the local run: %v; want the remote's request as an interrupt", err)
	}
	var req tool.AuthRequest
	if json.Unmarshal(ie.Interrupts[0].Payload, &req) != nil || req.Kind != tool.AuthKind || req.Tool != "calendar" || req.Scheme != "bearer" {
		t.Fatalf("the local interrupt %s; want the calendar tool's request", ie.Interrupts[0].Payload)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(map[string]any{"token": "t-9"}))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := remoteReply.Get(res.State); got != "Signed in with t-9" {
		t.Errorf("the reply %q; want the remote's answer with the credentials given locally", got)
	}
}
