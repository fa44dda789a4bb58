// Package mcp exposes the tools of MCP (Model Context Protocol) servers as
// Trellis tools, on github.com/modelcontextprotocol/go-sdk.
//
// Connect reaches a server over stdio (a command it starts) or streamable
// HTTP; Client.Tools lists every tool (all pages) as a tool.Tool whose
// parameters are the server's input schema and which is a read tool only
// when the server annotates it readOnlyHint: true.
//
//	c, err := mcp.Connect(ctx, mcp.Stdio{Command: "node", Args: []string{"server.js"}},
//		mcp.WithName("files"), mcp.WithToolPrefix("files_"))
//	if err != nil { ... }
//	defer c.Close()
//	tools, err := c.Tools(ctx) // []tool.Tool, ready for a tool node
//
// # Calls, errors and timeouts
//
// A call sends the model's arguments object as is and returns the result's
// text (other content is described in a short bracketed line; structured
// content is returned as JSON when there is no text). A result flagged
// isError becomes a *ToolError; a server that says the params are invalid
// gives a *tool.ArgumentError. Each call is bounded by WithCallTimeout; a
// timeout is an ordinary error (the model sees it), while cancellation of
// the caller's context is returned wrapped so the run stops. A call that
// must reconnect first takes at most WithConnectTimeout more. A result's
// text is cut at WithMaxResultBytes, saying so; one message from the
// server may not exceed MaxMessageBytes.
//
// # Reconnecting, and never running a write twice
//
// When the stdio process exits or the HTTP server forgets the session, the
// next call or listing connects again (one attempt, bounded by
// WithConnectTimeout) instead of failing forever. A call is sent again
// automatically only when it cannot have run: the connection was known dead
// before it was sent, the SDK refused to send it on a closing connection,
// the write to a dead process failed, or the server rejected the session.
// A call whose connection breaks after it was sent is repeated only for a
// read tool; for any other tool it fails with an error saying it may or may
// not have run, because repeating it could run a write twice.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for the options.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultListTimeout    = 30 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	// DefaultMaxResultBytes bounds the text of one call result.
	DefaultMaxResultBytes = 1 << 20
)

// MaxMessageBytes bounds one message from a server: a stdio line (the
// SDK's own limit), an HTTP response body or one event of an HTTP event
// stream. A longer message fails the call (or the listing) with an error
// saying so.
const MaxMessageBytes = 16 << 20

// Option configures a Client.
type Option func(*config)

type config struct {
	name           string
	callTimeout    time.Duration
	listTimeout    time.Duration
	connectTimeout time.Duration
	maxResult      int
	prefix         string
	filter         func(name string) bool
	errs           []error
}

// WithName names the server in errors and tool errors (default: the name
// the server reports, else its command or URL).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithCallTimeout bounds each tool call (default DefaultCallTimeout). It
// must be positive.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) { c.callTimeout = positive(c, "WithCallTimeout", d) }
}

// WithListTimeout bounds one Tools listing, all pages together (default
// DefaultListTimeout). It must be positive.
func WithListTimeout(d time.Duration) Option {
	return func(c *config) { c.listTimeout = positive(c, "WithListTimeout", d) }
}

// WithConnectTimeout bounds each connection attempt, handshake included,
// at Connect and on every reconnect (default DefaultConnectTimeout): when
// it runs out, a stdio server process is killed at once rather than given
// time to exit. It must be positive.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) { c.connectTimeout = positive(c, "WithConnectTimeout", d) }
}

// WithMaxResultBytes bounds the text a call returns to the model (default
// DefaultMaxResultBytes): a longer result keeps its beginning and ends
// with a line saying how much was cut. It must be positive.
func WithMaxResultBytes(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithMaxResultBytes(%d): the bound must be positive", n))
		}
		c.maxResult = n
	}
}

// WithToolPrefix prepends prefix to the name of every tool Tools returns
// (for example "github_"), so tools of several servers cannot clash. Calls
// still use the server's own names.
func WithToolPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithToolFilter keeps only the tools for which keep returns true; keep
// sees the server's own name, without the prefix.
func WithToolFilter(keep func(name string) bool) Option {
	return func(c *config) { c.filter = keep }
}

