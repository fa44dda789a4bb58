package transcript

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/tool/a2a"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// ev is a remote call's custom event as the tools emit it (their own
// types, so a change of their shape fails here).
func ev(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hopOf(t *testing.T, turn Turn) Hop {
	t.Helper()
	var h Hop
	if err := json.Unmarshal(turn.Data, &h); err != nil {
		t.Fatalf("hop data %s: %v", turn.Data, err)
	}
	return h
}

// A run calls a remote A2A agent, which asks a question; the local run
// waits; the next run answers it, the resumed call re-emits what the first
// run showed and goes on to the remote's answer. Each run shows one hop
// entry (agent, task, updates, question, answer) in place of the raw
// events, and the resumed run does not repeat the first run's updates.
// A status text's data after its first line is left out.
// A LangGraph-API call of the same thread is its own hop, with its remote
// thread and run, and its question is the local wait's.
func TestBuildFoldsARemoteHop(t *testing.T) {
	st := func(state, text string) string {
		return ev(t, a2a.Event{Kind: "remote_status", Agent: "helper", TaskID: "task-1", ContextID: "ctx-1", State: state, Text: text})
	}
	art := ev(t, a2a.Event{Kind: "remote_artifact", Agent: "helper", TaskID: "task-1", ContextID: "ctx-1", Text: "Blue it is."})
	wait := `{"__interrupt__":[{"id":"i1","value":{"kind":"ask_human","question":"Which colour?","agent":"helper","task_id":"task-1"}}]}`
	f := &fakeStore{}
	f.add("r1", `{"input":{"messages":[{"type":"human","content":"hi"}]}}`,
		"values", `{"messages":[{"id":"h1"}]}`,
		"custom", st("submitted", ""),
		"custom", `{"kind":"step_started","title":"Ask"}`,
		"custom", st("working", ""),
		"custom", st("input-required", "Which colour?\n{\"interrupts\":[]}"),
		"values", wait)
	f.add("r2", `{"command":{"resume":"Blue"}}`,
		"custom", st("submitted", ""),
		"custom", st("working", ""),
		"custom", st("input-required", "Which colour?\n{\"interrupts\":[]}"),
		"custom", st("working", "thinking"),
		"custom", art,
		"custom", st("completed", ""),
		"custom", ev(t, remotegraph.Event{Kind: "remote_run", Agent: "lg", ThreadID: "th-9", RunID: "run-a", Status: "created"}),
		"custom", ev(t, remotegraph.Event{Kind: "remote_run", Agent: "lg", ThreadID: "th-9", RunID: "run-a", Status: "interrupted"}),
		"values", `{"__interrupt__":[{"id":"i2","value":{"kind":"ask_human","question":"Proceed?"}}]}`)
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[{"id":"h1","type":"human","content":"hi"}]}`)}
	turns, err := Build(context.Background(), f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"run r1",
		"msg hi",
		"hop Asked remote agent helper (A2A task task-1): input-required — asked: Which colour?",
		`event {"kind":"step_started","title":"Ask"}`,
		"wait Which colour?",
		"run r2",
		"answer[i1] Blue (answered)",
		"hop Asked remote agent helper (A2A task task-1): completed",
		"hop Asked remote agent lg (LangGraph thread th-9, run run-a): interrupted — asked: Proceed?",
		"wait Proceed?",
	}, "\n")
	if got := summary(turns); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	var hops []Hop
	for _, turn := range turns {
		if turn.Kind == KindHop {
			hops = append(hops, hopOf(t, turn))
		}
	}
	if len(hops) != 3 {
		t.Fatalf("%d hops, want 3", len(hops))
	}
	if h := hops[0]; h.Via != "a2a" || h.ContextID != "ctx-1" || len(h.Updates) != 3 || h.Updates[2].Text != "Which colour?" || h.Question != "Which colour?" || h.Outcome != "" {
		t.Errorf("first hop %+v", h)
	}
	if h := hops[1]; len(h.Updates) != 2 || h.Updates[0].State != "working" || h.Outcome != "Blue it is." || h.State != "completed" {
		t.Errorf("resumed hop %+v: want only the new updates and the answer", h)
	}
	if h := hops[2]; h.Via != "langgraph" || h.ThreadID != "th-9" || h.RunID != "run-a" || h.Question != "Proceed?" || len(h.Updates) != 2 {
		t.Errorf("LangGraph hop %+v", h)
	}
}

// Events that only look like a remote call's (no agent, no thread) stay
// plain events.
func TestBuildLeavesOtherEvents(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{}`, "custom", `{"kind":"remote_status","state":"working"}`, "custom", `{"kind":"remote_run","agent":"x"}`, "custom", `"text"`)
	turns, err := Build(context.Background(), f, nil, "x", db.Thread{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range turns {
		if turn.Kind == KindHop {
			t.Errorf("a hop from %s", turn.Data)
		}
	}
	if n := strings.Count(summary(turns), "event "); n != 3 {
		t.Errorf("%d events, want 3:\n%s", n, summary(turns))
	}
}
