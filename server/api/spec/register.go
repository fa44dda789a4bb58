package spec

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Register adds a handler for every route to mux, by operation ID, so the
// mux serves exactly the routes the document lists. It fails, registering
// nothing, when a route has no handler or a handler names no route (a
// typo, or an operation removed from the table but not from the server).
func Register(mux *http.ServeMux, routes []Route, handlers map[string]http.Handler) error {
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
