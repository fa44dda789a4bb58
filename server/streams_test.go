package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/config"
)

// streamCall is how the streams test opens one streaming route.
type streamCall struct {
	method, path, body string
	header             map[string]string
}

// streamFixture is what the streams test's requests name.
type streamFixture struct {
	thread, run, mcpSession string
	experiment              string // an ended experiment
}

// streamCalls says how to make each route that answers with an event
// stream (spec.Route.Stream or MayStream) stream, by operation ID. A
// streaming route this table lacks fails the test: add it here.
func streamCalls(f streamFixture) map[string]streamCall {
	run := `{"assistant_id":"echo","input":{"log":["x"]}}`
	mcp := map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Session-Id": f.mcpSession, "Mcp-Protocol-Version": "2025-06-18"}
	return map[string]streamCall{
		"joinThreadStream":       {method: "GET", path: "/threads/" + f.thread + "/stream"},
		"streamExperiment":       {method: "GET", path: "/experiments/" + f.experiment + "/stream"},
		"streamRun":              {method: "POST", path: "/threads/" + f.thread + "/runs/stream", body: run},
		"joinRunStream":          {method: "GET", path: "/threads/" + f.thread + "/runs/" + f.run + "/stream"},
		"streamStatelessRun":     {method: "POST", path: "/runs/stream", body: run},
		"joinStatelessRunStream": {method: "GET", path: "/runs/" + f.run + "/stream"},
		"createChatCompletion":   {method: "POST", path: "/v1/chat/completions", body: `{"model":"chat","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		"mcpGet":                 {method: "GET", path: "/mcp", header: map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": f.mcpSession, "Mcp-Protocol-Version": "2025-06-18"}},
		"mcpPost":                {method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, header: mcp},
		"runAgUI":                {method: "POST", path: "/ag-ui/chat", body: `{"threadId":"ag1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}]}`},
		"a2aJSONRPC": {method: "POST", path: "/a2a/chat", header: map[string]string{"A2A-Version": "1.0"},
			body: `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`},
		"a2aRESTPost": {method: "POST", path: "/a2a/chat/rest/message:stream", body: `{"message":{"messageId":"m-rest","role":"ROLE_USER","parts":[{"text":"hi"}]}}`},
	}
}

func (c streamCall) open(ctx context.Context, t *testing.T, base string) *http.Response {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	return resp
}

// limits.max_streams counts every response that holds a connection open
// as an event stream, whatever the wire: the test walks the route table,
// and with the tenant's one stream held open, each streaming route
// (LangGraph run and thread streams and joins, a streamed chat
// completion, AG-UI, MCP's GET stream and an MCP answer sent as SSE) is
// refused 429; with the slot free the same request does stream, so the
// table's requests are real streams.
func TestMaxStreamsCountsEveryStreamingRoute(t *testing.T) {
	var blocked atomic.Int32
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet(),
		Limits: config.Limits{MaxStreams: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("echo", echoGraph(&blocked)); err != nil {
		t.Fatal(err)
	}
	model := llmtest.New()
	model.Otherwise(llmtest.Text("hello"))
	if err := s.Register("chat", chatSpec(model)); err != nil {
		t.Fatal(err)
	}
	r := serveInBackground(t, s)
	c := client{t: t, base: r.url}

	code, body, _ := c.do("POST", "/threads/t1/runs/wait", "", `{"assistant_id":"echo","if_not_exists":"create","input":{"log":["a"]}}`)
	if code != 200 {
		t.Fatalf("wait: %d %s", code, body)
	}
	code, body, _ = c.do("GET", "/threads/t1/runs", "", "")
	var rs []struct {
		RunID string `json:"run_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &rs) != nil || len(rs) == 0 {
		t.Fatalf("runs: %d %s", code, body)
	}
	f := streamFixture{thread: "t1", run: rs[0].RunID, mcpSession: mcpInitialize(t, r.url), experiment: endedExperiment(t, c)}
	calls := streamCalls(f)

	// Hold the tenant's one stream open.
	hold, release := context.WithCancel(context.Background())
	held := calls["joinThreadStream"].open(hold, t, r.url)
	if held.StatusCode != 200 {
		t.Fatalf("held stream: %d", held.StatusCode)
	}
	defer func() { release(); held.Body.Close() }()

	var streaming []spec.Route
	for _, rt := range spec.Routes() {
		if rt.Stream || rt.MayStream {
			streaming = append(streaming, rt)
		}
	}
	if len(streaming) < len(calls) {
		t.Errorf("%d streaming routes in the table, %d in the test: a route lost its Stream/MayStream flag", len(streaming), len(calls))
	}
	for _, rt := range streaming {
		call, ok := calls[rt.OperationID]
		if !ok {
			t.Errorf("%s %s answers with an event stream but the test has no request that opens it: add it to streamCalls", rt.Method, rt.Pattern)
			continue
		}
		resp := call.open(context.Background(), t, r.url)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "event streams") {
			t.Errorf("%s %s with the tenant's streams all open: %d %s %.200s, want 429 with Retry-After", rt.Method, rt.Pattern, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	release()
	held.Body.Close()
	for _, rt := range streaming {
		call, ok := calls[rt.OperationID]
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var resp *http.Response
		for { // the held stream's slot is given back when its handler returns
			resp = call.open(ctx, t, r.url)
			if resp.StatusCode != http.StatusTooManyRequests || ctx.Err() != nil {
				break
			}
			resp.Body.Close()
			time.Sleep(20 * time.Millisecond)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s %s with a stream free: %d %s %.200s, want an event stream (the test's request must open one)", rt.Method, rt.Pattern, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		} else if rt.OperationID != "joinThreadStream" && rt.OperationID != "mcpGet" {
			// The others end by themselves: read them to their end, so
			// their handlers return and give the slot back.
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Errorf("%s %s: reading the stream: %v", rt.Method, rt.Pattern, err)
			}
		}
		cancel()
		resp.Body.Close()
	}
}

// mcpInitialize opens an MCP session with raw HTTP (the SDK's client would
// hold a GET stream of its own) and returns its ID.
func mcpInitialize(t *testing.T, base string) string {
	t.Helper()
	post := func(body, session string) *http.Response {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	resp = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	t.Cleanup(func() { // end the session, or its goroutines outlive the test
		req, _ := http.NewRequest("DELETE", base+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return id
}

// endedExperiment runs a one-case experiment on the echo graph to its end
// and returns its ID.
func endedExperiment(t *testing.T, c client) string {
	t.Helper()
	code, body, _ := c.do("POST", "/assistants", "", `{"graph_id":"echo"}`)
	asst := field(t, code, body, "assistant_id")
	code, body, _ = c.do("POST", "/datasets", "", `{"name":"s","criteria":[{"evaluator":"contains","params":{"values":["echo x"]}}],"cases":[{"id":"c","input":{"state":{"log":["x"]}}}]}`)
	ds := field(t, code, body, "dataset_id")
	code, body, _ = c.do("POST", "/experiments", "", fmt.Sprintf(`{"dataset_id":%q,"assistant_id":%q,"repetitions":1}`, ds, asst))
	id := field(t, 200, body, "experiment_id")
	if code != 201 {
		t.Fatalf("experiment: %d %s", code, body)
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body, _ = c.do("GET", "/experiments/"+id, "", "")
		if field(t, code, body, "status") == "success" {
			return id
		}
		if time.Now().After(end) {
			t.Fatalf("the experiment did not end: %s", body)
		}
	}
}
