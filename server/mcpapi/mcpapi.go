// Package mcpapi serves Trellis assistants as MCP tools at /mcp, over
// MCP's streamable HTTP transport (github.com/modelcontextprotocol/go-sdk).
// It is a thin translator over the run service (server/runs), like the
// OpenAI wire: tools/list lists the caller's tenant's assistants, and
// tools/call creates a run with runs.Service.Create and follows its event
// log with runs.Join, sending step events as progress notifications and
// returning the final answer.
//
// The transport runs in session mode by default (Handler.Stateless
// serves without sessions): a run that stops for a person asks
// through MCP elicitation, which is a request from the server to the
// client and needs the session's streams. A client without elicitation
// gets a result that says what the run asks and how to answer it (call
// the tool again with thread_id and answer). See docs/mcp-server.md.
package mcpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// Handler serves /mcp. Set its fields, then call HTTPHandler once.
type Handler struct {
	DB   db.DB
	Runs *runs.Service
	// Graphs resolves an assistant's graph, for its tool's input schema.
	Graphs *runs.Registry
	// Enqueue hands a thread to the run queue.
	Enqueue runs.Enqueuer
	// Tenant returns a request's tenant (DefaultTenant when nil). It is
	// read on every request: a session belongs to the tenant that opened
	// it, and another tenant's request naming it is answered 404.
	Tenant func(r *http.Request) string
	// BodyLimit bounds request bodies (0: wire.DefaultBodyLimit).
	BodyLimit int64
	// SessionTimeout closes sessions idle that long (DefaultSessionTimeout
	// when 0), so abandoned sessions do not hold memory.
	SessionTimeout time.Duration
	// Version is reported as the server's version at initialize.
	Version string
	// Log receives failures (slog.Default() when nil).
	Log *slog.Logger
	// Stateless serves every request on its own, without sessions (MCP's
	// stateless streamable HTTP), for load balancers that cannot keep a
	// client on one replica: any replica answers any request. There is no
	// elicitation then (it is a request from the server inside a session):
	// a run that waits for a person returns the waiting result, answered
	// by calling the tool again with {thread_id, answer}; GET and DELETE
	// /mcp are 405; a notifications/cancelled cannot reach the call it
	// names (it arrives as a request of its own), so a call's run is
	// cancelled only through the LangGraph API.
	Stateless bool

	mu      sync.Mutex
	servers map[string]*mcp.Server // by tenant
}

// DefaultTenant is the tenant of requests when Handler.Tenant is nil.
const DefaultTenant = "default"

// DefaultSessionTimeout is how long an idle MCP session lives.
const DefaultSessionTimeout = 30 * time.Minute

// maxElicitRounds bounds the questions one tool call asks through
// elicitation; a run that asks more returns a waiting result.
const maxElicitRounds = 20

func (h *Handler) tenant(r *http.Request) string {
	if h.Tenant != nil {
		return h.Tenant(r)
	}
	return DefaultTenant
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// HTTPHandler returns the handler of /mcp (GET, POST and DELETE). It
// sits behind the server's auth, rate and body middleware, like every
// route.
func (h *Handler) HTTPHandler() http.Handler {
	limit := h.BodyLimit
	if limit <= 0 {
		limit = wire.DefaultBodyLimit
	}
	timeout := h.SessionTimeout
	if timeout <= 0 {
		timeout = DefaultSessionTimeout
	}
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return h.server(h.tenant(r))
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout:      timeout,
		MaxRequestBodyBytes: limit,
		Stateless:           h.Stateless,
		Logger:              slog.New(atLeastWarn{h.log().Handler()}).With("component", "mcp"),
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" && !h.Stateless && !strings.HasPrefix(id, sessionPrefix(h.tenant(r))) {
			// Another tenant's session: as unknown as a made-up one.
			wire.NewProblem(http.StatusNotFound, "MCP session "+id+" does not exist (it expired or was never opened with this API key): initialize a new session").Write(w, r)
			return
		}
		pw := &problemWriter{ResponseWriter: w, r: r}
		sdk.ServeHTTP(pw, r)
		pw.finish()
	})
}

