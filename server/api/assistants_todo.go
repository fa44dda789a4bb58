package api

import "net/http"

// assistantHandlers returns the handlers of the assistant routes (being written).
func (a *API) assistantHandlers() map[string]http.Handler { return map[string]http.Handler{} }
