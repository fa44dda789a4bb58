package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// Environment of the child process.
const (
	envChild   = "TRELLIS_CRASH_CHILD" // set: this process is the one that dies
	envBackend = "TRELLIS_CRASH_BACKEND"
	envTarget  = "TRELLIS_CRASH_TARGET" // SQLite path or PostgreSQL DSN
	envSchema  = "TRELLIS_CRASH_SCHEMA"
	envMode    = "TRELLIS_CRASH_MODE"
	envSideLog = "TRELLIS_CRASH_SIDELOG"
	thread     = "crash"
	workers    = 5
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(child())
	}
	if os.Getenv(envFeature) != "" {
		os.Exit(featureChild())
	}
	if os.Getenv(envWorkflow) != "" {
		os.Exit(workflowChild())
	}
	if os.Getenv(envParallel) != "" {
		os.Exit(parallelChild())
	}
	os.Exit(m.Run())
}

var results = graph.NewKey("results", graph.Concat[string]())

// sideEffect appends one line to the side log and syncs it: a record of
// what really ran that survives the process.
func sideEffect(path, what string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, what); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// build is START → prep → (killer, w0..w4 in parallel) → done → END. In the
// child, killer waits until the workers' pending writes are saved (or, in
// async mode, for a while) and then kills the process.
func build(saver checkpoint.Saver, sideLog string, kill bool) (*graph.Graph, error) {
	b := graph.New(results)
	node := func(name string) graph.NodeFunc {
		return func(context.Context, graph.State) (graph.Output, error) {
			if err := sideEffect(sideLog, name); err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(results, name)), nil
		}
	}
	b.AddNode("prep", node("prep"))
	b.AddNode("done", node("done"))
	b.SetEntry("prep")
	var all []string
	for i := range workers {
		w := fmt.Sprintf("w%d", i)
		b.AddNode(w, node(w))
		all = append(all, w)
	}
	b.AddNode("killer", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if kill {
			waitForSiblings(ctx, saver)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal ends the process
		}
		return node("killer")(ctx, s)
	})
	all = append(all, "killer")
	for _, n := range all {
		b.AddEdge("prep", n)
	}
	b.AddJoin("done", all...)
	b.AddEdge("done", graph.END)
	return b.Compile(graph.WithCheckpointer(saver), graph.WithThread(thread))
}

// waitForSiblings polls the saver until every worker's pending writes are
// stored, for at most three seconds (async mode may not have flushed them).
func waitForSiblings(ctx context.Context, saver checkpoint.Saver) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		tup, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread})
		if err == nil {
			finished := map[string]bool{}
			for _, w := range tup.Writes {
				if w.Key == checkpoint.WriteGoto {
					finished[w.TaskID] = true
				}
			}
			if len(finished) >= workers {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mode(name string) graph.Durability {
	if name == "async" {
		return graph.DurabilityAsync
	}
	return graph.DurabilitySync
}

func open(ctx context.Context, backend, target, schema string) (checkpoint.Saver, func(), error) {
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, target)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	case "postgres":
		s, err := postgres.Open(ctx, target, postgres.WithSchema(schema))
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", backend)
}

// child runs the graph until killer kills it; returning at all is a failure.
func child() int {
	ctx := context.Background()
	saver, closeFn, err := open(ctx, os.Getenv(envBackend), os.Getenv(envTarget), os.Getenv(envSchema))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer closeFn()
	g, err := build(saver, os.Getenv(envSideLog), true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	_, err = g.Invoke(ctx, nil, graph.WithDurability(mode(os.Getenv(envMode))))
	fmt.Fprintln(os.Stderr, "child: the run ended instead of being killed:", err)
	return 4
}

func countLines(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out[strings.TrimSpace(sc.Text())]++
	}
	return out
}

func TestCrashAndResume(t *testing.T) {
	type backend struct {
		name, target string
	}
	var backends []backend
	backends = append(backends, backend{name: "sqlite"})
	if dsn := os.Getenv(testenv.PostgresVar); dsn != "" || testenv.Required() {
		backends = append(backends, backend{name: "postgres", target: testenv.PostgresDSN(t)})
	} else {
		t.Logf("PostgreSQL crash test skipped: set %s to run it", testenv.PostgresVar)
	}
	for _, be := range backends {
		for _, m := range []string{"sync", "async"} {
			t.Run(be.name+"/"+m, func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				sideLog := filepath.Join(dir, "side.log")
				target, schema := be.target, ""
				if be.name == "sqlite" {
					target = filepath.Join(dir, "threads.db")
				} else {
					schema = testenv.Name(t, "crash", 48)
					t.Cleanup(func() { dropSchema(t, target, schema) })
				}
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envChild+"=1", envBackend+"="+be.name, envTarget+"="+target,
					envSchema+"="+schema, envMode+"="+m, envSideLog+"="+sideLog)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
					t.Fatalf("child did not die by a signal: %v\n%s", err, out)
				}
				before := countLines(t, sideLog)
				if before["prep"] != 1 || before["killer"] != 0 {
					t.Fatalf("before the resume: %v", before)
				}

				saver, closeFn, err := open(ctx, be.name, target, schema)
				if err != nil {
					t.Fatal(err)
				}
				defer closeFn()
				g, err := build(saver, sideLog, false)
				if err != nil {
					t.Fatal(err)
				}
				res, err := g.Invoke(ctx, nil, graph.WithDurability(mode(m)))
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"prep", "killer", "w0", "w1", "w2", "w3", "w4", "done"}
				if d := cmp.Diff(want, results.Get(res.State)); d != "" {
					t.Errorf("final state (-want +got):\n%s", d)
				}
				after := countLines(t, sideLog)
				t.Logf("node runs across both processes: %v (before the kill: %v)", after, before)
				for _, n := range want {
					limit := 1
					if m == "async" && strings.HasPrefix(n, "w") {
						limit = 2 // the last step may be redone
					}
					if after[n] < 1 || after[n] > limit {
						t.Errorf("%s ran %d times in %s mode, want 1..%d", n, after[n], m, limit)
					}
				}
				if m == "sync" && before[workersDone(before)] == 0 {
					t.Errorf("no worker had finished before the kill: %v", before)
				}
			})
		}
	}
}

// workersDone returns a worker that ran before the kill, if any.
func workersDone(runs map[string]int) string {
	for i := range workers {
		if w := fmt.Sprintf("w%d", i); runs[w] > 0 {
			return w
		}
	}
	return "none"
}

func dropSchema(t *testing.T, dsn, schema string) {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}
