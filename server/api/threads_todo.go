package api

import "net/http"

// threadHandlers returns the handlers of the thread routes (being written).
func (a *API) threadHandlers() map[string]http.Handler { return map[string]http.Handler{} }
