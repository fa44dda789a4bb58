package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// answerSpec is a graph that answers every message with the run context's
// "answer" (an assistant version's context says which).
func answerSpec() runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("answer", func(ctx context.Context, st graph.State) (graph.Output, error) {
			rc, err := graph.RunContext[map[string]any](ctx)
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(msgs, llm.Assistant(fmt.Sprint(rc["answer"])))), nil
		})
		b.SetEntry("answer")
		b.AddEdge("answer", graph.END)
		return b.Compile()
	}}
}

// Two versions of one assistant side by side: an experiment pinned to
// version 1 runs version 1's context although version 2 is the latest,
// one left unpinned runs version 2, each shows the version it ran, and
// comparing the second with the first (its baseline) shows the cases
// version 2 broke. A version the assistant does not have is refused.
func TestExperimentPinsAssistantVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("answer", answerSpec()); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)

	set := `{"name": "colours", "criteria": [{"evaluator": "exact"}]}
{"id": "sky", "input": {"message": "What colour is the sky?"}, "expect": {"output": "blue"}}
{"id": "sea", "input": {"message": "What colour is the sea?"}, "expect": {"output": "blue"}}
`
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", r.url+"/datasets/import", "application/x-ndjson", []byte(set), 200, &ds)
	xcall(t, "POST", r.url+"/assistants", "application/json", jsonBody(map[string]any{"assistant_id": "colourist", "graph_id": "answer",
		"context": map[string]any{"answer": "blue"}}), 200, nil)
	xcall(t, "PATCH", r.url+"/assistants/colourist", "application/json", jsonBody(map[string]any{"context": map[string]any{"answer": "red"}}), 200, nil)

	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"assistant_version": 7, "repetitions": 1}), 422, nil)
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"assistant_version": -1, "repetitions": 1}), 422, nil)

	type pinned struct {
		experimentView
		AssistantVersion int `json:"assistant_version"`
	}
	var v1, latest pinned
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"assistant_version": 1, "repetitions": 1}), 201, &v1)
	if v1.AssistantVersion != 1 {
		t.Fatalf("created %+v: want assistant_version 1", v1)
	}
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"repetitions": 1, "baseline_experiment_id": v1.ExperimentID}), 201, &latest)
	if _, end := streamExperiment(t, r.url, v1.ExperimentID); end.Status != "success" || end.Progress.Passed != 2 {
		t.Fatalf("the experiment on version 1 ended %+v, want both cases passed", end)
	}
	if _, end := streamExperiment(t, r.url, latest.ExperimentID); end.Status != "success" || end.Progress.Passed != 0 {
		t.Fatalf("the experiment on the latest version ended %+v, want both cases failed", end)
	}
	var got pinned
	xcall(t, "GET", r.url+"/experiments/"+v1.ExperimentID, "", nil, 200, &got)
	if got.AssistantVersion != 1 {
		t.Fatalf("read back %+v: want assistant_version 1", got)
	}
	var unpinned pinned
	xcall(t, "GET", r.url+"/experiments/"+latest.ExperimentID, "", nil, 200, &unpinned)
	if unpinned.AssistantVersion != 0 {
		t.Fatalf("the unpinned experiment shows assistant_version %d", unpinned.AssistantVersion)
	}
	var results []resultView
	xcall(t, "GET", r.url+"/experiments/"+v1.ExperimentID+"/results", "", nil, 200, &results)
	for _, res := range results {
		if res.Output != "blue" {
			t.Fatalf("version 1 answered %q on %s", res.Output, res.CaseID)
		}
	}
	var cmp struct {
		Regressions []string `json:"regressions"`
	}
	xcall(t, "GET", r.url+"/experiments/"+latest.ExperimentID+"/compare", "", nil, 200, &cmp)
	if len(cmp.Regressions) != 2 {
		t.Fatalf("comparison of the latest version with version 1: regressions %v, want both cases", cmp.Regressions)
	}
}

// shadeAskerSpec is a graph that asks which shade (an interrupt of kind
// "shade") and answers "<shade> <answer>", where answer is read from the
// assistant's config when the graph is built: what a version's config
// says reaches the run only if that version's graph is built.
func shadeAskerSpec() runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(_ context.Context, a runs.Assistant) (*graph.Graph, error) {
		var cfg struct {
			Answer string `json:"answer"`
		}
		if err := a.Configurable(&cfg); err != nil {
			return nil, err
		}
		b := graph.New(msgs)
		b.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			shade, err := graph.Interrupt[string](ctx, map[string]any{"kind": "shade", "question": "Which shade?"})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(msgs, llm.Assistant(shade+" "+cfg.Answer))), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// twoGraphs serves an assistant "colourist" whose version 1 runs shadeAskerSpec
