package config

import (
	"strings"
	"testing"
	"time"
)

// The security sections parse, durations included.
func TestParseSecuritySections(t *testing.T) {
	src := `
auth: {required: true}
cors:
  allow_origins: ["https://app.example.com", "https://*.example.org"]
  allow_credentials: true
  max_age: 10m
limits:
  max_concurrent_runs: 4
  requests_per_second: 2.5
  burst: 5
  max_streams: 3
  max_body_bytes: 2048
  run_timeout: 90s
`
	f, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Auth.Required || len(f.CORS.AllowOrigins) != 2 || !f.CORS.AllowCredentials || f.CORS.MaxAge != 10*time.Minute {
		t.Errorf("auth/cors = %+v %+v", f.Auth, f.CORS)
	}
	want := Limits{MaxConcurrentRuns: 4, RequestsPerSecond: 2.5, Burst: 5, MaxStreams: 3, MaxBodyBytes: 2048, RunTimeout: 90 * time.Second}
	if f.Limits != want {
		t.Errorf("limits = %+v, want %+v", f.Limits, want)
	}
}

// Bad values are errors naming the field.
func TestSecuritySectionErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`cors: {allow_origins: ["app.example.com"]}`, "cors.allow_origins[0]"},
		{`cors: {allow_origins: ["https://app.example.com/path"]}`, "cors.allow_origins[0]"},
		{`cors: {allow_origins: ["https://a.*.com"]}`, "wildcard"},
		{`cors: {allow_origins: ["*"], allow_credentials: true}`, "cors.allow_credentials"},
		{`cors: {allow_methods: [TRACE]}`, "cors.allow_methods[0]"},
		{`limits: {max_streams: -1}`, "limits.max_streams"},
		{`limits: {run_timeout: -1s}`, "limits.run_timeout"},
		{`limits: {burst: 3}`, "limits.burst"},
		{`limits: {run_timeout: soon}`, "line 1: cannot unmarshal !!str `soon` into time.Duration"},
		{`limits: {max_runs: 3}`, "max_concurrent_runs"},
		{`auth: {requird: true}`, "unknown field \"requird\" (known: required)"},
	} {
		_, err := Parse([]byte(tc.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.src, err, tc.want)
		}
	}
}
