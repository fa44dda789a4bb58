package config

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Auth is the auth: section.
//
//	auth:
//	  required: true   # refuse requests without a key even before one exists
type Auth struct {
	// Required turns API-key auth on even when no key exists. Without it,
	// auth is on exactly when at least one active key exists (`trellis
	// keys create`).
	Required bool `yaml:"required"`
}

// CORS is the cors: section, for browser clients on other origins. Without
// allow_origins no CORS headers are sent (browsers then allow same-origin
// calls only).
//
//	cors:
//	  allow_origins: ["https://app.example.com"]   # or ["*"]
//	  allow_credentials: false
//	  max_age: 10m
type CORS struct {
	// AllowOrigins are the origins allowed ("*": any; "https://*.example.com"
	// matches one wildcard).
	AllowOrigins []string `yaml:"allow_origins"`
	// AllowMethods (default GET, POST, PUT, PATCH, DELETE).
	AllowMethods []string `yaml:"allow_methods"`
	// AllowHeaders the browser may send (default: Authorization,
	// X-Api-Key, Content-Type, Accept, Last-Event-ID and the LangGraph
	// SDK's headers; "*" allows any).
	AllowHeaders []string `yaml:"allow_headers"`
	// ExposeHeaders the page's script may read (default: Location,
	// Content-Location, Retry-After, X-Pagination-Next and the like).
	ExposeHeaders []string `yaml:"expose_headers"`
	// AllowCredentials lets the browser send cookies and HTTP auth; not
	// allowed with the "*" origin.
	AllowCredentials bool `yaml:"allow_credentials"`
	// MaxAge is how long a browser may cache a preflight answer (0: the
	// browser's default).
	MaxAge time.Duration `yaml:"max_age"`
}

// Limits is the limits: section; zero values mean no limit (or the
// built-in default where the field says so).
//
//	limits:
//	  max_concurrent_runs: 4      # per tenant; more runs wait in the queue
//	  requests_per_second: 20     # per tenant
//	  burst: 40
//	  max_streams: 10             # open event streams per tenant
//	  max_body_bytes: 1048576     # request bodies (default 4 MiB)
//	  run_timeout: 10m            # a run running longer ends with status timeout
//	  body_timeout: 30s           # a request body arriving slower gets 408
type Limits struct {
	// MaxConcurrentRuns bounds each tenant's running runs in this
	// process; runs beyond it stay pending in the queue until one ends.
	MaxConcurrentRuns int `yaml:"max_concurrent_runs"`
	// RequestsPerSecond bounds each tenant's request rate (429 beyond).
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// Burst is how many requests may come at once (default: the rate,
	// rounded up).
	Burst int `yaml:"burst"`
	// MaxStreams bounds each tenant's open event streams (429 beyond).
	MaxStreams int `yaml:"max_streams"`
	// MaxBodyBytes bounds request bodies (413 beyond; the API's default
	// when 0).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// RunTimeout bounds one run; it then ends with status timeout.
	RunTimeout time.Duration `yaml:"run_timeout"`
	// BodyTimeout bounds the time a request body takes to arrive (408
	// beyond; 30 s when 0).
	BodyTimeout time.Duration `yaml:"body_timeout"`
}

// validateSecurity checks the auth, cors and limits sections.
func (f *File) validateSecurity(bad func(field, format string, args ...any)) {
	star := false
	for i, o := range f.CORS.AllowOrigins {
		field := fmt.Sprintf("cors.allow_origins[%d]", i)
		if o == "*" {
			star = true
			continue
		}
		u, err := url.Parse(strings.Replace(o, "*.", "x.", 1))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			bad(field, "%q is not an origin like https://app.example.com (scheme and host, no path)", o)
		}
		if strings.Count(o, "*") > 1 || (strings.Contains(o, "*") && !strings.Contains(o, "://*.")) {
			bad(field, "%q: a wildcard may only start the host, as in https://*.example.com", o)
		}
	}
	if star && f.CORS.AllowCredentials {
		bad("cors.allow_credentials", "not allowed with the origin \"*\" (browsers refuse it); list the origins")
	}
	for i, m := range f.CORS.AllowMethods {
		switch strings.ToUpper(m) {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			bad(fmt.Sprintf("cors.allow_methods[%d]", i), "%q is not one of GET, HEAD, POST, PUT, PATCH, DELETE", m)
		}
	}
	if f.CORS.MaxAge < 0 {
		bad("cors.max_age", "negative")
	}
	l := f.Limits
	for _, v := range []struct {
		field string
		neg   bool
	}{
		{"limits.max_concurrent_runs", l.MaxConcurrentRuns < 0},
		{"limits.requests_per_second", l.RequestsPerSecond < 0},
		{"limits.burst", l.Burst < 0},
		{"limits.max_streams", l.MaxStreams < 0},
		{"limits.max_body_bytes", l.MaxBodyBytes < 0},
		{"limits.run_timeout", l.RunTimeout < 0},
		{"limits.body_timeout", l.BodyTimeout < 0},
	} {
		if v.neg {
			bad(v.field, "negative; 0 means no limit")
		}
	}
	if l.Burst > 0 && l.RequestsPerSecond == 0 {
		bad("limits.burst", "set without limits.requests_per_second")
	}
}
