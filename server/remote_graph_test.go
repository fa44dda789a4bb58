package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

var greeting = graph.NewKey[string]("greeting")

// askerSpec asks a name (an ask_human interrupt) and greets it; starts
// counts the runs of its node that reached the question.
func askerSpec(starts *atomic.Int32) runs.GraphSpec {
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(greeting)
		b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			starts.Add(1)
			name, err := graph.Interrupt[string](ctx, map[string]any{"kind": "ask_human", "question": "What is your name?"})
			if err != nil {
				return nil, err
			}
			return graph.Writes(greeting.Set("Hello, " + name)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// Two servers: a local graph runs the remote server's asker assistant
// over the LangGraph API. The remote's question is a local interrupt with
// the remote's own payload; the local answer resumes the remote thread
// with a Command, and the remote's values come back.
func TestRemoteLangGraphAssistant(t *testing.T) {
	var starts atomic.Int32
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("asker", askerSpec(&starts)); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	a, err := remotegraph.New(remotegraph.Config{Name: "asker", URL: remote.url, Assistant: "asker", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	reply := graph.NewKey[string]("reply")
	b := graph.New(reply)
	b.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		res, err := a.Call(ctx, map[string]any{"greeting": ""})
		if err != nil {
			return nil, err
		}
		return graph.Writes(reply.Set(string(res.Values))), nil
	})
	b.SetEntry("hop")
	b.AddEdge("hop", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local")}
	_, err = g.Invoke(context.Background(), graph.Writes(reply.Set("")), opts...)
	ie, ok := errors.AsType[*graph.InterruptError](err)
	if !ok || len(ie.Interrupts) != 1 || !strings.Contains(string(ie.Interrupts[0].Payload), `"question":"What is your name?"`) {
		t.Fatalf("the first local run: %v; want the remote's question", err)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume("Ada"))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(res.State); !strings.Contains(got, `"greeting":"Hello, Ada"`) {
		t.Errorf("the remote values %s; want the greeting", got)
	}
	if n := starts.Load(); n != 2 {
		t.Errorf("the remote node ran %d times; want 2 (the question, then the answer)", n)
	}
}

// A local run stopped while the remote run works, with the remote kept
// (a server stopping for takeover), is run again with a new Agent, as
// after a restart: it joins the same remote run by its saved ID, and the
// remote graph runs once.
func TestRemoteLangGraphReattach(t *testing.T) {
	var starts atomic.Int32
	release := make(chan struct{})
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("slow", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(greeting)
		b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			starts.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return graph.Writes(greeting.Set("finally")), nil
		})
		b.SetEntry("work")
		b.AddEdge("work", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	errStopping := errors.New("stopping")
	agent := func(keep func(error) bool) *remotegraph.Agent {
		a, err := remotegraph.New(remotegraph.Config{Name: "slow", URL: remote.url, Assistant: "slow", AllowPrivate: true, KeepRemoteOn: keep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		return a
	}
	reply := graph.NewKey[string]("reply")
	hop := func(a *remotegraph.Agent) *graph.Graph {
		b := graph.New(reply)
		b.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			res, err := a.Call(ctx, map[string]any{})
			if err != nil {
				return nil, err
			}
			return graph.Writes(reply.Set(res.RunID + " " + string(res.Values))), nil
		})
		b.SetEntry("hop")
		b.AddEdge("hop", graph.END)
		g, err := b.Compile()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local"), graph.WithDurability(graph.DurabilitySync)}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var firstRun string
	for ev, err := range hop(agent(func(c error) bool { return errors.Is(c, errStopping) })).Stream(ctx, graph.Writes(reply.Set("")), append(opts, graph.WithEvents(graph.EventCustom))...) {
		if err != nil {
			break
		}
		if e, ok := ev.Custom.(remotegraph.Event); ok && e.Status == "created" {
			firstRun = e.RunID
			cancel(errStopping)
		}
	}
	if firstRun == "" {
		t.Fatal("the first local run saw no remote run")
	}
	close(release)
	res, err := hop(agent(nil)).Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(res.State); !strings.HasPrefix(got, firstRun+" ") || !strings.Contains(got, `"greeting":"finally"`) {
		t.Errorf("the resumed hop %q; want run %s's values", got, firstRun)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("the remote graph ran %d times; want once", n)
	}
}

// The person at the top answers through the local server's API: a local
// server's graph hops to the remote server's asker; the local thread
// waits on the remote's question (its own interrupt, as the local API
// shows it), and command.resume on the local thread finishes the remote
// run.
func TestRemoteQuestionAnsweredThroughTheLocalAPI(t *testing.T) {
	var starts atomic.Int32
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register("asker", askerSpec(&starts)); err != nil {
		t.Fatal(err)
	}
	remote := serveInBackground(t, rs)
	a, err := remotegraph.New(remotegraph.Config{Name: "asker", URL: remote.url, Assistant: "asker", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ls, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "l.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Register("hop", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(greeting)
		b.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			res, err := a.Call(ctx, map[string]any{"greeting": ""})
			if err != nil {
				return nil, err
			}
			var v struct {
				Greeting string `json:"greeting"`
			}
			_ = json.Unmarshal(res.Values, &v)
			return graph.Writes(greeting.Set(v.Greeting + " (via the hop)")), nil
		})
		b.SetEntry("hop")
		b.AddEdge("hop", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	local := serveInBackground(t, ls)
	const thread = "7a1c9e2b-3d4f-4a5b-8c6d-0e1f2a3b4c5d"
	if code, body, _ := post(t, local.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	if code, out, _ := post(t, local.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"hop","input":{"greeting":""}}`); code != 200 {
		t.Fatalf("runs/wait: %d %s", code, out)
	}
	_, state, _ := get(t, local.url+"/threads/"+thread+"/state")
	if !strings.Contains(state, `"question":"What is your name?"`) {
		t.Fatalf("the local thread's state %s; want the remote's question as its interrupt", state)
	}
	if code, out, _ := post(t, local.url+"/threads/"+thread+"/runs/wait", `{"assistant_id":"hop","command":{"resume":"Ada"}}`); code != 200 {
		t.Fatalf("resume: %d %s", code, out)
	}
	_, state, _ = get(t, local.url+"/threads/"+thread+"/state")
	if !strings.Contains(state, `"greeting":"Hello, Ada (via the hop)"`) {
		t.Errorf("the local thread after the answer: %s", state)
	}
	if n := starts.Load(); n != 2 {
		t.Errorf("the remote node ran %d times; want 2", n)
	}
}
