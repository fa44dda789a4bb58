package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/server/sse"
)

// xcall sends a JSON request and decodes a JSON answer, failing the test
// on another status than want.
func xcall(t testing.TB, method, url, ctype string, body []byte, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, url, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// experimentView is what the tests read of an experiment.
type experimentView struct {
	ExperimentID string `json:"experiment_id"`
	Status       string `json:"status"`
	Repetitions  int    `json:"repetitions"`
	Progress     struct {
		Total, Done, Passed, Failed int
	} `json:"progress"`
	Summary *struct {
		Cases        int `json:"cases"`
		CasesPassed  int `json:"cases_passed"`
		Trials       int `json:"trials"`
		TrialsPassed int `json:"trials_passed"`
		PassRate     struct {
			Value, Low, High float64
		} `json:"pass_rate"`
	} `json:"summary"`
}

// resultView is one unit's result as the tests read it.
type resultView struct {
	CaseID     string `json:"case_id"`
	Repetition int    `json:"repetition"`
	Passed     bool   `json:"passed"`
	Scores     []struct {
		Evaluator   string  `json:"evaluator"`
		Score       float64 `json:"score"`
		Passed      bool    `json:"passed"`
		Explanation string  `json:"explanation"`
	} `json:"scores"`
	ThreadID  string `json:"thread_id"`
	RunID     string `json:"run_id"`
	Output    string `json:"output"`
	LatencyMS int64  `json:"latency_ms"`
	Error     string `json:"error"`
}

// streamExperiment reads GET /experiments/{id}/stream to its end and
// returns the progress events' "done" counts and the final experiment.
func streamExperiment(t testing.TB, base, id string) ([]int, experimentView) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/experiments/"+id+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	rd := sse.NewReader(resp.Body)
	var dones []int
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("the stream ended without an end event (%v); progress %v", err, dones)
		}
		switch ev.Event {
		case "progress":
			var p struct {
				Status   string `json:"status"`
				Progress struct{ Total, Done int }
			}
			if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
				t.Fatal(err)
			}
			dones = append(dones, p.Progress.Done)
		case "end":
			var e experimentView
			if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
				t.Fatal(err)
			}
			return dones, e
		}
	}
}

