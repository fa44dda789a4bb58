package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/cors"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/internal/auth"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/web"
)

// publicPaths are served without a key even when auth is on: the routes
// the table marks public (the health check, the version and the API's
// document, as LangGraph's server does), as "GET /ok".
var publicPaths = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range spec.Routes() {
		if r.Public() {
			m[r.MuxPattern()] = true
		}
	}
	return m
}()

func isPublic(r *http.Request) bool {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if method == http.MethodGet && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, web.Prefix)) {
		return true // the web page and its assets: the page asks for the key
	}
	return publicPaths[method+" "+r.URL.Path]
}

// a2aCardPath matches the paths of the A2A agent cards.
func a2aCardPath(path string) bool {
	if path == "/.well-known/agent-card.json" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/a2a/")
	name, ok2 := strings.CutSuffix(rest, "/.well-known/agent-card.json")
	return ok && ok2 && name != "" && !strings.Contains(name, "/")
}

// publicRequest is isPublic, plus the A2A cards when the operator serves
// them without a key (a2a.public_card) and the request carries none: a
// request with a key reads its own tenant's cards.
func (s *Server) publicRequest(r *http.Request) bool {
	if isPublic(r) {
		return true
	}
	return s.cfg.A2APublicCard && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		a2aCardPath(r.URL.Path) && auth.Presented(r) == ""
}

// authOn reports whether requests need a key, for the A2A cards' security
// schemes: forced on, required, or some key is active.
func (s *Server) authOn(force bool) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		if force || s.cfg.Auth.Required {
			return true
		}
		n, err := s.st.db.CountActiveKeys(ctx)
		return err != nil || n > 0 // unknown: say keys are needed
	}
}

// requestTenant is the tenant of a request: its key's, or the default
// tenant when auth is off and it carried none.
func requestTenant(r *http.Request) string {
	if t, ok := auth.Tenant(r.Context()); ok {
		return t
	}
	return api.DefaultTenant
}

// isLoopback reports whether host (of host:port) only accepts local
// connections: localhost or a loopback IP. "" and 0.0.0.0 listen on every
// interface, and other names may resolve anywhere, so they are not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkExposure applies the loopback rule before listening: without auth
// (no active key, auth.required unset) only a loopback address is served,
// unless InsecureNoAuth says otherwise. It returns whether auth must stay
// on whatever happens to the keys: on a public address it does, so that
// revoking the last key closes the server instead of opening it.
func (s *Server) checkExposure(ctx context.Context) (forceAuth bool, err error) {
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	n, err := s.st.db.CountActiveKeys(ctx)
	if err != nil {
		return false, fmt.Errorf("server: count the API keys: %w", err)
	}
	on := n > 0 || s.cfg.Auth.Required
	loopback := isLoopback(host)
	switch {
	case loopback && !on && s.cfg.WarnAuthOff:
		s.log.Warn("auth is off: no API key exists, so the server listens on loopback only and every request is the default tenant's; create a key with `trellis keys create --tenant NAME` to turn auth on")
	case loopback && !on:
		s.log.Debug("auth is off: no API key exists, so the server listens on loopback only and every request is the default tenant's")
	case !loopback && !on && !s.cfg.InsecureNoAuth:
		return false, &publicNoAuth{s.cfg.Addr}
	case !loopback && !on:
		s.log.Warn("AUTH IS OFF ON A PUBLIC ADDRESS (--insecure-no-auth): anyone who reaches " + s.cfg.Addr + " can read and change every thread")
	default:
		s.log.Info("auth is on: requests need an API key", "active_keys", n)
	}
	return !loopback && !s.cfg.InsecureNoAuth, nil
}

// publicNoAuth is the one-line refusal of the loopback rule.
type publicNoAuth struct{ addr string }

func (e *publicNoAuth) Error() string {
	return fmt.Sprintf("refusing to listen on %s without auth: no API key exists; create one with `trellis keys create --tenant NAME`, listen on 127.0.0.1, or pass --insecure-no-auth", e.addr)
}

// defaultBodyTimeout is how long a request body may take to arrive.
const defaultBodyTimeout = 30 * time.Second

// security wraps the mux: CORS (preflights answered before auth), then
// API keys, then the per-tenant request rate, then the body's size and
// arrival time (a body is read only once its sender is known).
func (s *Server) security(next http.Handler, forceAuth bool) http.Handler {
	bodyLimit := s.cfg.BodyLimit
	if bodyLimit <= 0 {
		bodyLimit = wire.DefaultBodyLimit
	}
	bodyTimeout := s.cfg.Limits.BodyTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = defaultBodyTimeout
	}
	h := limit.Body(bodyLimit, bodyTimeout, s.refused, next)
	rl := limit.NewRate(s.cfg.Limits.RequestsPerSecond, s.cfg.Limits.Burst, requestTenant).OnRefused(s.refused)
	if s.rdb != nil {
		rl.WithShared(limit.NewRedisRate(s.rdb, "trellis:rate:"))
	}
	h = rl.Middleware(h)
	h = auth.New(auth.Config{Keys: s.st.db, Required: s.cfg.Auth.Required || forceAuth, Public: s.publicRequest, Log: s.log,
		OnTenant: s.ensureAssistantsOf}).Middleware(h)
	return corsHandler(s.cfg.CORS, h)
}

// Default CORS lists: what the LangGraph SDK, MCP clients (session and
// protocol headers) and browsers' fetch send and read.
var (
	defaultCORSMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	defaultCORSHeaders = []string{"Authorization", "X-Api-Key", "Content-Type", "Accept", "Last-Event-ID", "Prefer", "X-Request-Id", "Mcp-Session-Id", "Mcp-Protocol-Version"}
	defaultCORSExpose  = []string{"Location", "Content-Location", "Retry-After", "X-Pagination-Next", "X-Pagination-Total", "X-Request-Id", "Mcp-Session-Id"}
)

// corsHandler answers CORS preflights and adds the CORS headers for the
// configured origins (github.com/rs/cors); without origins it is next.
func corsHandler(c config.CORS, next http.Handler) http.Handler {
	if len(c.AllowOrigins) == 0 {
		return next
	}
	or := func(v, def []string) []string {
		if len(v) == 0 {
			return def
		}
		return v
	}
	return cors.New(cors.Options{
		AllowedOrigins:   c.AllowOrigins,
		AllowedMethods:   or(c.AllowMethods, defaultCORSMethods),
		AllowedHeaders:   or(c.AllowHeaders, defaultCORSHeaders),
		ExposedHeaders:   or(c.ExposeHeaders, defaultCORSExpose),
		AllowCredentials: c.AllowCredentials,
		MaxAge:           int(c.MaxAge.Seconds()),
	}).Handler(next)
}
