package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	cpsqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/runs"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

var resLog = graph.NewKey("log", graph.Concat[string]())

// resCtx is the example run context type of the test graph.
type resCtx struct {
	User string `json:"user"`
}

// resEnv is an API on one SQLite file with a "chat" graph: greet appends
// "hi", route interrupts (asking "what?") when the input was "ask", then
// END.
type resEnv struct {
	t   *testing.T
	api *API
	srv *httptest.Server
	db  *dbsqlite.DB
	// started receives when a "slow" run is running (it then waits
	// until cancelled).
	started chan struct{}
}

// resTenantHeader picks the tenant in these tests.
const resTenantHeader = "X-Test-Tenant"

func newResEnv(t *testing.T, withStore bool) *resEnv {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cpsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); s.Close(); d.Close() })
	reg := runs.NewRegistry(0)
	started := make(chan struct{}, 10)
	if err := reg.Register("chat", runs.GraphSpec{Context: resCtx{}, New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(resLog)
		b.AddNode("greet", func(ctx context.Context, st graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(resLog, "hi")), nil
		})
		b.AddNode("route", func(ctx context.Context, st graph.State) (graph.Output, error) {
			l := resLog.Get(st)
			if len(l) >= 2 && l[len(l)-2] == "slow" {
				started <- struct{}{}
				<-ctx.Done() // until cancelled
				return nil, ctx.Err()
			}
			if len(l) >= 2 && l[len(l)-2] == "ask" {
				v, err := graph.Interrupt[string](ctx, "what?")
				if err != nil {
					return nil, err
				}
				return graph.Writes(graph.Append(resLog, "answer "+v)), nil
			}
			return nil, nil
		})
		b.SetEntry("greet")
		b.AddEdge("greet", "route")
		b.AddEdge("route", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("nested", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		ib := graph.New(resLog)
		ib.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[string](ctx, "name?", graph.ExpectAnswer(json.RawMessage(`{"type":"string"}`)))
			if err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(resLog, "name "+v)), nil
		})
		ib.SetEntry("ask")
		ib.AddEdge("ask", graph.END)
		inner, err := ib.Compile()
		if err != nil {
			return nil, err
		}
		b := graph.New(resLog)
		b.AddNode("prep", func(ctx context.Context, st graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(resLog, "prep")), nil
		})
		b.AddSubgraph("sub", inner)
		b.SetEntry("prep")
		b.AddEdge("prep", "sub")
		b.AddEdge("sub", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	svc, err := runs.New(runs.Config{DB: d, Saver: s, Graphs: reg, Wire: runs.LCWire{}, Converter: runs.LCConverter()})
	if err != nil {
		t.Fatal(err)
	}
	a := &API{DB: d, Runs: svc, Graphs: reg, Saver: s, Version: "1.2.3", Scripted: true,
		Tenant: func(r *http.Request) string {
			if v := r.Header.Get(resTenantHeader); v != "" {
				return v
			}
			return DefaultTenant
		}}
	if withStore {
		a.Store = st
	}
	h := a.Handlers()
	for _, id := range []string{"createRun", "streamRun", "waitRun", "listRuns", "getRun", "deleteRun", "cancelRun", "joinRun", "joinRunStream",
		"createStatelessRun", "streamStatelessRun", "waitStatelessRun", "createRunBatch", "cancelRuns", "joinStatelessRunStream", "joinThreadStream",
		"listModels", "createChatCompletion", "listThreadMessages", "runAgUI", "mcpPost", "mcpGet", "mcpDelete",
		"a2aJSONRPC", "a2aRESTGet", "a2aRESTPost", "a2aRESTDelete", "getA2AAgentCard", "getA2AAssistantCard"} {
		if h[id] == nil { // the run routes are another file's, the wires' (OpenAI, AG-UI, MCP, A2A) other packages'
			h[id] = http.NotFoundHandler()
		}
	}
	mux := http.NewServeMux()
	if err := spec.Register(mux, spec.Routes(), h); err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", spec.Fallback(spec.Routes()))
	e := &resEnv{t: t, api: a, db: d, srv: httptest.NewServer(mux), started: started}
	t.Cleanup(e.srv.Close)
	for _, tenant := range []string{DefaultTenant, "other"} {
		for _, g := range []string{"chat", "nested"} {
			if _, err := d.CreateAssistant(ctx, tenant, db.Assistant{ID: g, GraphID: g, Name: g}, db.IfExistsRaise); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

// do sends a request (body: nil, a string, or a value to encode) and
// returns the status and body.
func (e *resEnv) do(method, path string, body any, hdr ...string) (int, []byte) {
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
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// must sends a request that must answer want, decoding the body into v.
func (e *resEnv) must(want int, v any, method, path string, body any, hdr ...string) {
	e.t.Helper()
	st, b := e.do(method, path, body, hdr...)
	if st != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, st, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// problem sends a request that must fail with status and returns the
// problem (its first error's pointer or parameter is checked when given).
func (e *resEnv) problem(status int, where, method, path string, body any, hdr ...string) wire.Problem {
	e.t.Helper()
	var p wire.Problem
	e.must(status, &p, method, path, body, hdr...)
	if p.Status != status || p.Detail == "" {
		e.t.Fatalf("%s %s: problem %+v", method, path, p)
	}
	if where != "" {
		if len(p.Errors) == 0 {
			e.t.Fatalf("%s %s: no errors in %+v, want one at %s", method, path, p, where)
		}
		f := p.Errors[0]
		if got := f.Pointer + f.Parameter + f.Path; got != where {
			e.t.Fatalf("%s %s: error at %q, want %q (%+v)", method, path, got, where, p)
		}
	}
	return p
}

// run creates a run on thread (made when missing) with input and runs it.
func (e *resEnv) run(tenant, thread, input string) {
	e.t.Helper()
	e.runOn("chat", tenant, thread, input)
}

// runOn is run with another assistant.
func (e *resEnv) runOn(assistant, tenant, thread, input string) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.api.Runs.Create(ctx, nil, runs.CreateRequest{Tenant: tenant, ThreadID: thread, AssistantID: assistant,
		Kwargs: runs.Kwargs{Input: json.RawMessage(input)}, CreateThread: true}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.api.Runs.Advance(ctx, tenant, thread); err != nil {
		e.t.Fatal(err)
	}
}

func TestSystemRoutes(t *testing.T) {
	e := newResEnv(t, false)
	var ok wire.Ok
	e.must(200, &ok, "GET", "/ok?check_db=1", nil)
	if !ok.Ok {
		t.Fatal("ok is false")
	}
	e.problem(422, "check_db", "GET", "/ok?check_db=maybe", nil)
	var info wire.Info
	e.must(200, &info, "GET", "/info", nil)
	if info.Version != "1.2.3" || !info.ScriptedModels || !info.Flags.Assistants || !info.Flags.Crons {
		t.Fatalf("info %+v", info)
	}
	var doc map[string]any
	e.must(200, &doc, "GET", "/openapi.json", nil)
	if doc["openapi"] == nil || doc["paths"].(map[string]any)["/threads/{thread_id}/state"] == nil {
		t.Fatalf("openapi document lacks its version or paths: %v", doc["openapi"])
	}
	e.problem(404, "", "GET", "/nope", nil)
	e.problem(405, "", "DELETE", "/ok", nil)

	// A closed database fails the check with a 503.
	e.db.Close()
	e.problem(503, "", "GET", "/ok?check_db=1", nil)
	e.must(200, nil, "GET", "/ok", nil)
}

// resRefOf is the latest checkpoint of a tenant's thread.
func resRefOf(tenant, thread string) checkpoint.Ref {
	return checkpoint.Ref{ThreadID: runs.ThreadKey(tenant, thread)}
}
