package crashtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/cache"
	cachesqlite "github.com/trellis-agents/trellis/cache/sqlite"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

// The engine features that keep work in pending writes — a command given
// as run input, a subgraph's command to its parent, a stateful subgraph's
// invocation, a cached node — each survive a SIGKILL in the middle of a
// step, on SQLite: a child process runs the step until a killer node kills
// it, and this process resumes the thread.

const (
	envFeature = "TRELLIS_CRASH_FEATURE" // set: the child runs this feature's scenario
	envPhase   = "TRELLIS_CRASH_PHASE"
	envDir     = "TRELLIS_CRASH_DIR"
)

var (
	flog  = graph.NewKey("flog", graph.Concat[string]())
	fseen = graph.NewKey("fseen", graph.Concat[string]())
	ftop  = graph.NewKey[string]("ftopic")
)

// fenv is one feature test's files and how its graph nodes behave.
type fenv struct {
	dir   string
	saver checkpoint.Saver
	cache cache.Cache
	kill  bool // killer nodes kill the process
}

func (e fenv) side() string { return filepath.Join(e.dir, "side.log") }

// node logs its run to the side log and appends name to flog.
func (e fenv) node(name string) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Output, error) {
		if err := sideEffect(e.side(), name); err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(flog, name)), nil
	}
}

