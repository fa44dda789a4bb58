package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server says how to reach an MCP server: a Stdio command, an HTTP endpoint
// (streamable HTTP), or a TransportFunc for any other SDK transport. Pointers
// to Stdio and HTTP are accepted too.
type Server interface {
	// dial prepares one connection. Each reconnect dials again, because an
	// SDK transport serves a single connection.
	dial(ctx context.Context) (*dialed, error)
	// describe names the server in errors until it has told its own name.
	describe() string
}

// dialed is one prepared connection and what the client may learn about it
// later.
type dialed struct {
	transport sdk.Transport
	cmd       *exec.Cmd    // stdio: the server process
	stderr    *tailWriter  // stdio: the end of the server's stderr
	gone      *atomic.Bool // HTTP: set when the server says the session is unknown
	abort     func()       // ends the connection at once (a handshake gave up)
}

// Stdio runs a command and speaks MCP over its stdin and stdout (one JSON
// message a line). The process is started by Connect, restarted by the next
// call after it exits, and stopped by Client.Close: stdin is closed, then the
// process gets SIGTERM after 5 s and SIGKILL after 5 s more.
type Stdio struct {
	// Command is the program to run: a path, or a name looked up in PATH.
	Command string
	Args    []string
	// Env holds KEY=value entries added to the environment the process
	// inherits from this one (a later entry for a key wins). Nil: the
	// inherited environment as is.
	Env []string
	// Dir is the working directory (empty: this process's).
	Dir string
	// Stderr, if set, receives the server's stderr. Either way the client
	// keeps its last lines to explain a server that fails to start or exits.
	Stderr io.Writer
}

func (s Stdio) describe() string {
	parts := []string{filepath.Base(s.Command)}
	for _, a := range s.Args {
		if strings.ContainsAny(a, "/\\") {
			a = filepath.Base(a)
		}
		parts = append(parts, a)
	}
	return "stdio: " + strings.Join(parts, " ")
}

func (s Stdio) dial(context.Context) (*dialed, error) {
	if s.Command == "" {
		return nil, errors.New("Stdio.Command is empty: set the program that runs the MCP server")
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("Stdio.Env entry %q is not KEY=value", kv)
		}
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	if s.Env != nil {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	tail := &tailWriter{max: stderrTail}
	cmd.Stderr = tail
	if s.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, ignoreErrors{s.Stderr})
	}
	// A grandchild holding stderr open must not keep Wait (and Close) stuck.
	cmd.WaitDelay = 2 * time.Second
	k := &killable{inner: &sdk.CommandTransport{Command: cmd}}
	return &dialed{transport: k, cmd: cmd, stderr: tail, abort: k.kill}, nil
}

// killable is a command transport whose process can be killed while the
// handshake is still under way.
type killable struct {
	inner  *sdk.CommandTransport
	mu     sync.Mutex
	proc   *os.Process
	killed bool
}

// Connect starts the process.
func (k *killable) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := k.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.proc = k.inner.Command.Process
	killed := k.killed
	k.mu.Unlock()
	if killed {
		_ = k.proc.Kill()
	}
	return conn, nil
}

// kill kills the process, now or as soon as it starts.
func (k *killable) kill() {
	k.mu.Lock()
	k.killed = true
	p := k.proc
	k.mu.Unlock()
	if p != nil {
		_ = p.Kill()
	}
}

// HTTP connects to a streamable HTTP endpoint (MCP spec 2025-03-26 and
// later). A server that forgets the session (it answers 404, or 400 with an
// error about the session, to a request carrying the session ID) makes the
// next call start a new session.
type HTTP struct {
	// URL is the MCP endpoint, for example http://127.0.0.1:3001/mcp.
	URL string
	// Headers are added to every request (for example Authorization),
	// except where the MCP transport sets the same header itself.
	Headers http.Header
	// HTTPClient sends the requests (nil: a client of the Client's own,
	// whose idle connections Close releases). Do not set a Timeout on it:
	// responses may stream for as long as a tool runs; calls are bounded
	// by WithCallTimeout instead.
	HTTPClient *http.Client
}

func (h HTTP) describe() string { return h.URL }

