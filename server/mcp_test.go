package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