// killer waits until n tasks of namespace ns (the latest checkpoint's) have
// saved their finished writes, then kills the process; when not killing it
// is a plain node.
func (e fenv) killer(ns string, n int) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		if !e.kill {
			return e.node("killer")(ctx, s)
		}
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if tup, err := e.saver.Get(ctx, checkpoint.Ref{ThreadID: thread, Namespace: ns}); err == nil {
				done := 0
				for _, w := range tup.Writes {
					if w.Key == checkpoint.WriteGoto {
						done++
					}
				}
				if done >= n {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

func must(b *graph.Builder) *graph.Graph {
	g, err := b.Compile()
	if err != nil {
		panic(err) // the scenarios' graphs are fixed; a test fails on it at once
	}
	return g
}

// scenario builds a feature's graph and says how each phase runs it.
type scenario struct {
	build  func(e fenv) *graph.Graph
	phases []func(ctx context.Context, e fenv, g *graph.Graph) error // run in children; the last one is killed
	resume func(ctx context.Context, e fenv, g *graph.Graph) (*graph.Result, error)
	want   []string       // flog after the resume, sorted
	runs   map[string]int // side-log counts across all processes
}

func opts(e fenv, extra ...graph.RunOption) []graph.RunOption {
	o := []graph.RunOption{graph.WithCheckpointer(e.saver), graph.WithThread(thread)}
	if e.cache != nil {
		o = append(o, graph.WithNodeCache(e.cache))
	}
	return append(o, extra...)
}

var scenarios = map[string]scenario{
	// ask interrupts beside w; the command answers it, adds "cmd" and goes
	// to extra and killer, which dies once ask's and extra's writes are
	// saved. Resuming without the command applies it once.
	"command": {
		build: func(e fenv) *graph.Graph {
			b := graph.New(flog)
			b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
				if err := sideEffect(e.side(), "ask"); err != nil {
					return nil, err
				}
				v, err := graph.Interrupt[string](ctx, "ok?")
				if err != nil {
					return nil, err
				}
				return graph.Writes(graph.Append(flog, "ask="+v)), nil
			})
			b.AddNode("w", e.node("w"), graph.Destinations("extra", "killer"))
			b.AddNode("extra", e.node("extra"))
			b.AddNode("killer", e.killer("", 4)) // w, the command, ask and extra
			b.AddEdge(graph.START, "ask")
			b.AddEdge(graph.START, "w")
			for _, n := range []string{"ask", "w", "extra", "killer"} {
				b.AddEdge(n, graph.END)
			}
			return must(b)
		},
		phases: []func(context.Context, fenv, *graph.Graph) error{
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, nil, opts(e)...)
				if errors.Is(err, graph.ErrInterrupted) {
					return nil
				}
				return fmt.Errorf("phase 1: %v, want an interrupt", err)
			},
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, nil, opts(e, graph.WithResume("yes"), graph.WithCommand(graph.Command{
					Update: graph.Writes(graph.Append(flog, "cmd")), Goto: []graph.Target{graph.To("extra"), graph.To("killer")}}))...)
				return err
			},
		},
		resume: func(ctx context.Context, e fenv, g *graph.Graph) (*graph.Result, error) {
			return g.Invoke(ctx, nil, opts(e)...)
		},
		want: []string{"ask=yes", "cmd", "extra", "killer", "w"},
		runs: map[string]int{"ask": 2, "w": 1, "extra": 1, "killer": 1},
	},
	// agentA's work node runs, then it hands over to agentB by a command to
	// the parent, while killer waits beside it at the top level.
	"parent-command": {
		build: func(e fenv) *graph.Graph {
			sb := graph.New(flog)
			sb.AddNode("work", e.node("work"))
			sb.AddNode("handoff", func(context.Context, graph.State) (graph.Output, error) {
				return graph.Command{Parent: true, Goto: []graph.Target{graph.To("agentB")}, Update: graph.Writes(graph.Append(flog, "handoff"))}, nil
			})
			sb.SetEntry("work")
			sb.AddEdge("work", "handoff")
			sb.AddEdge("handoff", graph.END)
			b := graph.New(flog)
			b.AddSubgraph("agentA", must(sb), graph.Destinations("agentB"))
			b.AddNode("killer", e.killer("", 1))
			b.AddNode("agentB", e.node("agentB"))
			b.AddEdge(graph.START, "agentA")
			b.AddEdge(graph.START, "killer")
			b.AddEdge("killer", graph.END)
			b.AddEdge("agentB", graph.END)
			return must(b)
		},
		phases: []func(context.Context, fenv, *graph.Graph) error{
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, nil, opts(e)...)
				return err
			},
		},
		resume: func(ctx context.Context, e fenv, g *graph.Graph) (*graph.Result, error) {
			return g.Invoke(ctx, nil, opts(e)...)
		},
		want: []string{"agentB", "handoff", "killer", "work"},
		runs: map[string]int{"work": 1, "agentB": 1, "killer": 1},
	},
	// A stateful agent remembers topics; the second invocation is killed
	// after remember committed inside the subgraph.
	"stateful": {
		build: func(e fenv) *graph.Graph {
			sb := graph.New(flog, fseen, ftop)
			sb.AddNode("remember", func(_ context.Context, s graph.State) (graph.Output, error) {
				if err := sideEffect(e.side(), "remember"); err != nil {
					return nil, err
				}
				return graph.Writes(graph.Append(fseen, ftop.Get(s))), nil
			})
			sb.AddNode("killer", func(ctx context.Context, s graph.State) (graph.Output, error) {
				if e.kill && ftop.Get(s) == "bats" {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
				return nil, nil
			})
			sb.AddNode("report", func(_ context.Context, s graph.State) (graph.Output, error) {
				return graph.Writes(graph.Append(flog, fmt.Sprintf("%s:%v", ftop.Get(s), fseen.Get(s)))), nil
			})
			sb.SetEntry("remember")
			sb.AddEdge("remember", "killer")
			sb.AddEdge("killer", "report")
			sb.AddEdge("report", graph.END)
			b := graph.New(flog, ftop)
			b.AddSubgraph("agent", must(sb), graph.Stateful())
			b.SetEntry("agent")
			b.AddEdge("agent", graph.END)
			return must(b)
		},
		phases: []func(context.Context, fenv, *graph.Graph) error{
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, graph.Writes(ftop.Set("owls")), opts(e)...)
				return err
			},
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, graph.Writes(ftop.Set("bats")), opts(e)...)
				return err
			},
		},
		resume: func(ctx context.Context, e fenv, g *graph.Graph) (*graph.Result, error) {
			return g.Invoke(ctx, nil, opts(e)...)
		},
		want: []string{"bats:[owls bats]", "owls:[owls]"},
		runs: map[string]int{"remember": 2},
	},
	// A cached node finishes beside killer; after the kill, the resume
	// reuses its pending writes, and a new run with the same input hits
	// the cache file the first process wrote.
	"cache": {
		build: func(e fenv) *graph.Graph {
			b := graph.New(flog)
			b.AddNode("cached", e.node("cached"), graph.WithCache(graph.CachePolicy{Key: func(context.Context, graph.State, any) (string, error) { return "k", nil }}))
			b.AddNode("killer", e.killer("", 1))
			b.AddEdge(graph.START, "cached")
			b.AddEdge(graph.START, "killer")
			b.AddEdge("cached", graph.END)
			b.AddEdge("killer", graph.END)
			return must(b)
		},
		phases: []func(context.Context, fenv, *graph.Graph) error{
			func(ctx context.Context, e fenv, g *graph.Graph) error {
				_, err := g.Invoke(ctx, nil, opts(e)...)
				return err
			},
		},
		resume: func(ctx context.Context, e fenv, g *graph.Graph) (*graph.Result, error) {
			if _, err := g.Invoke(ctx, nil, opts(e)...); err != nil {
				return nil, err
			}
			return g.Invoke(ctx, graph.Writes(), opts(e)...) // a new run: cached is a hit
		},
		want: []string{"cached", "cached", "killer", "killer"},
		runs: map[string]int{"cached": 1, "killer": 2},
	},
}

