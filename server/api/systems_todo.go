package api

import "net/http"

// systemHandlers returns the handlers of the system routes (being written).
func (a *API) systemHandlers() map[string]http.Handler { return map[string]http.Handler{} }