func positive(c *config, opt string, d time.Duration) time.Duration {
	if d <= 0 {
		c.errs = append(c.errs, fmt.Errorf("%s(%v): the duration must be positive", opt, d))
	}
	return d
}

// Client is a connection to one MCP server that reconnects when the server
// goes away. It is safe for concurrent use; Close releases it.
type Client struct {
	server    Server
	cfg       config
	sdk       *sdk.Client
	name      string
	closeCtx  context.Context // cancelled by Close: aborts calls and dials
	cancel    context.CancelFunc
	closeIdle func() // releases the HTTP connections of a client we own

	dialMu sync.Mutex // one connection attempt at a time
	mu     sync.Mutex
	cur    *conn
	closed bool
	wg     sync.WaitGroup // watchers and background closes

	closeOnce sync.Once
	closeErr  error
}

// conn is one session with the server.
type conn struct {
	session *sdk.ClientSession
	cmd     *exec.Cmd
	stderr  *tailWriter
	gone    *atomic.Bool // HTTP: the server dropped the session
	broken  atomic.Bool  // a call saw the connection fail
	done    chan struct{}
	endErr  error // why the session ended; read after done

	closeOnce sync.Once
	closeErr  error
}

func (cn *conn) alive() bool {
	if cn.broken.Load() || (cn.gone != nil && cn.gone.Load()) {
		return false
	}
	select {
	case <-cn.done:
		return false
	default:
		return true
	}
}

func (cn *conn) close() error {
	cn.closeOnce.Do(func() { cn.closeErr = cn.session.Close() })
	return cn.closeErr
}

// ended says why the session ended, for error messages ("" when unknown).
func (cn *conn) ended() string {
	var msg string
	select {
	case <-cn.done:
		switch {
		case cn.cmd != nil && cn.endErr != nil:
			msg = "the server process ended: " + cn.endErr.Error()
		case cn.cmd != nil:
			msg = "the server process exited"
		case cn.endErr != nil:
			msg = cn.endErr.Error()
		default:
			msg = "the server closed the connection"
		}
	default:
		if cn.gone != nil && cn.gone.Load() {
			msg = "the server no longer knows the session"
		}
	}
	if s := cn.stderr.String(); s != "" && msg != "" {
		msg += "; its stderr ends with: " + s
	}
	return msg
}

// Connect starts or reaches the server and performs the MCP handshake,
// bounded by ctx and WithConnectTimeout. The returned Client reconnects by
// itself later; call Close when done with it.
func Connect(ctx context.Context, server Server, opts ...Option) (*Client, error) {
	server, err := normalize(server)
	if err != nil {
		return nil, err
	}
	cfg := config{callTimeout: DefaultCallTimeout, listTimeout: DefaultListTimeout, connectTimeout: DefaultConnectTimeout, maxResult: DefaultMaxResultBytes}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, fmt.Errorf("mcp.Connect: %w", err)
	}
	c := &Client{server: server, cfg: cfg, name: cfg.name}
	if c.name == "" {
		c.name = server.describe()
	}
	if h, ok := server.(HTTP); ok && h.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		h.HTTPClient = &http.Client{Transport: tr}
		c.server, c.closeIdle = h, tr.CloseIdleConnections
	}
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "trellis", Version: "1"}, &sdk.ClientOptions{
		// Tools need no roots, sampling or elicitation: advertise nothing.
		Capabilities: &sdk.ClientCapabilities{},
	})
	c.closeCtx, c.cancel = context.WithCancel(context.Background())
	cn, err := c.session(ctx)
	if err != nil {
		c.cancel()
		if c.closeIdle != nil {
			c.closeIdle()
		}
		return nil, err
	}
	if cfg.name == "" {
		if res := cn.session.InitializeResult(); res != nil && res.ServerInfo != nil && res.ServerInfo.Name != "" {
			c.name = res.ServerInfo.Name
		}
	}
	return c, nil
}

// Name returns the name the client uses for the server in errors.
func (c *Client) Name() string { return c.name }

