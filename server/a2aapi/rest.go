package a2aapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/limit"
)

// Operation IDs of the REST (HTTP+JSON) binding's routes: one per method
// under /a2a/{assistant}/rest/, the SDK's REST handler dispatching the
// rest of the path (message:send, message:stream, tasks, tasks/{id},
// tasks/{id}:cancel, tasks/{id}:subscribe, the push configs).
const (
	OperationRESTGet    = "a2aRESTGet"
	OperationRESTPost   = "a2aRESTPost"
	OperationRESTDelete = "a2aRESTDelete"
)

// restPrefix is the REST binding's base under an assistant's endpoint.
const restPrefix = "/rest"

// rest serves the REST binding of protocol 1.0 over the same agent as the
// JSON-RPC endpoint: the SDK's handler maps the paths to the agent's
// methods and its errors to HTTP statuses.
func (h *Handler) rest(w http.ResponseWriter, r *http.Request) {
	ctx, tenant := r.Context(), h.tenant(r)
	name := r.PathValue("assistant")
	a, err := h.assistant(ctx, tenant, name)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			wire.NotFound("assistant", name).Write(w, r)
			return
		}
		h.fail(w, r, err)
		return
	}
	limitBytes := h.BodyLimit
	if limitBytes <= 0 {
		limitBytes = wire.DefaultBodyLimit
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limitBytes))
	if err != nil {
		wire.NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body could not be read (at most %d bytes): %v", limitBytes, err)).Write(w, r)
		return
	}
	rest := "/" + r.PathValue("path")
	if r.Method == http.MethodPost && (rest == "/message:stream" || strings.HasSuffix(rest, ":subscribe")) {
		if ok, detail := limit.Take(r); !ok {
			w.Header().Set("Retry-After", "1")
			wire.NewProblem(http.StatusTooManyRequests, detail).Write(w, r)
			return
		}
	}
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = rest, ""
	r2.Body = io.NopCloser(bytes.NewReader(body))
	ag := &agent{h: h, tenant: tenant, assistant: a}
	a2asrv.NewRESTHandler(ag, a2asrv.WithTransportKeepAlive(h.keepAlive())).ServeHTTP(w, r2)
}

// restInterface is the card's REST interface for an endpoint.
func restInterface(endpoint string) *a2a.AgentInterface {
	return &a2a.AgentInterface{URL: endpoint + restPrefix, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version}
}
