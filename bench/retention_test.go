package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
)

// Checkpoint retention: what one thread stores after many turns of a small
// echo graph, with and without a keep-last-20 policy applied every 100
// turns (as the service's sweeper would, a batch at a time).

type retainer interface {
	checkpoint.Saver
	checkpoint.Exporter
	checkpoint.Remover
}

// retentionSavers opens the backends of the retention figures for t:
// memory and SQLite, and PostgreSQL when TRELLIS_TEST_PG_DSN is set.
func retentionSavers(t *testing.T) map[string]func() retainer {
	out := map[string]func() retainer{
		"memory": func() retainer { return checkpoint.NewMemory() },
		"sqlite": func() retainer {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "threads.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	if os.Getenv("TRELLIS_TEST_PG_DSN") != "" {
		out["postgres"] = func() retainer {
			dsn, schema := pgdbtest.Schema(t)
			s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	return out
}

var (
	echoSaid  = graph.NewKey[string]("said")
	echoTurns = graph.NewKey("turns", graph.Sum[int]())
)

// echoGraph answers each input with an echo and counts the turns: a
// last-value key and a reducer key whose blobs are deltas between
// snapshots.
func echoGraph() *graph.Graph {
	b := graph.New(echoSaid, echoTurns)
	b.AddNode("echo", func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(echoSaid.Set("echo: "+echoSaid.Get(s)), echoTurns.Set(1)), nil
	})
	b.SetEntry("echo")
	b.AddEdge("echo", graph.END)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

// storedBytes is what a thread stores, counted through the Saver: each
// checkpoint's JSON without blobs, each distinct blob's data once, and the
// pending writes' values.
func storedBytes(t *testing.T, s retainer, thread string) (bytes, checkpoints int) {
	t.Helper()
	ctx := context.Background()
	nss, err := s.Namespaces(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		seen := map[string]bool{}
		for tup, err := range s.List(ctx, checkpoint.Ref{ThreadID: thread, Namespace: ns}, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			checkpoints++
			cp := tup.Checkpoint
			cp.Blobs = nil
			row, _ := json.Marshal(struct {
				C checkpoint.Checkpoint
				M checkpoint.Metadata
			}{cp, tup.Metadata})
			bytes += len(row)
			for _, b := range tup.Checkpoint.Blobs {
				if id := fmt.Sprint(b.Key, "/", b.Version); !seen[id] {
					seen[id] = true
					bytes += len(b.Data) + len(b.Key) + 16
				}
			}
			for _, w := range tup.Writes {
				bytes += len(w.Value) + len(w.Key) + len(w.TaskID)
			}
		}
	}
	return bytes, checkpoints
}

// retentionRun runs turns turns of the echo graph on a fresh thread of s,
// applying policy (when enabled) every 100 turns and once at the end, and
// returns the stored bytes and checkpoints at half way and at the end.
func retentionRun(t *testing.T, s retainer, turns int, policy checkpoint.Retention) (half, end [2]int, took time.Duration) {
	t.Helper()
	ctx := context.Background()
	g := echoGraph()
	thread := "retention-" + checkpoint.NewID()
	opts := []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread(thread)}
	start := time.Now()
	retain := func() {
		if policy.Enabled() {
			if _, err := checkpoint.Retain(ctx, s, thread, policy, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 1; i <= turns; i++ {
		if _, err := g.Invoke(ctx, graph.Writes(echoSaid.Set(fmt.Sprint("turn ", i))), opts...); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			retain()
		}
		if i == turns/2 {
			retain()
			half[0], half[1] = storedBytes(t, s, thread)
		}
	}
	retain()
	took = time.Since(start)
	end[0], end[1] = storedBytes(t, s, thread)
	// The thread still rebuilds its state from what is kept.
	res, err := g.Invoke(ctx, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if n := echoTurns.Get(res.State); n != turns {
		t.Fatalf("the thread rebuilt %d turns, want %d", n, turns)
	}
	return half, end, took
}

// TestRetentionBoundsThreadSize is the CI-sized figure: 500 turns. With
// keep_last 20 the thread's stored size stops growing (the second half of
// the turns adds nothing); without, it grows with every turn.
// TRELLIS_BENCH_RETENTION=1 runs 10,000 turns and logs the figures;
// TRELLIS_BENCH_RETENTION=keep20 runs only the 10,000 turns with retention.
func TestRetentionBoundsThreadSize(t *testing.T) {
	turns := 500
	if os.Getenv("TRELLIS_BENCH_RETENTION") != "" {
		turns = 10000
	}
	for name, open := range retentionSavers(t) {
		t.Run(name, func(t *testing.T) {
			if os.Getenv("TRELLIS_BENCH_RETENTION") == "keep20" {
				// Only the run with retention (the long run without it
				// takes long on a slow database).
				_, on, took := retentionRun(t, open(), turns, checkpoint.Retention{KeepLast: 20})
				t.Logf("%s, %d turns: keep 20: %d B in %d checkpoints (%s)", name, turns, on[0], on[1], took.Round(time.Millisecond))
				return
			}
			_, off, tookOff := retentionRun(t, open(), turns, checkpoint.Retention{})
			half, on, tookOn := retentionRun(t, open(), turns, checkpoint.Retention{KeepLast: 20})
			t.Logf("%s, %d turns: without retention %d B in %d checkpoints (%s); keep 20: %d B in %d checkpoints (%s)",
				name, turns, off[0], off[1], tookOff.Round(time.Millisecond), on[0], on[1], tookOn.Round(time.Millisecond))
			if on[1] != 20 {
				t.Errorf("with keep 20 the thread has %d checkpoints", on[1])
			}
			if on[0] > half[0]*11/10 {
				t.Errorf("with keep 20 the thread grew from %d B at %d turns to %d B at %d", half[0], turns/2, on[0], turns)
			}
			if off[0] < 10*on[0] {
				t.Errorf("without retention the thread stores %d B, with keep 20 %d B: want at least 10 times less", off[0], on[0])
			}
		})
	}
}