// with config answer "blue" and whose version 2 (the latest) runs
// answerSpec with context answer "red".
func twoGraphs(t *testing.T) *running {
	t.Helper()
	dir := t.TempDir()
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("answer", answerSpec()); err != nil {
		t.Fatal(err)
	}
	if err := s.Register("asker", shadeAskerSpec()); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	xcall(t, "POST", r.url+"/assistants", "application/json", jsonBody(map[string]any{"assistant_id": "colourist", "graph_id": "asker",
		"config": map[string]any{"configurable": map[string]any{"answer": "blue"}}}), 200, nil)
	xcall(t, "PATCH", r.url+"/assistants/colourist", "application/json", jsonBody(map[string]any{"graph_id": "answer",
		"context": map[string]any{"answer": "red"}}), 200, nil)
	return r
}

// Two versions of one assistant on two graphs: an experiment pinned to
// version 1 runs version 1's graph, built with version 1's config, through
// its interrupt (the answer's run keeps the version), although version 2,
// of another graph, is the latest; the unpinned one runs version 2, and
// the comparison shows the difference.
func TestExperimentPinsVersionOfAnotherGraph(t *testing.T) {
	r := twoGraphs(t)
	set := `{"name": "shades", "criteria": [{"evaluator": "exact"}]}
{"id": "sky", "input": {"message": "What colour is the sky?"}, "answers": [{"kind": "shade", "value": "light"}], "expect": {"output": "light blue"}}
{"id": "sea", "input": {"message": "What colour is the sea?"}, "answers": [{"kind": "shade", "value": "deep"}], "expect": {"output": "deep blue"}}
`
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", r.url+"/datasets/import", "application/x-ndjson", []byte(set), 200, &ds)
	var v1, latest experimentView
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"assistant_version": 1, "repetitions": 1}), 201, &v1)
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "colourist",
		"repetitions": 1, "baseline_experiment_id": v1.ExperimentID}), 201, &latest)
	if _, end := streamExperiment(t, r.url, v1.ExperimentID); end.Status != "success" || end.Progress.Passed != 2 {
		t.Fatalf("the experiment on version 1 ended %+v, want both cases passed", end)
	}
	if _, end := streamExperiment(t, r.url, latest.ExperimentID); end.Status != "success" || end.Progress.Passed != 0 {
		t.Fatalf("the experiment on the latest version ended %+v, want both cases failed", end)
	}
	var results []resultView
	xcall(t, "GET", r.url+"/experiments/"+v1.ExperimentID+"/results", "", nil, 200, &results)
	want := map[string]string{"sky": "light blue", "sea": "deep blue"}
	for _, res := range results {
		if res.Output != want[res.CaseID] {
			t.Fatalf("version 1 answered %q on %s, want %q", res.Output, res.CaseID, want[res.CaseID])
		}
		var rs []map[string]any
		xcall(t, "GET", r.url+"/threads/"+res.ThreadID+"/runs", "", nil, 200, &rs)
		if len(rs) != 2 {
			t.Fatalf("case %s: %d runs on its thread, want the question's and the answer's", res.CaseID, len(rs))
		}
		for _, run := range rs {
			if run["assistant_version"] != float64(1) {
				t.Fatalf("case %s: run %v shows assistant_version %v, want 1 (the answer keeps the version of the run it resumes)", res.CaseID, run["run_id"], run["assistant_version"])
			}
		}
	}
	xcall(t, "GET", r.url+"/experiments/"+latest.ExperimentID+"/results", "", nil, 200, &results)
	for _, res := range results {
		if res.Output != "red" {
			t.Fatalf("the latest version answered %q on %s, want red", res.Output, res.CaseID)
		}
	}
	var cmp struct {
		Regressions []string `json:"regressions"`
	}
	xcall(t, "GET", r.url+"/experiments/"+latest.ExperimentID+"/compare", "", nil, 200, &cmp)
	if len(cmp.Regressions) != 2 {
		t.Fatalf("comparison of the latest version with version 1: regressions %v, want both cases", cmp.Regressions)
	}
}

