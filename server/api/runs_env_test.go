package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/internal/runtest"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
)

var (
	stepLog  = graph.NewKey("log", graph.Concat[string]())
	chatMsgs = llm.NewMessagesKey("messages")
)

// runEnv is the run API on one SQLite file, served by httptest; runs are
// advanced by goroutines the Enqueuer starts (joined at cleanup).
type runEnv struct {
	t     *testing.T
	srv   *httptest.Server
	api   *API
	db    *dbsqlite.DB
	model *llmtest.Model
	gate  chan struct{} // the "slow" step waits for it
	slow  chan string   // a run reaching the slow step reports here
	wg    sync.WaitGroup
}

// The "steps" graph: "greet" appends "hi"; "route" reads the run's input
// (the entry before greet's): "ask" interrupts and appends the answer,
// "slow" waits on the gate, "fail" fails. The "chat" graph asks the
// scripted model with the messages.
func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close(); d.Close() })
	e := &runEnv{t: t, db: d, model: llmtest.New(llmtest.WithChunkSize(4)), gate: make(chan struct{}), slow: make(chan string, 10)}
	reg := runs.NewRegistry(0)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Register("steps", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(stepLog)
		b.AddNode("greet", func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(stepLog, "hi")), nil
		})
		b.AddNode("route", func(ctx context.Context, st graph.State) (graph.Output, error) {
			l, marker := stepLog.Get(st), ""
			if len(l) >= 2 {
				marker = l[len(l)-2]
			}
			switch marker {
			case "ask":
				v, err := graph.Interrupt[string](ctx, "what?")
				if err != nil {
					return nil, err
				}
				return graph.Writes(graph.Append(stepLog, "answer "+v)), nil
			case "slow":
				e.slow <- marker
				select {
				case <-e.gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			case "fail":
				return nil, errors.New("the route step failed on purpose")
			}
			return graph.Writes(graph.Append(stepLog, "done")), nil
		})
		b.SetEntry("greet")
		b.AddEdge("greet", "route")
		b.AddEdge("route", graph.END)
		return b.Compile()
	}}))
	must(reg.Register("chat", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(chatMsgs)
		b.AddNode("bot", func(ctx context.Context, st graph.State) (graph.Output, error) {
			resp, err := llm.Call(ctx, e.model, &llm.Request{Messages: chatMsgs.Get(st)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(chatMsgs, resp.Message)), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}))
	quiet := slog.New(slog.DiscardHandler)
	svc, err := runs.New(runs.Config{DB: d, Saver: saver, Graphs: reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond,
		Wire: runs.LCWire{}, Converter: runs.LCConverter(), Log: quiet})
	must(err)
	for _, a := range []db.Assistant{{ID: "steps-a", GraphID: "steps", Name: "steps"}, {ID: "chat-a", GraphID: "chat", Name: "chat"}} {
		_, err := d.CreateAssistant(ctx, DefaultTenant, a, db.IfExistsRaise)
		must(err)
	}
	bg, stop := context.WithCancel(ctx)
	e.api = &API{DB: d, Runs: svc, Graphs: reg, Saver: saver, Enqueue: runtest.Enqueuer(bg, svc, &e.wg)}
	mux := http.NewServeMux()
	handlers := e.api.runHandlers()
	var routes []spec.Route
	for _, r := range spec.Routes() {
		if handlers[r.OperationID] != nil {
			routes = append(routes, r)
		}
	}
	must(spec.Register(mux, routes, handlers))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		stop()
		select {
		case <-e.gate:
		default:
			close(e.gate)
		}
		e.wg.Wait()
	})
	return e
}

// do sends a request and returns the status, headers and body.
func (e *runEnv) do(method, path string, body any, hdr ...string) (int, http.Header, []byte) {
	e.t.Helper()
	resp := e.open(context.Background(), method, path, body, hdr...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// open sends a request and returns the response unread.
func (e *runEnv) open(ctx context.Context, method, path string, body any, hdr ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// events reads a whole SSE stream.
func (e *runEnv) events(resp *http.Response) []sse.Event {
	e.t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("stream answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var out []sse.Event
	r := sse.NewReader(resp.Body)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			e.t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
}

// run reads a run through the API.
func (e *runEnv) run(thread, id string) map[string]any {
	e.t.Helper()
	st, _, b := e.do("GET", "/threads/"+thread+"/runs/"+id, nil)
	if st != http.StatusOK {
		e.t.Fatalf("GET run: %d %s", st, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// waitStatus polls the run until it has status want.
func (e *runEnv) waitStatus(thread, id, want string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.run(thread, id)["status"]
		if got == want {
			return
		}
		if time.Now().After(deadline) || (got != "pending" && got != "running") {
			r, _ := e.db.GetRun(context.Background(), DefaultTenant, thread, id)
			e.t.Fatalf("run %s is %v (%s), want %s", id, got, r.Error, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// names lists the events' names.
func names(evs []sse.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event
	}
	return out
}

// decode unmarshals JSON or fails the test.
func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func llmText(s string) llmtest.Turn { return llmtest.Text(s) }
