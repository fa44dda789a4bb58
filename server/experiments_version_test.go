package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

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