// lastMessage is the text of the last message of a /runs/wait answer.
func lastMessage(t *testing.T, res map[string]any) string {
	t.Helper()
	msgs, _ := res["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("the run's values have no messages: %v", res)
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// A run names an assistant version (a Trellis extension): that version's
// graph runs with its config, the run shows the version, the thread's
// state reads through that graph, and the answer to its interrupt keeps
// the version; a run naming none on a fresh thread runs the latest and
// shows no version; an unknown version is a 422 naming the field.
func TestRunNamesAssistantVersion(t *testing.T) {
	r := twoGraphs(t)
	msg := func(text string) map[string]any {
		return map[string]any{"messages": []map[string]any{{"type": "human", "content": text}}}
	}
	xcall(t, "POST", r.url+"/threads", "application/json", jsonBody(map[string]any{"thread_id": "t1"}), 200, nil)
	var problem struct {
		Errors []struct {
			Pointer string `json:"pointer"`
			Detail  string `json:"detail"`
		} `json:"errors"`
	}
	xcall(t, "POST", r.url+"/threads/t1/runs/wait", "application/json", jsonBody(map[string]any{"assistant_id": "colourist",
		"assistant_version": 7, "input": msg("sky?")}), 422, &problem)
	if len(problem.Errors) != 1 || problem.Errors[0].Pointer != "/assistant_version" || !strings.Contains(problem.Errors[0].Detail, "versions") {
		t.Fatalf("an unknown version: %+v, want one error at /assistant_version saying how to list the versions", problem)
	}
	xcall(t, "POST", r.url+"/threads/t1/runs/wait", "application/json", jsonBody(map[string]any{"assistant_id": "colourist",
		"assistant_version": -2, "input": msg("sky?")}), 422, nil)

	var res map[string]any
	xcall(t, "POST", r.url+"/threads/t1/runs/wait", "application/json", jsonBody(map[string]any{"assistant_id": "colourist",
		"assistant_version": 1, "input": msg("sky?")}), 200, &res)
	if _, asked := res["__interrupt__"]; !asked {
		t.Fatalf("version 1 did not ask: %v", res)
	}
	var state struct {
		Next []string `json:"next"`
	}
	xcall(t, "GET", r.url+"/threads/t1/state", "", nil, 200, &state)
	if len(state.Next) != 1 || state.Next[0] != "ask" {
		t.Fatalf("the thread's state shows next %v, want [ask] (read through version 1's graph)", state.Next)
	}
	xcall(t, "POST", r.url+"/threads/t1/runs/wait", "application/json", jsonBody(map[string]any{"assistant_id": "colourist",
		"command": map[string]any{"resume": "light"}}), 200, &res)
	if got := lastMessage(t, res); got != "light blue" {
		t.Fatalf("the answer's run ended with %q, want \"light blue\" (version 1's graph and config)", got)
	}
	var rs []map[string]any
	xcall(t, "GET", r.url+"/threads/t1/runs", "", nil, 200, &rs)
	if len(rs) != 2 || rs[0]["assistant_version"] != float64(1) || rs[1]["assistant_version"] != float64(1) {
		t.Fatalf("runs of t1: %v, want two, both of assistant_version 1", rs)
	}

	xcall(t, "POST", r.url+"/threads", "application/json", jsonBody(map[string]any{"thread_id": "t2"}), 200, nil)
	xcall(t, "POST", r.url+"/threads/t2/runs/wait", "application/json", jsonBody(map[string]any{"assistant_id": "colourist",
		"input": msg("sky?")}), 200, &res)
	if got := lastMessage(t, res); got != "red" {
		t.Fatalf("a run naming no version answered %q, want red (the latest)", got)
	}
	var rs2 []map[string]any
	xcall(t, "GET", r.url+"/threads/t2/runs", "", nil, 200, &rs2)
	if _, shown := rs2[0]["assistant_version"]; len(rs2) != 1 || shown {
		t.Fatalf("runs of t2: %v, want one without assistant_version", rs2)
	}
}

// gateSpec answers "blue"; each run reports its start on started and
// waits for release to close.
func gateSpec(started chan<- struct{}, release <-chan struct{}) runs.GraphSpec {
	msgs := llm.NewMessagesKey("messages")
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(msgs)
		b.AddNode("answer", func(ctx context.Context, st graph.State) (graph.Output, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return graph.Writes(graph.Append(msgs, llm.Assistant("blue"))), nil
		})
		b.SetEntry("answer")
		b.AddEdge("answer", graph.END)
		return b.Compile()
	}}
}

// An experiment scores with the dataset's criteria as they were when it
// was created: criteria changed while its first unit runs (one unit at a
// time) do not score its later units.
func TestExperimentKeepsItsCriteria(t *testing.T) {
	dir := t.TempDir()
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}, 1), make(chan struct{})
	if err := s.Register("gate", gateSpec(started, release)); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	set := `{"name": "colours", "criteria": [{"evaluator": "exact"}]}
{"id": "sky", "input": {"message": "What colour is the sky?"}, "expect": {"output": "blue"}}
{"id": "sea", "input": {"message": "What colour is the sea?"}, "expect": {"output": "blue"}}
`
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	xcall(t, "POST", r.url+"/datasets/import", "application/x-ndjson", []byte(set), 200, &ds)
	xcall(t, "POST", r.url+"/assistants", "application/json", jsonBody(map[string]any{"assistant_id": "gate", "graph_id": "gate"}), 200, nil)
	var e experimentView
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "gate",
		"repetitions": 1, "concurrency": 1}), 201, &e)
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the experiment's first unit did not start")
	}
	xcall(t, "PATCH", r.url+"/datasets/"+ds.DatasetID, "application/json", jsonBody(map[string]any{
		"criteria": []map[string]any{{"evaluator": "contains", "params": map[string]any{"values": []string{"green"}}}}}), 200, nil)
	close(release)
	if _, end := streamExperiment(t, r.url, e.ExperimentID); end.Status != "success" || end.Progress.Passed != 2 {
		t.Fatalf("the experiment ended %+v, want both cases passed on the criteria it was created with", end)
	}
	var results []resultView
	xcall(t, "GET", r.url+"/experiments/"+e.ExperimentID+"/results", "", nil, 200, &results)
	for _, res := range results {
		if len(res.Scores) != 1 || res.Scores[0].Evaluator != "exact" {
			t.Fatalf("case %s scored by %+v, want exact alone", res.CaseID, res.Scores)
		}
	}
}
