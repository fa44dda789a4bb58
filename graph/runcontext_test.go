package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

type userCtx struct {
	User string `json:"user"`
	Tier int    `json:"tier"`
}

// The run context reaches nodes at every depth, survives an interrupt and a
// resume that does not pass it (as in another process), and is replaced by
// a run that passes its own.
func TestRunContextIsSavedAndRestored(t *testing.T) {
	for _, depth := range depths {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("depth%d/%s", depth, mode), func(t *testing.T) {
				log := graph.NewKey("log", graph.Concat[string]())
				build := func() *graph.Graph {
					b := graph.New(log)
					b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
						uc, err := graph.RunContext[userCtx](ctx)
						if err != nil {
							return nil, err
						}
						v, err := graph.Interrupt[string](ctx, "go?")
						if err != nil {
							return nil, err
						}
						return graph.Writes(graph.Append(log, fmt.Sprintf("%s/%d/%s", uc.User, uc.Tier, v))), nil
					})
					b.SetEntry("ask")
					b.AddEdge("ask", graph.END)
					g, _ := atDepth(t, mustCompile(t, b), depth, log)
					return g
				}
				saver := checkpoint.NewMemory()
				opts := append(threadOpts(saver, "ctx"), graph.WithDurability(mode))
				_, err := build().Invoke(context.Background(), nil, append(opts, graph.WithRunContext(userCtx{"ada", 2}))...)
				if !errors.Is(err, graph.ErrInterrupted) {
					t.Fatal(err)
				}
				res, err := build().Invoke(context.Background(), nil, append(opts, graph.WithResume("yes"))...)
				if err != nil {
					t.Fatal(err)
				}
				if got := log.Get(res.State); len(got) != 1 || got[0] != "ada/2/yes" {
					t.Errorf("log %v, want the context the run started with", got)
				}
				// A new run with its own context replaces it.
				_, err = build().Invoke(context.Background(), graph.Writes(graph.Append(log, "turn 2")), append(opts, graph.WithRunContext(userCtx{"bob", 1}))...)
				if !errors.Is(err, graph.ErrInterrupted) {
					t.Fatal(err)
				}
				res, err = build().Invoke(context.Background(), nil, append(opts, graph.WithResume("no"))...)
				if got := log.Get(res.State); err != nil || len(got) != 3 || got[2] != "bob/1/no" {
					t.Errorf("log %v err %v, want bob's context", log.Get(res.State), err)
				}
			})
		}
	}
}

func TestRunContextErrors(t *testing.T) {
	b := graph.New(answer)
	b.AddNode("read", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		_, err := graph.RunContext[userCtx](ctx)
		return nil, err
	})
	b.SetEntry("read")
	b.AddEdge("read", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), nil); !errors.Is(err, graph.ErrNoRunContext) {
		t.Errorf("no context: err = %v", err)
	}
	_, err := g.Invoke(context.Background(), nil, graph.WithRunContext("just a string"))
	if err == nil || errors.Is(err, graph.ErrNoRunContext) {
		t.Errorf("wrong type: err = %v, want a decode error", err)
	}
	if _, err := graph.RunContext[userCtx](context.Background()); err == nil {
		t.Error("outside a node: no error")
	}
}

// A node asking for the run's context of a run that has none (react asks
// before every model call) allocates nothing.
func TestRunContextAbsentAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	b := graph.New(answer)
	var allocs float64
	b.AddNode("read", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		allocs = testing.AllocsPerRun(50, func() {
			if _, err := graph.RunContext[userCtx](ctx); !errors.Is(err, graph.ErrNoRunContext) {
				t.Errorf("err = %v, want ErrNoRunContext", err)
			}
		})
		return nil, nil
	})
	b.SetEntry("read")
	b.AddEdge("read", graph.END)
	if _, err := mustCompile(t, b).Invoke(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("RunContext without a run context allocates %.0f times; want 0", allocs)
	}
}
