package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaltest"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/queue"
)

// feedbackView is what the tests read of a feedback entry.
type feedbackView struct {
	FeedbackID string          `json:"feedback_id"`
	Key        string          `json:"key"`
	Score      *float64        `json:"score"`
	Comment    string          `json:"comment"`
	Value      api.OnlineValue `json:"value"`
	Source     string          `json:"source"`
}

func contains(values ...string) eval.Criterion {
	b, _ := json.Marshal(map[string]any{"values": values})
	return eval.Criterion{Evaluator: "contains", Params: b}
}

// echoRun runs the echo assistant once on a new thread and returns the
// thread and run IDs once the run has ended.
func echoRun(t *testing.T, url, word string) (thread, run string) {
	t.Helper()
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	xcall(t, "POST", url+"/threads", "application/json", []byte(`{}`), http.StatusOK, &th)
	var rn struct {
		RunID string `json:"run_id"`
	}
	xcall(t, "POST", url+"/threads/"+th.ThreadID+"/runs", "application/json",
		[]byte(`{"assistant_id":"echo","input":{"log":["`+word+`"]}}`), http.StatusOK, &rn)
	xcall(t, "GET", url+"/threads/"+th.ThreadID+"/runs/"+rn.RunID+"/join", "", nil, http.StatusOK, nil)
	return th.ThreadID, rn.RunID
}

func listFeedback(t *testing.T, url, thread, run string) []feedbackView {
	t.Helper()
	var out []feedbackView
	xcall(t, "GET", url+"/threads/"+thread+"/runs/"+run+"/feedback", "", nil, http.StatusOK, &out)
	return out
}

// An echo assistant with online evaluators at sample 1 gets their scores
// as its runs' feedback (source evaluator, the explanation as comment);
// one at sample 0 scores nothing; scoring a run again adds nothing.
func TestOnlineEvaluatorsScoreRuns(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testOnlineScoreRuns(t, filepath.Join(t.TempDir(), "t.db")) })
	t.Run("postgres", func(t *testing.T) {
		url, _, _ := pgSchema(t, "online")
		testOnlineScoreRuns(t, url)
	})
}

func testOnlineScoreRuns(t *testing.T, database string) {
	echo := DefaultAssistantID("echo")
	r := start(t, Config{Database: database, DataDir: t.TempDir(), OnlineEvaluators: map[string][]OnlineEvaluator{
		echo: {
			{Key: "says_echo", Criterion: contains("echo hi"), Sample: 1},
			{Key: "says_bye", Criterion: contains("bye"), Sample: 1},
			{Key: "never", Criterion: contains("echo"), Sample: 0},
		},
	}}, nil)
	thread, run := echoRun(t, r.url, "hi")
	var got []feedbackView
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = listFeedback(t, r.url, thread, run)
		if len(got) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	byKey := map[string]feedbackView{}
	for _, f := range got {
		byKey[f.Key] = f
	}
	if len(got) != 2 {
		t.Fatalf("feedback %+v, want says_echo and says_bye", got)
	}
	if f := byKey["says_echo"]; f.Score == nil || *f.Score != 1 || f.Value.Source != api.OnlineSource || !f.Value.Passed ||
		f.Value.Evaluator != "contains" || f.FeedbackID != api.OnlineFeedbackID(api.DefaultTenant, run, "says_echo") {
		t.Errorf("says_echo: %+v", f)
	}
	if f := byKey["says_bye"]; f.Score == nil || *f.Score != 0 || f.Value.Passed || f.Comment == "" {
		t.Errorf("says_bye: %+v (want score 0 with an explanation)", f)
	}
	// The source is a field of its own, and the list filters by it.
	xcall(t, "POST", r.url+"/threads/"+thread+"/runs/"+run+"/feedback", "application/json", []byte(`{"score":1,"source":"person"}`), http.StatusOK, nil)
	xcall(t, "POST", r.url+"/threads/"+thread+"/runs/"+run+"/feedback", "application/json", []byte(`{"score":1,"source":"robot"}`), http.StatusUnprocessableEntity, nil)
	for source, want := range map[string]int{"evaluator": 2, "person": 1, "api": 0} {
		var only []feedbackView
		xcall(t, "GET", r.url+"/threads/"+thread+"/runs/"+run+"/feedback?source="+source, "", nil, http.StatusOK, &only)
		if len(only) != want || slices.ContainsFunc(only, func(f feedbackView) bool { return f.Source != source }) {
			t.Errorf("source %s: %+v, want %d entries of it", source, only, want)
		}
	}
	xcall(t, "GET", r.url+"/threads/"+thread+"/runs/"+run+"/feedback?source=robot", "", nil, http.StatusUnprocessableEntity, nil)

	// A retried hook, or a second replica, scores the run again: the
	// entry is not duplicated.
	score := r.s.scoreSample(&r.s.sampleAPI)
	for range 2 {
		if err := score(context.Background(), queue.OnlineJob{Tenant: api.DefaultTenant, ThreadID: thread, RunID: run, Key: "says_echo"}); err != nil {
			t.Fatal(err)
		}
	}
	if again := listFeedback(t, r.url, thread, run); len(again) != 3 {
		t.Errorf("after scoring again: %d entries, want the 2 scores and the person's: %+v", len(again), again)
	}
}