// An experiment over HTTP, as a client of the service would run one: the
// planner's eval set imported as a dataset, run twice per case on the
// scripted planner (its questions, plan reviews and approvals answered
// from the cases), progress streamed to the end, every unit's result
// read with its thread and run, and a second experiment compared with the
// first as its baseline.
func TestExperimentOverHTTP(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(dir, "t.db"), DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterApps(catalog.All(), Models{}); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	set, err := os.ReadFile(filepath.Join("..", "apps", "planner", "eval", "planner.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ds struct {
		DatasetID string `json:"dataset_id"`
		CaseCount int    `json:"case_count"`
	}
	xcall(t, "POST", r.url+"/datasets/import", "application/x-ndjson", set, 200, &ds)
	assistant := DefaultAssistantID("planner")

	// Bad requests name the field.
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": assistant}), 422, nil)
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": "nope", "assistant_id": assistant, "repetitions": 1}), 422, nil)
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": "nope", "repetitions": 1}), 422, nil)
	xcall(t, "GET", r.url+"/experiments/nope", "", nil, 404, nil)

	var first experimentView
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"name": "first", "dataset_id": ds.DatasetID,
		"assistant_id": assistant, "repetitions": 2, "concurrency": 3, "metadata": map[string]any{"branch": "main"}}), 201, &first)
	if first.Status != "pending" || first.Progress.Total != 2*ds.CaseCount || first.Repetitions != 2 {
		t.Fatalf("created %+v (dataset of %d cases)", first, ds.CaseCount)
	}
	dones, end := streamExperiment(t, r.url, first.ExperimentID)
	for i := 1; i < len(dones); i++ {
		if dones[i] < dones[i-1] {
			t.Fatalf("progress went back: %v", dones)
		}
	}
	if end.Status != "success" || end.Progress.Done != end.Progress.Total || len(dones) == 0 || dones[len(dones)-1] != end.Progress.Total {
		t.Fatalf("the stream ended with %+v after progress %v", end, dones)
	}
	if end.Summary == nil || end.Summary.Trials != end.Progress.Total || end.Summary.Cases != ds.CaseCount {
		t.Fatalf("summary %+v", end.Summary)
	}
	var results []resultView
	xcall(t, "GET", r.url+"/experiments/"+first.ExperimentID+"/results", "", nil, 200, &results)
	if len(results) != end.Progress.Total {
		t.Fatalf("%d results, want %d", len(results), end.Progress.Total)
	}
	threads := map[string]bool{}
	for i, res := range results {
		if res.ThreadID == "" || res.RunID == "" || len(res.Scores) == 0 || threads[res.ThreadID] {
			t.Fatalf("result %d: %+v (every unit on a fresh thread, with its run and scores)", i, res)
		}
		threads[res.ThreadID] = true
		if !res.Passed {
			t.Errorf("case %s repetition %d failed on the scripted planner: %+v", res.CaseID, res.Repetition, res)
		}
		if i > 0 && res.CaseID == results[i-1].CaseID && res.Repetition != results[i-1].Repetition+1 {
			t.Fatalf("results out of order at %d: %+v", i, results)
		}
		// The unit's thread is a thread of the tenant, readable as any.
		var st struct {
			Values map[string]any `json:"values"`
		}
		xcall(t, "GET", r.url+"/threads/"+res.ThreadID+"/state", "", nil, 200, &st)
		if len(st.Values) == 0 {
			t.Fatalf("the thread of %s/%d has no state", res.CaseID, res.Repetition)
		}
	}
	if end.Progress.Passed != len(results) || end.Summary.PassRate.Value != 1 {
		t.Errorf("passed %d of %d, pass rate %+v", end.Progress.Passed, len(results), end.Summary.PassRate)
	}

	// A second experiment with the first as its baseline: the scripted
	// planner does the same, so nothing regresses or improves.
	var second experimentView
	xcall(t, "POST", r.url+"/experiments", "application/json", jsonBody(map[string]any{"dataset_id": ds.DatasetID, "assistant_id": assistant,
		"repetitions": 1, "baseline_experiment_id": first.ExperimentID}), 201, &second)
	if _, end := streamExperiment(t, r.url, second.ExperimentID); end.Status != "success" {
		t.Fatalf("second experiment ended %s", end.Status)
	}
	var cmp struct {
		Cases []struct {
			ID     string `json:"id"`
			Change string `json:"change"`
		} `json:"cases"`
		Regressions []string `json:"regressions"`
		MeanDelta   struct {
			Value float64 `json:"value"`
		} `json:"mean_delta"`
		Significant bool `json:"significant"`
	}
	xcall(t, "GET", r.url+"/experiments/"+second.ExperimentID+"/compare", "", nil, 200, &cmp)
	if len(cmp.Cases) != ds.CaseCount || len(cmp.Regressions) != 0 || cmp.MeanDelta.Value != 0 || cmp.Significant {
		t.Fatalf("comparison with the baseline: %+v", cmp)
	}
	xcall(t, "GET", r.url+"/experiments/"+first.ExperimentID+"/compare?baseline="+second.ExperimentID, "", nil, 200, &cmp)
	xcall(t, "GET", r.url+"/experiments/"+first.ExperimentID+"/compare", "", nil, 422, nil)

	var list []experimentView
	xcall(t, "GET", r.url+"/experiments?dataset_id="+ds.DatasetID, "", nil, 200, &list)
	if len(list) != 2 || list[0].ExperimentID != second.ExperimentID {
		t.Fatalf("list: %+v", list)
	}
	xcall(t, "GET", r.url+fmt.Sprintf("/experiments?assistant_id=%s&limit=1&offset=1", assistant), "", nil, 200, &list)
	if len(list) != 1 || list[0].ExperimentID != first.ExperimentID {
		t.Fatalf("second page by assistant: %+v", list)
	}
	// An ended experiment cannot be cancelled.
	xcall(t, "POST", r.url+"/experiments/"+first.ExperimentID+"/cancel", "", nil, 409, nil)
}
