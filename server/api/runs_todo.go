package api

import "net/http"

// runHandlers returns the handlers of the run routes (being written).
func (a *API) runHandlers() map[string]http.Handler { return map[string]http.Handler{} }
