package remotegraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// keyedRemote is a LangGraph-API server that keeps the runs it creates,
// with their metadata, and lists them newest first. Its first run
// creation creates the run and then holds the response until the caller
// gives up, as a remote whose caller died before it read the run's ID.
type keyedRemote struct {
	mu   sync.Mutex
	runs []map[string]any // oldest first
	held chan struct{}    // closed when the first creation is held
	once sync.Once
}

func (k *keyedRemote) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) { reply(w, map[string]any{}) })
	mux.HandleFunc("POST /threads/{thread}/runs", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Metadata map[string]any `json:"metadata"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		k.mu.Lock()
		run := map[string]any{"run_id": "run-" + strconv.Itoa(len(k.runs)+1), "metadata": body.Metadata, "status": "success"}
		k.runs = append(k.runs, run)
		k.mu.Unlock()
		first := false
		k.once.Do(func() { first = true })
		if first {
			close(k.held)
			<-r.Context().Done()
			return
		}
		reply(w, run)
	})
	mux.HandleFunc("GET /threads/{thread}/runs", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		k.mu.Lock()
		defer k.mu.Unlock()
		out := []map[string]any{}
		for i := len(k.runs) - 1; i >= 0 && len(out) < max(limit, 1); i-- {
			out = append(out, k.runs[i])
		}
		reply(w, out)
	})
	mux.HandleFunc("GET /threads/{thread}/runs/{run}", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]any{"status": "success"})
	})
	mux.HandleFunc("GET /threads/{thread}/runs/{run}/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: end\ndata: null\n\n"))
	})
	mux.HandleFunc("GET /threads/{thread}/state", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]any{"values": map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "done"}}}, "interrupts": []any{}})
	})
	return mux
}

// runOnce runs node in a one-node graph on thread t1 of saver from the
// start, and cancels the run when stop is closed.
func runOnce(t *testing.T, saver checkpoint.Saver, node func(ctx context.Context) (string, error), stop <-chan struct{}) (string, error) {
	return runOn(t, saver, node, stop, true)
}

// rerun runs the graph of runOnce again from where its run stopped.
func rerun(t *testing.T, saver checkpoint.Saver, node func(ctx context.Context) (string, error)) (string, error) {
	return runOn(t, saver, node, nil, false)
}

func runOn(t *testing.T, saver checkpoint.Saver, node func(ctx context.Context) (string, error), stop <-chan struct{}, fresh bool) (string, error) {
	t.Helper()
	reply := graph.NewKey[string]("reply")
	b := graph.New(reply)
	b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		s, err := node(ctx)
		if err != nil {
			return nil, err
		}
		return graph.Writes(reply.Set(s)), nil
	})
	b.SetEntry("call")
	b.AddEdge("call", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-done:
		}
	}()
	var input graph.Update
	if fresh {
		input = graph.Writes(reply.Set(""))
	}
	res, err := g.Invoke(ctx, input, graph.WithCheckpointer(saver), graph.WithThread("t1"), graph.WithDurability(graph.DurabilitySync))
	if err != nil {
		return "", err
	}
	return reply.Get(res.State), nil
}

func keyedAgent(t *testing.T, url string) *remotegraph.Agent {
	t.Helper()
	a, err := remotegraph.New(remotegraph.Config{Name: "greeter", URL: url, Assistant: "greeter", AllowPrivate: true,
		KeepRemoteOn: func(error) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// A call whose process stopped after the remote created the run, before
// the run's ID was saved, finds that run by its key when the node runs
// again, instead of creating the round's run a second time.
func TestCallJoinsTheRunItsCrashedCreationLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	k := &keyedRemote{held: make(chan struct{})}
	srv := httptest.NewServer(k.handler())
	defer srv.Close()
	a := keyedAgent(t, srv.URL)
	saver := checkpoint.NewMemory()
	call := func(ctx context.Context) (string, error) {
		res, err := a.Call(ctx, map[string]any{"messages": []any{}})
		if err != nil {
			return "", err
		}
		return res.RunID + ":" + res.Text, nil
	}
	if _, err := runOnce(t, saver, call, k.held); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped call returned %v; want context.Canceled", err)
	}
	got, err := rerun(t, saver, call)
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.runs) != 1 || got != "run-1:done" {
		t.Fatalf("the remote has %d runs and the call returned %q; want one run, run-1:done", len(k.runs), got)
	}
	if key, _ := k.runs[0]["metadata"].(map[string]any)[remotegraph.MetaRunKey].(string); key == "" {
		t.Errorf("the run was created without %s in its metadata: %v", remotegraph.MetaRunKey, k.runs[0]["metadata"])
	}
}

// Start inside a node does the same: a re-run of the node whose Start's
// answer was lost joins the run Start created.
func TestStartJoinsTheRunItsCrashedCreationLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	k := &keyedRemote{held: make(chan struct{})}
	srv := httptest.NewServer(k.handler())
	defer srv.Close()
	a := keyedAgent(t, srv.URL)
	saver := checkpoint.NewMemory()
	start := func(ctx context.Context) (string, error) {
		return graph.Durable(ctx, "start", func(ctx context.Context) (string, error) {
			return a.Start(ctx, "remote-thread", map[string]any{"messages": []any{}}, "")
		})
	}
	if _, err := runOnce(t, saver, start, k.held); err == nil {
		t.Fatal("the stopped start did not fail")
	}
	got, err := rerun(t, saver, start)
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.runs) != 1 || got != "run-1" {
		t.Fatalf("the remote has %d runs and Start returned %q; want one run, run-1", len(k.runs), got)
	}
}

// A list that fails for another reason than a missing endpoint fails the
// creation rather than risk a second run.
func TestStartFailsWhenTheRunsCannotBeListed(t *testing.T) {
	defer goleak.VerifyNone(t)
	var creates int
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	mux.HandleFunc("GET /threads/{thread}/runs", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "database down", http.StatusInternalServerError)
	})
	mux.HandleFunc("POST /threads/{thread}/runs", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		creates++
		mu.Unlock()
		_, _ = w.Write([]byte(`{"run_id":"run-1"}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	a := keyedAgent(t, srv.URL)
	_, err := runOnce(t, checkpoint.NewMemory(), func(ctx context.Context) (string, error) {
		return a.Start(ctx, "remote-thread", map[string]any{}, "")
	}, nil)
	mu.Lock()
	n := creates
	mu.Unlock()
	if err == nil || n != 0 {
		t.Fatalf("Start returned %v after %d creations; want an error and none", err, n)
	}
	// Outside a node there is no key: Start creates without looking.
	if _, err := a.Start(context.Background(), "remote-thread", map[string]any{}, ""); err != nil {
		t.Fatal(err)
	}
}