// server returns the tenant's MCP server, made on first use. Its session
// IDs start with the tenant's tag, so a request is matched to its
// tenant's sessions only.
func (h *Handler) server(tenant string) *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.servers[tenant]; s != nil {
		return s
	}
	if h.servers == nil {
		h.servers = map[string]*mcp.Server{}
	}
	prefix := sessionPrefix(tenant)
	version := h.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "trellis", Title: "Trellis assistants", Version: version}, &mcp.ServerOptions{
		Instructions: "Each tool is a Trellis assistant. Chat assistants take {message, thread_id?}; pass the thread_id of a " +
			"result to continue its conversation. A result with status \"waiting\" asks a question: call the same tool " +
			"with that thread_id and answer to resume.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		GetSessionID: func() string { return prefix + strings.ReplaceAll(uuid.NewString(), "-", "") },
		Logger:       slog.New(atLeastWarn{h.log().Handler()}).With("component", "mcp", "tenant", tenant),
		// 2026-07-28 forbids requests from the server (elicitation) and
		// wants them as input-required results (SEP-2322), which this
		// package does not make yet: clients negotiate 2025-11-25.
		SupportedProtocolVersions: sessionVersions(),
	})
	s.AddReceivingMiddleware(h.toolsMiddleware(tenant))
	h.servers[tenant] = s
	return s
}

// sessionVersions are the SDK's protocol versions that keep sessions and
// server-to-client requests: those before 2026-07-28.
func sessionVersions() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			out = append(out, v)
		}
	}
	return out
}

// sessionPrefix is the start of a tenant's session IDs: a tag of the
// tenant (not the name itself, which may be private).
func sessionPrefix(tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return hex.EncodeToString(sum[:6]) + "-"
}

// toolsMiddleware answers tools/list and tools/call from the tenant's
// assistants, which change while the server runs (the SDK's own tool
// table is fixed per server); other methods go to the SDK.
func (h *Handler) toolsMiddleware(tenant string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				res, err := h.listTools(ctx, tenant)
				return res, storageError(err)
			case *mcp.CallToolRequest:
				res, err := h.callTool(ctx, tenant, r)
				if se, ok := db.AsStorage(err); ok {
					// The caller (often a model) reads a tool error; the
					// log has the database's name.
					h.log().Error("mcp: a tool call failed on the database's storage", "tool", r.Params.Name, "err", err)
					return toolError("%s", se.Advice()), nil
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// codeServerUnavailable is the JSON-RPC error code (in the range left to
// servers) for a storage failure of the database.
const codeServerUnavailable = -32001

// storageError turns a storage failure of the database into a JSON-RPC
// error saying what happened and what to do, without the server's paths;
// other errors pass unchanged.
func storageError(err error) error {
	if se, ok := db.AsStorage(err); ok {
		return &jsonrpc.Error{Code: codeServerUnavailable, Message: se.Advice()}
	}
	return err
}

// problemWriter turns the transport's plain-text refusals (a missing
// session, a wrong Accept header, a body too large) into problem+json,
// as every other route answers errors; other answers pass through.
type problemWriter struct {
	http.ResponseWriter
	r       *http.Request
	status  int
	buf     bytes.Buffer
	capture bool
}

func (p *problemWriter) WriteHeader(code int) {
	if p.status != 0 {
		return
	}
	p.status = code
	ct := p.Header().Get("Content-Type")
	if code >= 400 && (ct == "" || strings.HasPrefix(ct, "text/plain")) {
		p.capture = true
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.capture {
		if p.buf.Len() < 4096 {
			p.buf.Write(b)
		}
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// Flush flushes streamed answers (SSE).
func (p *problemWriter) Flush() {
	if p.capture {
		return
	}
	_ = http.NewResponseController(p.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish writes a captured refusal as a problem.
func (p *problemWriter) finish() {
	if !p.capture {
		return
	}
	p.Header().Del("Content-Type")
	detail := strings.TrimSpace(p.buf.String())
	if detail == "" {
		detail = http.StatusText(p.status)
	}
	wire.NewProblem(p.status, "MCP transport: "+detail).Write(p.ResponseWriter, p.r)
}

// atLeastWarn drops the SDK's info and debug records.
type atLeastWarn struct{ slog.Handler }

func (h atLeastWarn) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h atLeastWarn) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeastWarn{h.Handler.WithAttrs(as)}
}

func (h atLeastWarn) WithGroup(name string) slog.Handler {
	return atLeastWarn{h.Handler.WithGroup(name)}
}
