package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/server/db"
)

// With JoinStepWrites, a durable step on the SQLite saver is one appended
// row in one write transaction, fenced by the run's lease check (the
// transaction hook) and committing whatever events are buffered then: no
// step after the first rewrites the task's writes.
func TestJoinedDurableStepsAppend(t *testing.T) {
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	e := newEnv(t)
	const steps = 4
	if err := e.reg.Register("steps", GraphSpec{New: func(context.Context, Assistant) (*graph.Graph, error) {
		b := graph.New(svcLog)
		b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			var done []string
			for i := range steps {
				graph.Emit(ctx, map[string]int{"before": i})
				v, err := graph.Durable(ctx, "piece", func(context.Context) (string, error) {
					return strings.Repeat("x", i+1), nil
				})
				if err != nil {
					return nil, err
				}
				done = append(done, v)
			}
			return graph.Writes(graph.Append(svcLog, done...)), nil
		})
		b.SetEntry("work")
		b.AddEdge("work", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.CreateAssistant(context.Background(), "acme", db.Assistant{ID: "steps-a", GraphID: "steps", Name: "S"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{DB: e.db, Saver: e.saver, Graphs: e.reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond, JoinStepWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	r := e.mustCreate("acme", "durable", "steps-a", Kwargs{Input: []byte(`{"log":["start"]}`), StreamMode: []string{"custom", "values"}}, "")
	rec.Take()
	if got := e.advance("acme", "durable"); got != Idle {
		t.Fatalf("advance = %v, want Idle", got)
	}
	txs := rec.Take()
	stop()
	if r = e.run("acme", "durable", r.ID); r.Status != db.RunSuccess {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	custom := 0
	for _, ev := range e.events("acme", r.ID) {
		if ev.Event == "custom" {
			custom++
		}
	}
	if custom != steps {
		t.Errorf("%d custom events stored, want %d", custom, steps)
	}
	appends, rewrites := 0, 0
	for _, tx := range txs {
		if !tx.Wrote() {
			continue
		}
		var lease, insertsWrites, deletesWrites bool
		for _, st := range tx.Stmts {
			// The lease's token read (LeaseToken) or compared (a fenced
			// UPDATE) on the run's row.
			lease = lease || strings.Contains(st.SQL, "SELECT lease_token FROM trellis_runs") ||
				strings.Contains(st.SQL, "lease_token = $") || strings.Contains(st.SQL, "lease_token = ?")
			insertsWrites = insertsWrites || strings.Contains(st.SQL, "INSERT INTO writes")
			deletesWrites = deletesWrites || strings.Contains(st.SQL, "DELETE FROM writes")
		}
		switch {
		case insertsWrites && !deletesWrites:
			appends++
			if !lease {
				t.Errorf("an appended step committed without the lease check: %v", tx.Stmts)
			}
		case insertsWrites:
			rewrites++
		}
	}
	// The first step's save writes the task's writes whole; the others
	// append one row each.
	if appends != steps-1 {
		t.Errorf("%d appended steps and %d rewrites, want %d appends", appends, rewrites, steps-1)
	}
}
