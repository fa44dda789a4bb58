package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/tool"
)

// inMemory serves srv to each new connection over the SDK's in-memory
// transports. It counts connections and keeps the server sessions.
type inMemory struct {
	srv      *sdk.Server
	dials    atomic.Int32
	mu       sync.Mutex
	sessions []*sdk.ServerSession
}

func (m *inMemory) transport() TransportFunc {
	return func(ctx context.Context) (sdk.Transport, error) {
		m.dials.Add(1)
		client, server := sdk.NewInMemoryTransports()
		ss, err := m.srv.Connect(ctx, server, nil)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		m.sessions = append(m.sessions, ss)
		m.mu.Unlock()
		return client, nil
	}
}

func (m *inMemory) last() *sdk.ServerSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[len(m.sessions)-1]
}

func connectInMemory(t *testing.T, opts ...Option) (*Client, *inMemory, *methodCounter) {
	t.Helper()
	calls := new(methodCounter)
	m := &inMemory{srv: testServer(calls)}
	c, err := Connect(t.Context(), m.transport(), opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, m, calls
}

func toolsByName(t *testing.T, c *Client) map[string]tool.Tool {
	t.Helper()
	list, err := c.Tools(t.Context())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	out := map[string]tool.Tool{}
	for _, tl := range list {
		out[tl.Info().Name] = tl
	}
	return out
}

func call(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(t.Context(), json.RawMessage(args))
}

func sameJSON(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("not JSON: %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestToolsListsEveryPageWithSchemaAndReadOnly(t *testing.T) {
	c, _, calls := connectInMemory(t)
	if c.Name() != "test-server" {
		t.Errorf("Name = %q, want the server's own name", c.Name())
	}
	tools := toolsByName(t, c)
	want := []string{"broken", "echo", "fail", "idempotent", "mixed", "plain", "reject", "slow", "structured", "structured_text", "write"}
	got := slices.Sorted(func(yield func(string) bool) {
		for n := range tools {
			if !yield(n) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if n, pages := calls.list.Load(), int32((len(want)+1)/2); n != pages {
		t.Errorf("tools/list requests = %d, want %d (page size 2)", n, pages)
	}
	for name, tl := range tools {
		wantRO := name == "echo" || name == "structured" || name == "slow"
		if tl.Info().ReadOnly != wantRO {
			t.Errorf("%s: ReadOnly = %v, want %v (readOnlyHint true makes a read tool, anything else a write tool)", name, tl.Info().ReadOnly, wantRO)
		}
	}
	echo := tools["echo"].Info()
	if !sameJSON(t, echo.Parameters, []byte(echoSchema)) {
		t.Errorf("echo schema = %s\nwant (semantically) %s", echo.Parameters, echoSchema)
	}
	if !strings.Contains(string(echo.Parameters), "<b>&</b> ünïcode") {
		t.Errorf("echo schema escaped its text: %s", echo.Parameters)
	}
	if echo.Description != "Echoes its arguments." {
		t.Errorf("echo description = %q", echo.Description)
	}
	if d := tools["plain"].Info().Description; d != "Plain Tool" {
		t.Errorf("plain description = %q, want its title when there is no description", d)
	}
}

func TestToolPrefixAndFilter(t *testing.T) {
	c, _, _ := connectInMemory(t, WithToolPrefix("t_"), WithToolFilter(func(name string) bool {
		return name == "echo" || name == "write"
	}))
	tools := toolsByName(t, c)
	if len(tools) != 2 || tools["t_echo"] == nil || tools["t_write"] == nil {
		t.Fatalf("tools = %v, want t_echo and t_write", tools)
	}
	out, err := call(t, tools["t_echo"], `{"text":"hi"}`)
	if err != nil || out != `{"text":"hi"}` {
		t.Fatalf("t_echo = %q, %v; want the server's echo tool called", out, err)
	}
}

func TestCallPassesArgumentsAndReturnsText(t *testing.T) {
	c, _, _ := connectInMemory(t)
	echo := toolsByName(t, c)["echo"]
	args := ` {"text":"hi","count":3,"nested":{"x":1.5}} `
	out, err := call(t, echo, args)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, []byte(out), []byte(args)) {
		t.Errorf("server received %s, want %s", out, args)
	}
	for _, empty := range []string{"", "null", "  "} {
		if out, err := call(t, echo, empty); err != nil || out != "{}" {
			t.Errorf("args %q: server received %q, %v; want {}", empty, out, err)
		}
	}
}

func TestCallRejectsArgumentsThatAreNotAnObject(t *testing.T) {
	c, _, calls := connectInMemory(t)
	echo := toolsByName(t, c)["echo"]
	for _, args := range []string{`{"text":`, `[1,2]`, `"hi"`, `42`, `true`} {
		_, err := call(t, echo, args)
		var ae *tool.ArgumentError
		if !errors.As(err, &ae) || ae.Tool != "echo" {
			t.Errorf("args %s: err = %v, want *tool.ArgumentError for echo", args, err)
		}
	}
	if n := calls.call.Load(); n != 0 {
		t.Errorf("server got %d calls, want none for bad arguments", n)
	}
}

func TestCallErrors(t *testing.T) {
	c, m, _ := connectInMemory(t)
	tools := toolsByName(t, c)

	_, err := call(t, tools["fail"], `{}`)
	var te *ToolError
	if !errors.As(err, &te) || te.Message != "disk full" || te.Tool != "fail" || te.Server != "test-server" {
		t.Errorf("isError result: err = %#v, want *ToolError with the server's text", err)
	}
	if tool.IsArgumentError(err) {
		t.Errorf("isError result became an ArgumentError: %v", err)
	}

	_, err = call(t, tools["reject"], `{}`)
	var ae *tool.ArgumentError
	if !errors.As(err, &ae) || !strings.Contains(ae.Problem, "limit must be positive") {
		t.Errorf("invalid params: err = %v, want *tool.ArgumentError carrying the server's message", err)
	}

	_, err = call(t, tools["broken"], `{}`)
	if err == nil || tool.IsArgumentError(err) || !strings.Contains(err.Error(), `"broken"`) || !strings.Contains(err.Error(), `"test-server"`) {
		t.Errorf("protocol error: err = %v, want an error naming tool and server", err)
	}

	m.srv.RemoveTools("plain")
	_, err = call(t, tools["plain"], `{}`)
	if !errors.As(err, &ae) || !strings.Contains(ae.Problem, "unknown tool") {
		t.Errorf("unknown tool: err = %v, want *tool.ArgumentError", err)
	}
	if n := m.dials.Load(); n != 1 {
		t.Errorf("connections = %d, want 1: server errors must not reconnect", n)
	}
}

func TestCallRendersContent(t *testing.T) {
	c, _, _ := connectInMemory(t)
	tools := toolsByName(t, c)
	cases := map[string]string{
		"mixed": "before\n[image: image/png, 2.0 KiB]\n[audio: audio/wav, 10 bytes]\n" +
			"[resource link: file:///a.txt (a.txt): the file]\n[resource mem://note (text/plain)]\nnote body\n" +
			"[resource mem://blob: unknown type, 3 bytes]\nafter",
		"structured":      `{"temp":21.5,"unit":"C"}`,
		"structured_text": "21.5 C",
	}
	for name, want := range cases {
		got, err := call(t, tools[name], `{}`)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v\nwant %q", name, got, err, want)
		}
	}
}

func TestCallTimeoutIsAnOrdinaryError(t *testing.T) {
	c, m, calls := connectInMemory(t, WithCallTimeout(150*time.Millisecond))
	tools := toolsByName(t, c)
	start := time.Now()
	_, err := call(t, tools["slow"], `{}`)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 150ms") {
		t.Fatalf("err = %v, want a timeout error", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the timeout wraps context.DeadlineExceeded; the tool node would take it for the run's own deadline")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("call took %v", d)
	}
	waitFor(t, "the server to see the cancellation", calls.slowCancelled.Load)
	if out, err := call(t, tools["write"], `{}`); err != nil || out != "written" {
		t.Errorf("next call = %q, %v", out, err)
	}
	if n := m.dials.Load(); n != 1 {
		t.Errorf("connections = %d, want 1: a timeout must not drop the connection", n)
	}
}

func TestCallerCancellationPassesThrough(t *testing.T) {
	c, _, calls := connectInMemory(t)
	slow := toolsByName(t, c)["slow"]
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		waitFor(t, "the slow call to start", calls.slowStarted.Load)
		cancel()
	}()
	_, err := slow.Call(ctx, json.RawMessage(`{}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want it to wrap context.Canceled", err)
	}
}

func TestReconnectAfterServerEndsSession(t *testing.T) {
	c, m, _ := connectInMemory(t)
	tools := toolsByName(t, c)
	_ = m.last().Close()
	waitDead(t, c)
	// Several callers at once: one reconnect serves them all.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if out, err := call(t, tools["write"], `{}`); err != nil || out != "written" {
				errs <- errors.Join(err, errors.New("got "+out))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := m.dials.Load(); n != 2 {
		t.Errorf("connections = %d, want 2 (one reconnect)", n)
	}
	// Listing reconnects the same way.
	_ = m.last().Close()
	waitDead(t, c)
	if list, err := c.Tools(t.Context()); err != nil || len(list) == 0 {
		t.Errorf("Tools after the session ended = %d tools, %v", len(list), err)
	}
}

func TestCloseIsIdempotentAndLaterCallsFail(t *testing.T) {
	c, _, _ := connectInMemory(t)
	echo := toolsByName(t, c)["echo"]
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := call(t, echo, `{}`); err == nil || !strings.Contains(err.Error(), "client is closed") {
		t.Errorf("call after Close: err = %v", err)
	}
	if _, err := c.Tools(t.Context()); err == nil || !strings.Contains(err.Error(), "client is closed") {
		t.Errorf("Tools after Close: err = %v", err)
	}
}

func TestCloseAbortsCallsInFlight(t *testing.T) {
	c, _, calls := connectInMemory(t)
	slow := toolsByName(t, c)["slow"]
	done := make(chan error, 1)
	go func() {
		_, err := slow.Call(context.Background(), json.RawMessage(`{}`))
		done <- err
	}()
	waitFor(t, "the slow call to start", calls.slowStarted.Load)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "aborted") || errors.Is(err, context.Canceled) {
			t.Errorf("call in flight: err = %v, want an abort error that is not a cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not end after Close")
	}
}

func TestConnectRejectsBadConfiguration(t *testing.T) {
	cases := []struct {
		server Server
		opts   []Option
		want   string
	}{
		{nil, nil, "server is nil"},
		{(*Stdio)(nil), nil, "*Stdio server is nil"},
		{Stdio{}, nil, "Command is empty"},
		{Stdio{Command: "x", Env: []string{"NOEQUALS"}}, nil, "not KEY=value"},
		{Stdio{Command: "trellis-no-such-command-xyz"}, nil, "executable file not found"},
		{HTTP{URL: "localhost:3001/mcp"}, nil, "not an http(s) URL"},
		{TransportFunc(nil), nil, "TransportFunc is nil"},
		{Stdio{Command: "x"}, []Option{WithCallTimeout(0)}, "WithCallTimeout(0s)"},
		{Stdio{Command: "x"}, []Option{WithListTimeout(-time.Second)}, "WithListTimeout(-1s)"},
	}
	for _, tc := range cases {
		c, err := Connect(t.Context(), tc.server, tc.opts...)
		if err == nil {
			_ = c.Close()
			t.Errorf("%#v: Connect succeeded", tc.server)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%#v: err = %v, want it to mention %q", tc.server, err, tc.want)
		}
	}
}

func TestHTTPServerWithHeaders(t *testing.T) {
	calls := new(methodCounter)
	srv := testServer(calls)
	var auth atomic.Value
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c, err := Connect(t.Context(), HTTP{URL: ts.URL, Headers: http.Header{"Authorization": {"Bearer s3cret"}}}, WithName("web"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools := toolsByName(t, c)
	if len(tools) != 11 {
		t.Errorf("got %d tools over HTTP, want 11", len(tools))
	}
	if out, err := call(t, tools["echo"], `{"text":"over http"}`); err != nil || out != `{"text":"over http"}` {
		t.Errorf("echo = %q, %v", out, err)
	}
	if _, err := call(t, tools["fail"], `{}`); err == nil || !strings.Contains(err.Error(), `MCP server "web" failed: disk full`) {
		t.Errorf("fail: err = %v, want the WithName name in it", err)
	}
	if got := auth.Load(); got != "Bearer s3cret" {
		t.Errorf("Authorization header = %v", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSessionTransportNoticesDroppedSessions(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = io.WriteString(w, body.Load().(string))
	}))
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cases := []struct {
		status     int
		body       string
		session    bool
		wantMarked bool
	}{
		{404, "session not found", true, true},
		{400, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`, true, true},
		{400, `{"error":"limit too large"}`, true, false},
		{400, "no valid session", false, false}, // no session sent: nothing to drop
		{500, "session store down", true, false},
		{200, "ok", true, false},
	}
	for _, tc := range cases {
		status.Store(int32(tc.status))
		body.Store(tc.body)
		gone := new(atomic.Bool)
		st := &sessionTransport{base: tr, headers: http.Header{"X-Extra": {"1"}}, gone: gone}
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader("{}"))
		if tc.session {
			req.Header.Set(sessionHeader, "abc")
		}
		resp, err := st.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != tc.body {
			t.Errorf("%d %q: body read back as %q", tc.status, tc.body, got)
		}
		if gone.Load() != tc.wantMarked {
			t.Errorf("%d %q (session sent: %v): gone = %v, want %v", tc.status, tc.body, tc.session, gone.Load(), tc.wantMarked)
		}
		if req.Header.Get("X-Extra") != "" {
			t.Errorf("RoundTrip modified the caller's request")
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDead waits until the client has noticed that its session ended.
func waitDead(t *testing.T, c *Client) {
	t.Helper()
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	if cn == nil {
		t.Fatal("no current connection")
	}
	select {
	case <-cn.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not notice that the session ended")
	}
}

func TestClassifyDecidesWhatMayBeSentAgain(t *testing.T) {
	closedDone := make(chan struct{})
	close(closedDone)
	live := func() *conn { return &conn{done: make(chan struct{})} }
	dead := func() *conn { return &conn{done: closedDone} }
	gone := func() *conn {
		cn := live()
		cn.gone = new(atomic.Bool)
		cn.gone.Store(true)
		return cn
	}
	invalid := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}
	rejected := &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}
	cases := []struct {
		name string
		cn   *conn
		err  error
		want failure
	}{
		{"refused on a closing connection", live(), fmt.Errorf("%w: calling: client is closing", sdk.ErrConnectionClosed), failNotSent},
		{"HTTP 404 session", live(), fmt.Errorf("sending: %w", sdk.ErrSessionMissing), failNotSent},
		{"write to a dead process", live(), fmt.Errorf("calling: %w", &fs.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE}), failNotSent},
		{"server dropped the session", gone(), fmt.Errorf("calling: %w: %w", invalid, rejected), failNotSent},
		{"server error", live(), fmt.Errorf("calling: %w", invalid), failOther},
		{"transport refused, connection usable", live(), fmt.Errorf("sending: %w: dial tcp: connection refused", rejected), failOther},
		{"process exited mid-call", live(), fmt.Errorf("calling: %w", io.EOF), failLost},
		{"other error, session ended", dead(), errors.New("stream broken"), failLost},
		{"other error, session alive", live(), errors.New("cannot decode result"), failOther},
	}
	for _, tc := range cases {
		if got := classify(tc.cn, tc.err); got != tc.want {
			t.Errorf("%s: classify = %d, want %d", tc.name, got, tc.want)
		}
	}
}
