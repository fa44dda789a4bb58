package api

import "net/http"

// storeHandlers returns the handlers of the store routes (being written).
func (a *API) storeHandlers() map[string]http.Handler { return map[string]http.Handler{} }
