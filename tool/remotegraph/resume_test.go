package remotegraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// lgRemote is a LangGraph-API server with one run whose stream has five
// custom events (ids 1 to 5). Its first stream connection sends the
// first three and then hangs, as a remote still working; later ones send
// the rest after Last-Event-ID and the end.
type lgRemote struct {
	mu      sync.Mutex
	joins   []string // the Last-Event-ID of each stream connection
	creates int
}

func (l *lgRemote) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) { reply(w, map[string]any{}) })
	mux.HandleFunc("POST /threads/{thread}/runs", func(w http.ResponseWriter, _ *http.Request) {
		l.mu.Lock()
		l.creates++
		l.mu.Unlock()
		reply(w, map[string]any{"run_id": "run-1"})
	})
	mux.HandleFunc("GET /threads/{thread}/runs/{run}", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]any{"status": "success"})
	})
	mux.HandleFunc("GET /threads/{thread}/state", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]any{"values": map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "done"}}}, "interrupts": []any{}})
	})
	mux.HandleFunc("GET /threads/{thread}/runs/{run}/stream", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
		l.mu.Lock()
		l.joins = append(l.joins, r.Header.Get("Last-Event-ID"))
		first := len(l.joins) == 1
		l.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		var b bytes.Buffer
		for i := max(after, 0) + 1; i <= 5; i++ {
			if first && i > 3 {
				break
			}
			fmt.Fprintf(&b, "event: custom\nid: %d\ndata: {\"i\":%d}\n\n", i, i)
		}
		if !first {
			b.WriteString("event: end\ndata: null\n\n")
		}
		_, _ = w.Write(b.Bytes())
		w.(http.Flusher).Flush()
		if first {
			<-r.Context().Done()
		}
	})
	return mux
}

// stepSaver is a memory saver that reports the pending writes it saves.
type stepSaver struct {
	*checkpoint.Memory
	saw func([]checkpoint.PendingWrite)
}

func (s stepSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, task string, ws []checkpoint.PendingWrite) error {
	err := s.Memory.PutWrites(ctx, ref, task, ws)
	s.saw(ws)
	return err
}

func (s stepSaver) AppendWrites(ctx context.Context, ref checkpoint.Ref, task string, ws []checkpoint.PendingWrite) error {
	err := s.Memory.AppendWrites(ctx, ref, task, ws)
	s.saw(ws)
	return err
}

// A node that runs again after its process stopped mid-stream rejoins the
// remote run's stream after the last event it saved (here, saved when the
// stream went quiet), so no remote event is passed on twice locally.
func TestRejoinAfterTheSavedEvent(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := &lgRemote{}
	srv := httptest.NewServer(l.handler())
	defer srv.Close()
	errStopping := errors.New("stopping")
	agent := func() *remotegraph.Agent {
		a, err := remotegraph.New(remotegraph.Config{Name: "greeter", URL: srv.URL, Assistant: "greeter", AllowPrivate: true,
			SaveEvery: 1000, SaveInterval: 5 * time.Millisecond,
			KeepRemoteOn: func(cause error) bool { return errors.Is(cause, errStopping) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		return a
	}
	reply := graph.NewKey[string]("reply")
	build := func(a *remotegraph.Agent) *graph.Graph {
		b := graph.New(reply)
		b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			res, err := a.Call(ctx, map[string]any{"messages": []any{}})
			if err != nil {
				return nil, err
			}
			return graph.Writes(reply.Set(res.Text)), nil
		})
		b.SetEntry("call")
		b.AddEdge("call", graph.END)
		g, err := b.Compile()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	saved := make(chan struct{})
	var once sync.Once
	saver := stepSaver{Memory: checkpoint.NewMemory(), saw: func(ws []checkpoint.PendingWrite) {
		for _, w := range ws {
			if bytes.Contains(w.Value, []byte(`\"seen\":\"3\"`)) || bytes.Contains(w.Value, []byte(`"seen":"3"`)) {
				once.Do(func() { close(saved) })
			}
		}
	}}
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("t1"), graph.WithDurability(graph.DurabilitySync), graph.WithEvents(graph.EventCustom)}
	var got []int
	collect := func(ctx context.Context, g *graph.Graph, input graph.Update) (graph.State, error) {
		var last graph.State
		for ev, err := range g.Stream(ctx, input, opts...) {
			if err != nil {
				return last, err
			}
			if e, ok := ev.Custom.(remotegraph.Event); ok && e.Kind == remotegraph.KindCustom {
				var d struct{ I int }
				_ = json.Unmarshal(e.Data, &d)
				got = append(got, d.I)
			}
		}
		return last, nil
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	noMark := errors.New("no mark saved")
	watchdog := time.AfterFunc(time.Minute, func() { cancel(noMark) }) // a guard against a hang, not a speed check
	defer watchdog.Stop()
	go func() {
		select {
		case <-saved:
			cancel(errStopping) // the process stops once event 3 is saved
		case <-ctx.Done():
		}
	}()
	if _, err := collect(ctx, build(agent()), graph.Writes(reply.Set(""))); err == nil {
		t.Fatal("the stopped run did not fail")
	}
	if errors.Is(context.Cause(ctx), noMark) {
		t.Fatal("the call saved no mark of the stream after its first three events")
	}
	if _, err := collect(context.Background(), build(agent()), nil); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Errorf("remote events passed on %v, want each of 1..5 once", got)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if fmt.Sprint(l.joins) != "[-1 3]" || l.creates != 1 {
		t.Errorf("stream joins after %v and %d runs created; want -1 then 3, one run", l.joins, l.creates)
	}
}
