package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/cache"
	cachesqlite "github.com/trellis-agents/trellis/cache/sqlite"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

var topicKey = graph.NewKey[string]("topic")

// cachedGraph: lookup (cached; counts its runs) goes to report by a
// Command, and report logs.
func cachedGraph(t *testing.T, runs *atomic.Int32, log *graph.Key[[]string]) *graph.Graph {
	b := graph.New(log, topicKey)
	b.AddNode("lookup", func(_ context.Context, s graph.State) (graph.Output, error) {
		runs.Add(1)
		return graph.Command{Update: graph.Writes(graph.Append(log, "found "+topicKey.Get(s))), Goto: []graph.Target{graph.To("report")}}, nil
	}, graph.WithCache(graph.CachePolicy{}), graph.Destinations("report"))
	b.AddNode("report", logNode(log, "report"))
	b.SetEntry("lookup")
	b.AddEdge("report", graph.END)
	return mustCompile(t, b)
}

// A cached node runs once per input; a hit restores its writes and goto,
// the task event says Cached, and ClearCache makes it run again. A
// subgraph inherits the run's cache.
func TestNodeCache(t *testing.T) {
	for _, depth := range depths {
		t.Run(fmt.Sprintf("depth%d", depth), func(t *testing.T) {
			var runs atomic.Int32
			log := graph.NewKey("log", graph.Concat[string]())
			inner := cachedGraph(t, &runs, log)
			g, _ := atDepth(t, inner, depth, log, topicKey)
			c := cache.NewMemory()
			run := func(topic string) ([]string, bool) {
				t.Helper()
				var cached bool
				var state graph.State
				for ev, err := range g.Stream(context.Background(), graph.Writes(topicKey.Set(topic)), graph.WithNodeCache(c), graph.WithEvents(graph.EventTaskEnd|graph.EventValues)) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Kind == graph.EventTaskEnd && ev.Node == "lookup" {
						cached = ev.Task.Cached
					}
					if ev.Kind == graph.EventValues && ev.Namespace == "" {
						state = ev.State
					}
				}
				return log.Get(state), cached
			}
			first, cached1 := run("owls")
			second, cached2 := run("owls")
			if runs.Load() != 1 || cached1 || !cached2 {
				t.Errorf("lookup ran %d times; cached first %v second %v; want once, then a hit", runs.Load(), cached1, cached2)
			}
			if d := cmp.Diff(first, second); d != "" || !cmp.Equal(first, []string{"found owls", "report"}) {
				t.Errorf("a hit must write what the run wrote (-first +second):\n%s\nfirst %v", d, first)
			}
			run("bats")
			if runs.Load() != 2 {
				t.Errorf("another input: lookup ran %d times in all, want 2", runs.Load())
			}
			if err := inner.ClearCache(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			run("owls")
			if runs.Load() != 3 {
				t.Errorf("after ClearCache: lookup ran %d times in all, want 3", runs.Load())
			}
			if err := inner.ClearCache(context.Background(), c, "lokup"); err == nil {
				t.Error("ClearCache of an unknown node: no error")
			}
		})
	}
}

// A step with a cached task and a failing sibling: resuming (a stand-in for
// a crash) neither runs the cached node again nor needs the cache, since
// its writes are saved as pending writes; on SQLite savers and cache.
func TestNodeCacheWithPendingWrites(t *testing.T) {
	dir := t.TempDir()
	saver, err := sqlite.Open(context.Background(), filepath.Join(dir, "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close() })
	c, err := cachesqlite.Open(context.Background(), filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var runs atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("cached", func(context.Context, graph.State) (graph.Output, error) {
		runs.Add(1)
		return graph.Writes(graph.Append(log, "cached")), nil
	}, graph.WithCache(graph.CachePolicy{Key: func(context.Context, graph.State, any) (string, error) { return "k", nil }}))
	b.AddNode("flaky", func(context.Context, graph.State) (graph.Output, error) {
		if failing.Load() {
			return nil, errors.New("flaky")
		}
		return graph.Writes(graph.Append(log, "flaky")), nil
	})
	for _, n := range []string{"cached", "flaky"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g := mustCompile(t, b)
	opts := append(threadOpts(saver, "cache"), graph.WithNodeCache(c))
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("no error")
	}
	if err := g.ClearCache(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	failing.Store(false)
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil || runs.Load() != 1 || !cmp.Equal(sortedLog(res.State, log), []string{"cached", "flaky"}) {
		t.Errorf("runs %d log %v err %v; want the cached node's pending writes reused", runs.Load(), log.Get(res.State), err)
	}
}

// slowCache delays Set until the step's sibling has failed.
type slowCache struct {
	cache.Cache
	release chan struct{}
}

func (s slowCache) Set(ctx context.Context, ns, key string, v []byte, ttl time.Duration) error {
	<-s.release
	return s.Cache.Set(ctx, ns, key, v, ttl)
}

// A cached task that finished is not undone when a sibling fails while its
// result is being written to the cache.
func TestNodeCacheWriteSurvivesASiblingFailure(t *testing.T) {
	release, ran := make(chan struct{}), make(chan struct{})
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("cached", func(context.Context, graph.State) (graph.Output, error) {
		close(ran)
		return graph.Writes(graph.Append(log, "cached")), nil
	}, graph.WithCache(graph.CachePolicy{}))
	b.AddNode("fails", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		<-ran // the cached node has its result and is writing it
		// The failure cancels the step at once; the write goes on after.
		time.AfterFunc(50*time.Millisecond, func() { close(release) })
		return nil, errors.New("boom")
	})
	for _, n := range []string{"cached", "fails"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g := mustCompile(t, b)
	opts := append(threadOpts(checkpoint.NewMemory(), "c"), graph.WithNodeCache(slowCache{cache.NewMemory(), release}))
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	s, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range s.Tasks {
		if ts.Node == "cached" && !ts.Finished {
			t.Errorf("the cached task was undone by its sibling's failure: %+v", ts)
		}
	}
}