// An evaluator at sample 0 scores no run: once the run's sample-1
// marker is stored (the run's jobs are queued together), nothing of the
// sample-0 one is.
func TestOnlineEvaluatorsSampleZero(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), OnlineEvaluators: map[string][]OnlineEvaluator{
		DefaultAssistantID("echo"): {
			{Key: "never", Criterion: contains("echo"), Sample: 0},
			{Key: "marker", Criterion: contains("echo"), Sample: 1},
		},
	}}, nil)
	for i := range 3 {
		thread, run := echoRun(t, r.url, fmt.Sprint("hi", i))
		var got []feedbackView
		for deadline := time.Now().Add(20 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			got = listFeedback(t, r.url, thread, run)
		}
		if len(got) != 1 || got[0].Key != "marker" {
			t.Errorf("run %d: feedback %+v, want the marker only", i, got)
		}
	}
}

// Sampled is deterministic and close to its rate.
func TestSampled(t *testing.T) {
	for _, rate := range []float64{0.1, 0.5, 0.9} {
		n := 0
		for i := range 10000 {
			id := fmt.Sprintf("run-%d", i)
			in := Sampled(id, "k", rate)
			if in != Sampled(id, "k", rate) {
				t.Fatalf("%s: not deterministic", id)
			}
			if in {
				n++
			}
		}
		if got := float64(n) / 10000; math.Abs(got-rate) > 0.02 {
			t.Errorf("rate %v: sampled %v", rate, got)
		}
	}
	if Sampled("x", "k", 0) || !Sampled("x", "k", 1) || Sampled("x", "k", -1) {
		t.Error("rates 0 and 1 must sample none and all")
	}
}

// An llm_judge online evaluator resolves its model among the declared
// ones; its reasoning is the comment. A judge that cannot score leaves an
// entry without a score that says why.
func TestOnlineEvaluatorJudge(t *testing.T) {
	judge := evaltest.Judge(evaltest.Verdict(4, "it echoes the word"), llmtest.Text("not json"))
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), OnlineEvaluators: map[string][]OnlineEvaluator{
		DefaultAssistantID("echo"): {{Key: "judged", Sample: 1, Criterion: eval.Criterion{Evaluator: "llm_judge",
			Params: json.RawMessage(`{"model":"judge","rubric":"echoes the word"}`)}}},
	}}, nil)
	r.s.setModels(&Models{Named: map[string]string{"judge": "llmtest:judge"}, Resolve: func(spec string) (llm.Model, error) {
		if spec != "llmtest:judge" {
			return nil, fmt.Errorf("unexpected spec %q", spec)
		}
		return judge, nil
	}})
	wait := func(thread, run string) feedbackView {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got := listFeedback(t, r.url, thread, run); len(got) > 0 {
				if len(got) != 1 {
					t.Fatalf("feedback %+v, want one entry", got)
				}
				return got[0]
			}
		}
		t.Fatal("no feedback")
		return feedbackView{}
	}
	f := wait(echoRun(t, r.url, "hi"))
	if f.Key != "judged" || f.Score == nil || *f.Score != 0.75 || f.Comment != "4/5: it echoes the word" || f.Value.Evaluator != "llm_judge" || f.Value.Passed {
		t.Errorf("judged: %+v", f)
	}
	f = wait(echoRun(t, r.url, "again"))
	if f.Score != nil || f.Value.Error == "" || f.Value.Passed {
		t.Errorf("a judge that could not score: %+v", f)
	}
}