func (h HTTP) dial(context.Context) (*dialed, error) {
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HTTP.URL %q is not an http(s) URL such as http://127.0.0.1:3001/mcp", h.URL)
	}
	base := h.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	gone := new(atomic.Bool)
	aborted, abort := context.WithCancel(context.Background())
	hc := *base
	hc.Transport = &sessionTransport{base: rt, headers: h.Headers, gone: gone, aborted: aborted}
	return &dialed{
		transport: &sdk.StreamableClientTransport{
			Endpoint:   h.URL,
			HTTPClient: &hc,
			// Tools need no server-initiated stream; without it nothing
			// runs in the background between calls.
			DisableStandaloneSSE: true,
			MaxEventSize:         MaxMessageBytes,
		},
		gone:  gone,
		abort: abort,
	}, nil
}

// TransportFunc returns a new SDK transport for each connection (the first
// one and every reconnect), for transports Stdio and HTTP do not cover, such
// as the SDK's in-memory transports in tests.
type TransportFunc func(ctx context.Context) (sdk.Transport, error)

func (f TransportFunc) describe() string { return "custom transport" }

func (f TransportFunc) dial(ctx context.Context) (*dialed, error) {
	if f == nil {
		return nil, errors.New("the TransportFunc is nil")
	}
	t, err := f(ctx)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("the TransportFunc returned a nil transport")
	}
	return &dialed{transport: t}, nil
}

// normalize turns pointer forms into values and rejects nil servers.
func normalize(s Server) (Server, error) {
	switch v := s.(type) {
	case nil:
		return nil, errors.New("mcp.Connect: the server is nil; pass mcp.Stdio{...} or mcp.HTTP{...}")
	case *Stdio:
		if v == nil {
			return nil, errors.New("mcp.Connect: the *Stdio server is nil")
		}
		return *v, nil
	case *HTTP:
		if v == nil {
			return nil, errors.New("mcp.Connect: the *HTTP server is nil")
		}
		return *v, nil
	}
	return s, nil
}

// sessionTransport adds the configured headers, notices when the server
// no longer knows the session, bounds response bodies, and cancels every
// request once aborted is done.
type sessionTransport struct {
	base    http.RoundTripper
	headers http.Header
	gone    *atomic.Bool
	aborted context.Context // nil: never aborted
}

const sessionHeader = "Mcp-Session-Id"

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			if req.Header.Get(k) != "" {
				continue
			}
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	var release func()
	if t.aborted != nil {
		if t.aborted.Err() != nil {
			return nil, errAborted
		}
		ctx, cancel := context.WithCancel(req.Context())
		stop := context.AfterFunc(t.aborted, cancel)
		release = func() { stop(); cancel() }
		req = req.WithContext(ctx)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if release != nil {
			release()
		}
		return resp, err
	}
	if release != nil && resp.Body != nil {
		resp.Body = &onClose{ReadCloser: resp.Body, fn: release}
	}
	if resp.Body != nil && !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		// The SDK reads JSON and error bodies whole; events it bounds
		// itself (MaxEventSize).
		resp.Body = &limitedBody{rc: resp.Body, left: MaxMessageBytes}
	}
	if req.Header.Get(sessionHeader) == "" || req.Method == http.MethodDelete {
		return resp, nil
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		// The spec's answer for a session the server has dropped.
		t.gone.Store(true)
	case http.StatusBadRequest:
		// Some servers (the reference TypeScript ones among them) answer 400
		// "No valid session ID provided" instead. A 400 rejects the request
		// before any tool runs, so starting a new session is safe.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		if bytes.Contains(bytes.ToLower(body), []byte("session")) {
			t.gone.Store(true)
		}
	}
	return resp, nil
}

var errAborted = errors.New("the connection attempt was abandoned")

// onClose runs fn once the body is closed.
type onClose struct {
	io.ReadCloser
	fn   func()
	once sync.Once
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.fn)
	return err
}

// limitedBody fails a read once more than MaxMessageBytes were read.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLong
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

var errTooLong = fmt.Errorf("the server's message exceeds %d bytes (mcp.MaxMessageBytes), so it was not read", MaxMessageBytes)

const stderrTail = 2 << 10

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept text, trimmed, starting at a line boundary when
// the beginning was cut.
func (w *tailWriter) String() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := string(w.buf)
	if len(w.buf) >= w.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

// ignoreErrors keeps a failing user writer from stopping the stderr copy
// (which would leave the server blocked on a full pipe).
type ignoreErrors struct{ w io.Writer }

func (i ignoreErrors) Write(p []byte) (int, error) {
	_, _ = i.w.Write(p)
	return len(p), nil
}
