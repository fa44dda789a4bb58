package graph_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// gatedChain is a→b→c where each node waits for a value on gate.
func gatedChain(gate chan struct{}) (*graph.Graph, *graph.Key[[]string], error) {
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return graph.Writes(graph.Append(log, n)), nil
		})
	}
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", graph.END)
	g, err := b.Compile()
	return g, log, err
}

func TestPauseResumeFromAnotherGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		g, log, err := gatedChain(gate)
		if err != nil {
			t.Fatal(err)
		}
		ctl := graph.NewControl()
		if ctl.Status() != graph.StatusPending {
			t.Fatalf("status before the run = %v", ctl.Status())
		}
		done := make(chan *graph.Result)
		go func() {
			res, _ := g.Invoke(context.Background(), nil, graph.WithControl(ctl))
			done <- res
		}()
		synctest.Wait()
		ctl.Pause()        // requested during step 1
		gate <- struct{}{} // a finishes; the run stops at the boundary
		synctest.Wait()
		if ctl.Status() != graph.StatusPaused || ctl.Steps() != 1 {
			t.Fatalf("after pause: status %v, steps %d; want paused after 1 step", ctl.Status(), ctl.Steps())
		}
		ctl.Resume()
		synctest.Wait()
		if ctl.Status() != graph.StatusRunning {
			t.Fatalf("after resume: status %v", ctl.Status())
		}
		gate <- struct{}{}
		gate <- struct{}{}
		res := <-done
		if ctl.Status() != graph.StatusCompleted || ctl.Steps() != 3 {
			t.Errorf("at the end: status %v, steps %d", ctl.Status(), ctl.Steps())
		}
		if d := cmp.Diff([]string{"a", "b", "c"}, log.Get(res.State)); d != "" {
			t.Error(d)
		}
	})
}

func TestAbortMidStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		g, log, err := gatedChain(gate)
		if err != nil {
			t.Fatal(err)
		}
		ctl := graph.NewControl()
		type out struct {
			res *graph.Result
			err error
		}
		done := make(chan out)
		go func() {
			res, err := g.Invoke(context.Background(), nil, graph.WithControl(ctl))
			done <- out{res, err}
		}()
		gate <- struct{}{} // a commits
		synctest.Wait()    // b is running
		ctl.Abort()
		o := <-done
		if !errors.Is(o.err, graph.ErrAborted) || o.res.Status != graph.StatusCancelled || ctl.Status() != graph.StatusCancelled {
			t.Fatalf("err = %v, status %v / %v; want ErrAborted, cancelled", o.err, o.res.Status, ctl.Status())
		}
		if d := cmp.Diff([]string{"a"}, log.Get(o.res.State)); d != "" {
			t.Errorf("state keeps the last committed step only (-want +got):\n%s", d)
		}
	})
}

func TestAbortWhilePausedAndBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		g, _, err := gatedChain(gate)
		if err != nil {
			t.Fatal(err)
		}
		ctl := graph.NewControl()
		ctl.Pause()
		errc := make(chan error)
		go func() {
			_, err := g.Invoke(context.Background(), nil, graph.WithControl(ctl))
			errc <- err
		}()
		synctest.Wait()
		if ctl.Status() != graph.StatusPaused || ctl.Steps() != 0 {
			t.Fatalf("paused before step 1: status %v steps %d", ctl.Status(), ctl.Steps())
		}
		ctl.Abort()
		if err := <-errc; !errors.Is(err, graph.ErrAborted) {
			t.Fatalf("err = %v", err)
		}
		ctl2 := graph.NewControl()
		ctl2.Abort()
		if _, err := g.Invoke(context.Background(), nil, graph.WithControl(ctl2)); !errors.Is(err, graph.ErrAborted) {
			t.Fatalf("abort before start: err = %v", err)
		}
	})
}

func TestControlServesOneRunAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		g, _, err := gatedChain(gate)
		if err != nil {
			t.Fatal(err)
		}
		ctl := graph.NewControl()
		errc := make(chan error)
		go func() {
			_, err := g.Invoke(context.Background(), nil, graph.WithControl(ctl))
			errc <- err
		}()
		synctest.Wait()
		if _, err := g.Invoke(context.Background(), nil, graph.WithControl(ctl)); err == nil {
			t.Error("a second run took a busy Control")
		}
		close(gate)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}
