package runs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/server/runs"
)

// adapt turns the run service's Advance into the queue's.
func adapt(s *runs.Service) queue.AdvanceFunc {
	return func(ctx context.Context, tenant, thread string) (queue.Result, error) {
		res, err := s.Advance(ctx, tenant, thread)
		switch res {
		case runs.Busy:
			return queue.Result{Outcome: queue.Busy}, err
		case runs.More:
			return queue.Result{Outcome: queue.More}, err
		}
		return queue.Result{Outcome: queue.Done}, err
	}
}

// Runs created on the embedded default — store of record, saver and River
// in one SQLite file — are executed by the queue's jobs, in order per
// thread, and a client joining a run sees its whole log.
func TestQueueRunsThreadsOnOneSQLiteFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	saver, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	riverDB, err := sqlitedb.Open(ctx, path, "river_host", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer riverDB.Close()

	log := graph.NewKey("log", graph.Concat[string]())
	reg := runs.NewRegistry(0)
	err = reg.Register("echo", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(log)
		b.AddNode("echo", func(_ context.Context, s graph.State) (graph.Output, error) {
			l := log.Get(s)
			return graph.Writes(graph.Append(log, "echo "+l[len(l)-1])), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := runs.New(runs.Config{DB: d, Saver: saver, Graphs: reg, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(ctx, queue.Config{SQLite: riverDB.Write, Advance: adapt(svc), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := q.Stop(stop); err != nil {
			t.Error(err)
		}
	}()
	if _, err := d.CreateAssistant(ctx, "acme", db.Assistant{ID: "echo-1", GraphID: "echo", Name: "echo"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, word := range []string{"one", "two", "three"} {
		r, err := svc.Create(ctx, q.Enqueue, runs.CreateRequest{
			Tenant: "acme", ThreadID: "t", AssistantID: "echo-1", CreateThread: true, MultitaskStrategy: runs.Enqueue,
			Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["` + word + `"]}`)},
		})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ids = append(ids, r.ID)
	}
	// Join the last run: it ends when the queue has run all three in order.
	joinCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ended := func(ctx context.Context) (bool, error) {
		r, err := d.GetRun(ctx, "acme", "t", ids[2])
		return err == nil && r.Status.Terminal(), err
	}
	var last db.Event
	for ev, err := range runs.Join(joinCtx, d, svc.Broker(), "acme", ids[2], 0, ended) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if joinCtx.Err() != nil {
		t.Fatal("the queue did not run the thread's runs in time")
	}
	for _, id := range ids {
		if r, err := d.GetRun(ctx, "acme", "t", id); err != nil || r.Status != db.RunSuccess {
			t.Errorf("run %s: %s %v (%s)", id, r.Status, err, r.Error)
		}
	}
	want := `"log":["one","echo one","two","echo two","three","echo three"]`
	if !strings.Contains(string(last.Data), want) {
		t.Errorf("last event %s %s, want values with %s", last.Event, last.Data, want)
	}
}