// errClosed is returned by calls after Close.
func (c *Client) errClosed() error {
	return fmt.Errorf("MCP server %q: the client is closed; connect again with mcp.Connect to use its tools", c.name)
}

// session returns the live connection, connecting first when there is none
// or the current one is known dead.
func (c *Client) session(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	closed, cur := c.closed, c.cur
	c.mu.Unlock()
	if closed {
		return nil, c.errClosed()
	}
	if cur != nil && cur.alive() {
		return cur, nil
	}
	return c.redial(ctx)
}

func (c *Client) redial(ctx context.Context) (*conn, error) {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	c.mu.Lock()
	closed, stale := c.closed, c.cur
	c.mu.Unlock()
	if closed {
		return nil, c.errClosed()
	}
	if stale != nil && stale.alive() {
		return stale, nil // another caller reconnected meanwhile
	}
	why := ""
	if stale != nil {
		why = stale.ended()
		c.retire(stale)
	}
	cn, err := c.dial(ctx)
	if err != nil {
		if why != "" {
			return nil, fmt.Errorf("MCP server %q: the connection was lost (%s) and reconnecting failed: %w", c.name, why, err)
		}
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = cn.close()
		return nil, c.errClosed()
	}
	c.cur = cn
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		cn.endErr = cn.session.Wait()
		close(cn.done)
	}()
	return cn, nil
}

// dial makes one connection attempt.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	fail := func(err error) error {
		if d := c.server.describe(); d != c.name {
			return fmt.Errorf("connecting to MCP server %q (%s): %w", c.name, d, err)
		}
		return fmt.Errorf("connecting to MCP server %q: %w", c.name, err)
	}
	d, err := c.server.dial(ctx)
	if err != nil {
		return nil, fail(err)
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.connectTimeout)
	defer cancel()
	stop := context.AfterFunc(c.closeCtx, cancel)
	defer stop()
	// A handshake that gives up must not then wait on the server: the SDK
	// closes the half-open session by waiting up to 5 s for a stdio
	// process to exit and for its cancellation notice to be delivered.
	// When the attempt's time is up, the connection is aborted at once (a
	// stdio process killed, HTTP requests cancelled).
	var stopKill func() bool
	if d.abort != nil {
		stopKill = context.AfterFunc(dctx, d.abort)
	}
	session, err := c.sdk.Connect(dctx, d.transport, nil)
	if stopKill != nil && !stopKill() && err == nil {
		// Killed just as the handshake completed: the session is dead.
		_ = session.Close()
		err = dctx.Err()
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fail(ctx.Err())
		case c.closeCtx.Err() != nil:
			return nil, c.errClosed()
		case dctx.Err() != nil:
			err = fmt.Errorf("no handshake within %v (raise WithConnectTimeout if the server starts slowly): %v", c.cfg.connectTimeout, err)
		}
		if s := d.stderr.String(); s != "" {
			err = fmt.Errorf("%w; its stderr ends with: %s", err, s)
		}
		return nil, fail(err)
	}
	return &conn{session: session, cmd: d.cmd, stderr: d.stderr, gone: d.gone, done: make(chan struct{})}, nil
}

// retire drops a dead or doubtful connection and closes it in the
// background (closing waits for the process to exit).
func (c *Client) retire(cn *conn) {
	cn.broken.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return // Close closes c.cur; any other conn was retired already
	}
	if c.cur == cn {
		c.cur = nil
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = cn.close()
	}()
}

// Close ends the session, stops a stdio server process (waiting for it to
// exit) and aborts calls in flight, which fail with an error saying the
// client was closed. It is idempotent; later calls of the client's tools
// return an error.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		cur := c.cur
		c.mu.Unlock()
		c.cancel()
		// Wait for a connection attempt in progress to give up (it sees
		// closed and closes what it opened), and keep new ones out.
		c.dialMu.Lock()
		defer c.dialMu.Unlock()
		if cur != nil {
			live := cur.alive()
			if err := cur.close(); err != nil && live {
				c.closeErr = fmt.Errorf("MCP server %q: closing: %w", c.name, err)
			}
		}
		c.wg.Wait()
		if c.closeIdle != nil {
			c.closeIdle()
		}
	})
	return c.closeErr
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
