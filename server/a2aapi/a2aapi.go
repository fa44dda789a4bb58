// Package a2aapi serves every Trellis assistant as an A2A agent (protocol
// 1.0, and 0.3 for clients that send no A2A-Version header): an agent card
// per assistant, and JSON-RPC over HTTP with server-sent events at
// /a2a/{assistant}. It is a translator over the run service (server/runs),
// as the other wires are: an A2A context is a thread, a task is a run and
// the runs that answer its questions, a message becomes the run's input
// (or the answer to what the task asks), and a run that stops for a
// person leaves its task input-required with the question. The JSON-RPC
// framing (both protocol versions, the SSE stream) is the a2a-go SDK's
// (a2asrv, a2acompat/a2av0); what each method does is here. See
// docs/a2a.md.
package a2aapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/runs"
)

// Operation IDs of the wire's routes in the route table.
const (
	// OperationCard is GET /.well-known/agent-card.json (?assistant_id=).
	OperationCard = "getA2AAgentCard"
	// OperationAssistantCard is GET /a2a/{assistant}/.well-known/agent-card.json.
	OperationAssistantCard = "getA2AAssistantCard"
	// OperationRPC is POST /a2a/{assistant}: the JSON-RPC endpoint.
	OperationRPC = "a2aJSONRPC"
)

// DefaultTenant is the tenant of requests when Handler.Tenant is nil.
const DefaultTenant = "default"

// Handler serves the A2A routes.
type Handler struct {
	DB    db.DB
	Runs  *runs.Service
	Saver checkpoint.Saver
	// Graphs describes the assistants' graphs on their cards (may be nil).
	Graphs *runs.Registry
	// Enqueue hands a thread to the run queue.
	Enqueue runs.Enqueuer
	// Tenant returns a request's tenant (DefaultTenant when nil).
	Tenant func(r *http.Request) string
	// AuthOn reports whether requests need an API key; the cards then
	// name the key schemes (nil: never).
	AuthOn func(ctx context.Context) bool
	// CheckPushURL refuses push notification URLs the outbound guard
	// would not dial (the webhooks' check; nil: any URL).
	CheckPushURL func(ctx context.Context, url string) error
	// Version is the server's version, shown as the agents' version.
	Version string
	// BodyLimit bounds request bodies (0: wire.DefaultBodyLimit).
	BodyLimit int64
	// KeepAlive is the interval of SSE comments on a quiet stream (0: 15 s).
	KeepAlive time.Duration
	// Poll is how often a followed run's status is read (0:
	// runs.DefaultFollowPoll).
	Poll time.Duration
	// Log receives failures (slog.Default() when nil).
	Log *slog.Logger
}

// Handlers returns the wire's handlers by operation ID.
func (h *Handler) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		OperationCard:          http.HandlerFunc(h.card),
		OperationAssistantCard: http.HandlerFunc(h.assistantCard),
		OperationRPC:           http.HandlerFunc(h.rpc),
		OperationRESTGet:       http.HandlerFunc(h.rest),
		OperationRESTPost:      http.HandlerFunc(h.rest),
		OperationRESTDelete:    http.HandlerFunc(h.rest),
	}
}

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

func (h *Handler) keepAlive() time.Duration {
	if h.KeepAlive > 0 {
		return h.KeepAlive
	}
	return 15 * time.Second
}

// streamingMethods are the methods answered with an event stream, in
// both protocol versions.
var streamingMethods = map[string]bool{
	"SendStreamingMessage": true, "SubscribeToTask": true, // 1.0
	"message/stream": true, "tasks/resubscribe": true, // 0.3
}

// rpc serves POST /a2a/{assistant}: the request's protocol version picks
// the SDK's JSON-RPC binding (1.0 with A2A-Version: 1.0; 0.3 without the
// header, as the specification says), both over one agent.
func (h *Handler) rpc(w http.ResponseWriter, r *http.Request) {
	ctx, tenant := r.Context(), h.tenant(r)
	limitBytes := h.BodyLimit
	if limitBytes <= 0 {
		limitBytes = wire.DefaultBodyLimit
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limitBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			rpcError(w, nil, a2a.NewError(a2a.ErrInvalidRequest, fmt.Sprintf("the request body is over %d bytes", limitBytes)), http.StatusRequestEntityTooLarge)
			return
		}
		rpcError(w, nil, a2a.NewError(a2a.ErrParseError, "the request body could not be read: "+err.Error()), http.StatusBadRequest)
		return
	}
	var head struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &head) // the SDK answers a malformed body
	version := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
	if version == "" {
		version = strings.TrimSpace(r.URL.Query().Get(a2a.SvcParamVersion))
	}
	v1 := version == "1" || strings.HasPrefix(version, "1.")
	if !v1 && version != "" && version != "0.3" && !strings.HasPrefix(version, "0.3.") {
		rpcError(w, head.ID, a2a.NewError(a2a.ErrVersionNotSupported, fmt.Sprintf("A2A-Version %q is not served here: send 1.0, or no header for 0.3", version)), http.StatusOK)
		return
	}
	a, err := h.assistant(ctx, tenant, r.PathValue("assistant"))
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			wire.NotFound("assistant", r.PathValue("assistant")).Write(w, r)
			return
		}
		h.fail(w, r, err)
		return
	}
	if streamingMethods[head.Method] {
		// The slot is taken before a run exists, so a refusal leaves
		// nothing behind; the SDK writes the stream's headers at once.
		if ok, detail := limit.Take(r); !ok {
			w.Header().Set("Retry-After", "1")
			rpcError(w, head.ID, a2a.NewError(a2a.ErrServerError, detail), http.StatusTooManyRequests)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ag := &agent{h: h, tenant: tenant, assistant: a}
	opt := a2asrv.WithTransportKeepAlive(h.keepAlive())
	if v1 {
		a2asrv.NewJSONRPCHandler(ag, opt).ServeHTTP(w, r)
		return
	}
	a2av0.NewJSONRPCHandler(ag, opt).ServeHTTP(w, r)
}

// rpcError answers a JSON-RPC error before the SDK reads the request.
func rpcError(w http.ResponseWriter, id any, err *a2a.Error, status int) {
	code := -32603
	for c, target := range map[int]error{-32700: a2a.ErrParseError, -32600: a2a.ErrInvalidRequest, -32000: a2a.ErrServerError, -32009: a2a.ErrVersionNotSupported} {
		if errors.Is(err, target) {
			code = c
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": err.Message},
	})
}

// assistant resolves the path's assistant: an ID, a graph ID (its first
// assistant) or an assistant's name, as the other wires do.
func (h *Handler) assistant(ctx context.Context, tenant, name string) (db.Assistant, error) {
	return db.FindAssistant(ctx, h.DB, tenant, name)
}

// fail answers a failure outside JSON-RPC (the cards, an assistant that
// cannot be read) as a problem.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, db.ErrNotFound) {
		wire.NewProblem(http.StatusNotFound, err.Error()).Write(w, r)
		return
	}
	h.log().Error("a2a request failed", "path", r.URL.Path, "err", err)
	if sp := wire.StorageProblem(err); sp != nil {
		sp.Write(w, r)
		return
	}
	wire.NewProblem(http.StatusInternalServerError, "the server failed: "+err.Error()).Write(w, r)
}
