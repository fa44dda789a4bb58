package spec

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// Handler is what Register registers on: an *http.ServeMux, or a wrapper
// of one.
type Handler interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds a handler for every route to mux, by operation ID, so the
// mux serves exactly the routes the document lists. It fails, registering
// nothing, when a route has no handler or a handler names no route (a
// typo, or an operation removed from the table but not from the server).
func Register(mux Handler, routes []Route, handlers map[string]http.Handler) error {
	var missing, extra []string
	ids := map[string]bool{}
	for _, r := range routes {
		ids[r.OperationID] = true
		if handlers[r.OperationID] == nil {
			missing = append(missing, r.OperationID)
		}
	}
	for id := range handlers {
		if !ids[id] {
			extra = append(extra, id)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "no handler for "+strings.Join(missing, ", "))
		}
		if len(extra) > 0 {
			parts = append(parts, "handlers for operations the table does not have: "+strings.Join(extra, ", "))
		}
		return fmt.Errorf("spec: %s", strings.Join(parts, "; "))
	}
	for _, r := range routes {
		mux.Handle(r.MuxPattern(), handlers[r.OperationID])
	}
	return nil
}

// Fallback answers the requests no route takes, as problems: 405 with an
// Allow header when the path exists under other methods, else 404 naming
// the path. Mount it at "/" of the mux Register filled (or wherever the
// API's unmatched requests land), so a client mistake never gets a
// text/plain answer.
func Fallback(routes []Route) http.Handler {
	probe := http.NewServeMux()
	var methods []string
	for _, r := range routes {
		probe.Handle(r.MuxPattern(), http.NotFoundHandler())
		if !slices.Contains(methods, r.Method) {
			methods = append(methods, r.Method)
		}
	}
	slices.Sort(methods)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var allow []string
		for _, m := range methods {
			if m == req.Method {
				continue
			}
			r2 := req.Clone(req.Context())
			r2.Method = m
			if _, pattern := probe.Handler(r2); pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			wire.NewProblem(http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", req.Method, req.URL.Path, strings.Join(allow, " or "))).Write(w, req)
			return
		}
		wire.NewProblem(http.StatusNotFound, fmt.Sprintf("no route for %s %s; the routes are listed in /openapi.json", req.Method, req.URL.Path)).Write(w, req)
	})
}
