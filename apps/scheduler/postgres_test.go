package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// pgSchema returns a fresh schema name for the test, dropped at the end.
func pgSchema(t *testing.T, dsn string) string {
	t.Helper()
	schema := testenv.Name(t, fmt.Sprint(time.Now().UnixNano()%1e9), pgdb.MaxIdentifierLen)
	t.Cleanup(func() {
		pool, err := pgdb.Connect(context.Background(), dsn, "")
		if err != nil {
			return
		}
		defer pool.Close()
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
	})
	return schema
}

// TestPostgresThreadsKeepTheirOwnCalendars: the app on PostgreSQL, two
// threads of one database, each with its own week; migrations run again
// change nothing; concurrent seeds of one scope seed it once.
func TestPostgresThreadsKeepTheirOwnCalendars(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := pgSchema(t, dsn)
	ctx := context.Background()
	app, err := New(ctx, Config{Model: Script(), Database: dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	saver := checkpoint.NewMemory()
	for thread, form := range map[string]map[string]any{
		"alice": {"max_slots": 6, "first": "math", "friday_free": true},
		"bob":   {"max_slots": 2, "first": "cs", "friday_free": false},
	} {
		tctx := apps.WithScope(ctx, thread)
		opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread)}
		res, _ := app.Graph.Invoke(tctx, app.Input(""), opts...)
		for i := 0; len(res.Interrupts) > 0 && i < 10; i++ {
			answers := map[string]any{}
			for _, in := range res.Interrupts {
				answers[in.ID] = autoAnswer(in, form)
			}
			res, err = app.Graph.Invoke(tctx, nil, append(opts, graph.WithResumeMap(answers))...)
		}
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("%s: %v %v", thread, res.Status, err)
		}
	}
	// A second store on the same schema: the migration is not applied
	// again, and it sees the same data.
	st, err := OpenPostgres(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Load(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Load(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Items[21].Placed() || a.Items[22].Placed() || b.Items[21].Placed() || !b.Items[22].Placed() {
		t.Errorf("alice #21 %v #22 %v; bob #21 %v #22 %v: each thread's week should follow its own answers",
			a.Items[21].Placed(), a.Items[22].Placed(), b.Items[21].Placed(), b.Items[22].Placed())
	}
	// Ten seeds of a new scope at once: one seeds, the others find it.
	var wg sync.WaitGroup
	seeded := make(chan bool, 10)
	for range 10 {
		wg.Go(func() {
			ok, err := st.Seed(ctx, "carol", Sample())
			if err != nil {
				t.Error(err)
			}
			seeded <- ok
		})
	}
	wg.Wait()
	close(seeded)
	n := 0
	for ok := range seeded {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of 10 concurrent seeds seeded the scope, want 1", n)
	}
	if c, err := st.Load(ctx, "carol"); err != nil || len(c.Items) != len(Sample().Items) {
		t.Errorf("carol: %v", err)
	}
}

// Task classes on PostgreSQL: written through Apply (created, then
// updated), read back by Load, deleted with the scope.
func TestPostgresTaskClasses(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := pgSchema(t, dsn)
	ctx := context.Background()
	st, err := OpenPostgres(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seed(ctx, "dana", Sample()); err != nil {
		t.Fatal(err)
	}
	for i, days := range [][]int{{5}, {4, 5}} {
		out, err := st.Apply(ctx, "dana", UpsertClassName, fmt.Sprintf("call-%d", i), func(s *Schedule) (*Schedule, error) {
			return s.UpsertClass(Class{Name: "cs", ExcludedDays: days})
		})
		if err != nil || !strings.Contains(out, `task class "cs" saved`) {
			t.Fatalf("upsert %v: %q, %v", days, out, err)
		}
	}
	sch, err := st.Load(ctx, "dana")
	if err != nil || !slices.Equal(sch.Classes["cs"].ExcludedDays, []int{4, 5}) {
		t.Fatalf("classes after two upserts: %+v, %v", sch.Classes, err)
	}
	if ok, err := st.DeleteScope(ctx, "dana"); err != nil || !ok {
		t.Errorf("DeleteScope: %v, %v", ok, err)
	}
	if _, err := st.Load(ctx, "dana"); err != ErrNoSchedule {
		t.Errorf("after DeleteScope: %v", err)
	}
}