// openFeature opens the scenario's saver and cache in dir.
func openFeature(ctx context.Context, dir string, kill bool) (fenv, func(), error) {
	s, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
	if err != nil {
		return fenv{}, nil, err
	}
	c, err := cachesqlite.Open(ctx, filepath.Join(dir, "cache.db"))
	if err != nil {
		s.Close()
		return fenv{}, nil, err
	}
	return fenv{dir: dir, saver: s, cache: c, kill: kill}, func() { c.Close(); s.Close() }, nil
}

// featureChild runs one phase of a scenario; the last phase is killed.
func featureChild() int {
	ctx := context.Background()
	sc := scenarios[os.Getenv(envFeature)]
	var phase int
	fmt.Sscan(os.Getenv(envPhase), &phase)
	last := phase == len(sc.phases)-1
	e, closeFn, err := openFeature(ctx, os.Getenv(envDir), last)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer closeFn()
	if err := sc.phases[phase](ctx, e, sc.build(e)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 4
	}
	if last {
		fmt.Fprintln(os.Stderr, "child: the run ended instead of being killed")
		return 5
	}
	return 0
}

func TestFeaturesSurviveACrash(t *testing.T) {
	for _, name := range []string{"command", "parent-command", "stateful", "cache"} {
		sc := scenarios[name]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for phase := range sc.phases {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envFeature+"="+name, envPhase+"="+fmt.Sprint(phase), envDir+"="+dir)
				out, err := cmd.CombinedOutput()
				killed := false
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					killed = ee.Sys().(syscall.WaitStatus).Signaled()
				}
				if last := phase == len(sc.phases)-1; last != killed || (!last && err != nil) {
					t.Fatalf("phase %d: err %v (killed %v)\n%s", phase, err, killed, out)
				}
			}
			ctx := context.Background()
			e, closeFn, err := openFeature(ctx, dir, false)
			if err != nil {
				t.Fatal(err)
			}
			defer closeFn()
			res, err := sc.resume(ctx, e, sc.build(e))
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(flog.Get(res.State))
			sort.Strings(got)
			if d := cmp.Diff(sc.want, got); d != "" {
				t.Errorf("state after the resume (-want +got):\n%s", d)
			}
			runs := countLines(t, e.side())
			for n, want := range sc.runs {
				if runs[n] != want {
					t.Errorf("%s ran %d times across the processes, want %d (all: %v)", n, runs[n], want, runs)
				}
			}
		})
	}
}