// The Finished hook stores one job per sampled evaluator of a successful
// run, with what the worker needs to find the run again; a failed run,
// or one outside every sample, stores none.
func TestOnlineHookQueuesSamples(t *testing.T) {
	s := &Server{log: quiet()}
	var jobs []queue.OnlineJob
	s.onlineEnqueue = func(_ context.Context, j queue.OnlineJob) error { jobs = append(jobs, j); return nil }
	s.cfg.OnlineEvaluators = map[string][]OnlineEvaluator{"a": {
		{Key: "all", Criterion: contains("x"), Sample: 1},
		{Key: "none", Criterion: contains("x"), Sample: 0},
	}}
	s.onlineFinished(t.Context(), "t", db.Run{ID: "r1", ThreadID: "th", Status: db.RunSuccess, AssistantID: "a"})
	s.onlineFinished(t.Context(), "t", db.Run{ID: "r2", ThreadID: "th", Status: db.RunError, AssistantID: "a"})
	s.onlineFinished(t.Context(), "t", db.Run{ID: "r3", ThreadID: "th", Status: db.RunSuccess, AssistantID: "other"})
	want := []queue.OnlineJob{{Tenant: "t", ThreadID: "th", RunID: "r1", Key: "all"}}
	if !slices.Equal(jobs, want) {
		t.Fatalf("jobs %+v, want %+v", jobs, want)
	}
}

// A sample being scored when its replica stops is not lost: the job is
// cut (nothing stored), and the next process on the database scores it.
func TestOnlineSampleSurvivesARestart(t *testing.T) {
	database := filepath.Join(t.TempDir(), "t.db")
	cfg := Config{Database: database, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Logger: quiet(), ShutdownGrace: 100 * time.Millisecond,
		OnlineEvaluators: map[string][]OnlineEvaluator{
			DefaultAssistantID("echo"): {{Key: "judged", Sample: 1, Criterion: eval.Criterion{Evaluator: "llm_judge",
				Params: json.RawMessage(`{"model":"judge","rubric":"echoes the word"}`)}}},
		}}
	serve := func(judge llm.Model) *running {
		s, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register("echo", echoGraph(nil)); err != nil {
			t.Fatal(err)
		}
		s.setModels(&Models{Named: map[string]string{"judge": "llmtest:judge"}, Resolve: func(string) (llm.Model, error) { return judge, nil }})
		return serveInBackground(t, s)
	}
	called := make(chan struct{}, 1)
	first := serve(hangingJudge{called})
	thread, run := echoRun(t, first.url, "hi")
	select {
	case <-called:
	case <-time.After(20 * time.Second):
		t.Fatal("the judge was not called")
	}
	first.stop(t)

	second := serve(evaltest.Judge(evaltest.Verdict(5, "it echoes the word")))
	var got []feedbackView
	for deadline := time.Now().Add(20 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = listFeedback(t, second.url, thread, run)
	}
	if len(got) != 1 || got[0].Key != "judged" || got[0].Score == nil || *got[0].Score != 1 {
		t.Fatalf("feedback after the restart %+v, want the judge's score", got)
	}
}

// hangingJudge is a judge model that answers nothing until its call is
// cancelled, as a slow model does when its replica stops.
type hangingJudge struct{ called chan struct{} }

func (hangingJudge) Name() string { return "hanging-judge" }

func (h hangingJudge) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	select {
	case h.called <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (h hangingJudge) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		_, err := h.Generate(ctx, req)
		yield(llm.Chunk{}, err)
	}
}

// BenchmarkOnlineFinished measures what online evaluation adds to a
// finishing run: the sampling decision and storing the sampled jobs in
// the run queue on SQLite (the scoring itself is the workers', here a
// no-op).
func BenchmarkOnlineFinished(b *testing.B) {
	sdb, err := sqlitedb.Open(context.Background(), filepath.Join(b.TempDir(), "q.db"), "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sdb.Close()
	q, err := queue.New(context.Background(), queue.Config{SQLite: sdb.Write, Logger: quiet(),
		Advance: func(context.Context, string, string) (queue.Result, error) { return queue.Result{}, nil },
		Online:  func(context.Context, queue.OnlineJob) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	s := &Server{log: quiet(), onlineEnqueue: q.EnqueueOnline}
	s.cfg.OnlineEvaluators = map[string][]OnlineEvaluator{"a": {
		{Key: "all", Criterion: contains("x"), Sample: 1},
		{Key: "tenth", Criterion: contains("x"), Sample: 0.1},
	}}
	i := 0
	for b.Loop() {
		i++
		s.onlineFinished(context.Background(), "t", db.Run{ID: fmt.Sprint("run-", i), ThreadID: "th", Status: db.RunSuccess, AssistantID: "a"})
	}
}
