package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/runs"
)

// bearer adds an API key to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession opens an MCP session on /mcp with key ("" for none).
func mcpSession(t *testing.T, url, key string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{}
	if key != "" {
		hc.Transport = bearer(key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// /mcp sits behind the API keys: without one nothing connects; with B's
// key the tools are B's assistants, never A's, A's assistant cannot be
// called, and the run B makes lands in B's tenant.
func TestMCPUsesTheKeysTenant(t *testing.T) {
	database := filepath.Join(t.TempDir(), "t.db")
	keyA, keyB := mkKey(t, database, "tenant-a"), mkKey(t, database, "tenant-b")
	r := start(t, Config{Database: database, DataDir: t.TempDir()}, nil)
	A := client{t: t, base: r.url, key: keyA}
	code, body, _ := A.do("POST", "/assistants", "", `{"graph_id":"echo","name":"secret of A"}`)
	field(t, code, body, "assistant_id")

	if _, err := mcpSession(t, r.url, ""); err == nil {
		t.Error("an MCP session opened without an API key")
	}
	sa, err := mcpSession(t, r.url, keyA)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := mcpSession(t, r.url, keyB)
	if err != nil {
		t.Fatal(err)
	}
	names := func(s *mcp.ClientSession) []string {
		res, err := s.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := strings.Join(names(sa), ","); !strings.Contains(got, "secret_of_A") {
		t.Fatalf("A's tools %s: want A's assistant", got)
	}
	if got := strings.Join(names(sb), ","); strings.Contains(got, "secret") || got == "" {
		t.Fatalf("B's tools %s: want B's default assistants only", got)
	}
	if _, err := sb.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret_of_A", Arguments: map[string]any{"log": []string{"x"}}}); err == nil {
		t.Error("B called A's assistant")
	}
	res, err := sb.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"log": []string{"from B"}}})
	if err != nil || res.IsError {
		t.Fatalf("B's echo: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		ThreadID string `json:"thread_id"`
		Values   struct {
			Log []string `json:"log"`
		} `json:"values"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || fmt.Sprint(out.Values.Log) != "[from B echo from B]" {
		t.Fatalf("B's result %s", raw)
	}
	B := client{t: t, base: r.url, key: keyB}
	if code, body, _ := B.do("GET", "/threads/"+out.ThreadID, "", ""); code != 200 {
		t.Errorf("B's thread through the API: %d %s", code, body)
	}
	if code, _, _ := A.do("GET", "/threads/"+out.ThreadID, "", ""); code != 404 {
		t.Errorf("A reads B's MCP thread: %d", code)
	}
}

// BenchmarkMCPCall is a tools/call of the echo graph (a new thread each
// time) over one MCP session with a progress token, on the embedded
// SQLite default: the time to the first progress notification (the
// node's step event) and to the result. Compare
// BenchmarkNativeStreamFirstUpdate, the same run through
// /threads/{id}/runs/stream.
func BenchmarkMCPCall(b *testing.B) {
	r := benchServer(b)
	first := make(chan time.Time, 64)
	hc := &http.Client{}
	ctx := context.Background()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, _ *mcp.ProgressNotificationClientRequest) {
			select {
			case first <- time.Now():
			default:
			}
		}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var toFirst, toResult []time.Duration
	for b.Loop() {
		for len(first) > 0 {
			<-first
		}
		p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"log": []string{"hi"}}}
		p.SetProgressToken("bench")
		t0 := time.Now()
		res, err := s.CallTool(ctx, p)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
		toResult = append(toResult, time.Since(t0))
		select { // the client may hand over the result before the notification
		case t1 := <-first:
			toFirst = append(toFirst, t1.Sub(t0))
		case <-time.After(5 * time.Second):
			b.Fatal("no progress notification")
		}
	}
	b.StopTimer()
	reportLatency(b, toFirst)
	slices.Sort(toResult)
	b.ReportMetric(float64(toResult[len(toResult)/2].Microseconds())/1000, "result-p50-ms")
}

// BenchmarkNativeStreamFirstUpdate is POST /threads/{id}/runs/stream of
// the echo graph with stream_mode updates (a new thread each time): the
// time to the first updates event and to the end of the stream.
func BenchmarkNativeStreamFirstUpdate(b *testing.B) {
	r := benchServer(b)
	var toFirst, toEnd []time.Duration
	for i := 0; b.Loop(); i++ {
		body, _ := json.Marshal(map[string]any{"assistant_id": "echo", "input": map[string]any{"log": []string{"hi"}},
			"if_not_exists": "create", "stream_mode": []string{"updates"}})
		t0 := time.Now()
		resp, err := http.Post(fmt.Sprintf("%s/threads/n-%d/runs/stream", r.url, i), "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		seen := false
		for sc.Scan() {
			if !seen && sc.Text() == "event: updates" {
				toFirst = append(toFirst, time.Since(t0))
				seen = true
			}
		}
		toEnd = append(toEnd, time.Since(t0))
		resp.Body.Close()
		if !seen {
			b.Fatal("no updates event")
		}
	}
	b.StopTimer()
	reportLatency(b, toFirst)
	slices.Sort(toEnd)
	b.ReportMetric(float64(toEnd[len(toEnd)/2].Microseconds())/1000, "result-p50-ms")
}

var mcpPicked = graph.NewKey[string]("picked")

// askGraph waits for a person to pick x or y, then keeps the pick.
func askGraph() runs.GraphSpec {
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(mcpPicked)
		b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[string](ctx, "x or y?", graph.ExpectAnswer(json.RawMessage(`{"type":"string","enum":["x","y"]}`)))
			if err != nil {
				return nil, err
			}
			return graph.Writes(mcpPicked.Set(v)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// Two replicas on one PostgreSQL and Redis: a session is its replica's
// (the other answers 404 to its ID), but a run that waits after a call on
// one replica is answered, with thread_id and answer, in a session on the
// other.
func TestMCPAcrossReplicas(t *testing.T) {
	url, _, _ := pgSchema(t, "mcp")
	redis := "redis://" + testenv.RedisAddr(t)
	replica := func() *running {
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: url, Redis: redis, DataDir: t.TempDir(), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(s.Register("echo", echoGraph(nil)), s.Register("ask", askGraph())); err != nil {
			t.Fatal(err)
		}
		return serveInBackground(t, s)
	}
	a, b := replica(), replica()
	sa, err := mcpSession(t, a.url, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sa.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var waiting struct {
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal(raw, &waiting); err != nil || waiting.Status != "waiting" {
		t.Fatalf("first call on A: %s", raw)
	}
	// A's session ID means nothing to B.
	req, _ := http.NewRequest("POST", b.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sa.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("A's session on B: %d, want 404 (initialize again)", resp.StatusCode)
	}
	sb, err := mcpSession(t, b.url, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err = sb.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"thread_id": waiting.ThreadID, "answer": "y"}})
	if err != nil || res.IsError {
		t.Fatalf("the answer on B: %v %+v", err, res)
	}
	raw, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"status":"done"`) || !strings.Contains(string(raw), `"picked":"y"`) {
		t.Fatalf("after the answer on B: %s", raw)
	}
}
