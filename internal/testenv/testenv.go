// Package testenv finds the external services that backend tests use.
//
// Tests find PostgreSQL through TRELLIS_TEST_PG_DSN and Redis through
// TRELLIS_TEST_REDIS_ADDR. When a variable is unset the test is skipped with
// a message saying how to enable it, so `go test ./...` passes on a laptop.
// When TRELLIS_REQUIRE_SERVICES=1 (as .ci/run sets it) a missing service
// fails the test instead: a dead service must never give a green CI.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Environment variables read by this package.
const (
	PostgresVar = "TRELLIS_TEST_PG_DSN"
	RedisVar    = "TRELLIS_TEST_REDIS_ADDR"
	RequireVar  = "TRELLIS_REQUIRE_SERVICES"
)

// PostgresDSN returns the PostgreSQL connection string for tests, or skips
// (or fails, see the package doc) when none is configured.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return lookup(t, PostgresVar, "PostgreSQL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
}

// RedisAddr returns the Redis address (host:port) for tests, or skips (or
// fails, see the package doc) when none is configured.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return lookup(t, RedisVar, "Redis", "127.0.0.1:6379")
}

// Required reports whether missing services fail tests instead of skipping
// them.
func Required() bool { return os.Getenv(RequireVar) == "1" }

// Unreachable reports a configured service that does not answer: a failure
// under TRELLIS_REQUIRE_SERVICES=1, a skip otherwise.
func Unreachable(t testing.TB, service string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s is configured but does not answer: %v", service, err)
	}
	t.Skipf("%s is configured but does not answer (%v); start it, or unset its variable to skip these tests", service, err)
}

func lookup(t testing.TB, name, service, example string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	msg := service + " tests need " + name + " (for example " + name + "=" + example + "); .ci/run starts the service and sets it"
	if Required() {
		t.Fatal(RequireVar + "=1 but " + msg)
	}
	t.Skip(msg)
	return ""
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// Name turns a test's name into a lowercase identifier safe for a schema,
// table or key prefix (letters, digits and underscores, at most maxLen
// bytes), with suffix appended so parallel tests never collide.
func Name(t testing.TB, suffix string, maxLen int) string {
	base := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	suffix = unsafe.ReplaceAllString(strings.ToLower(suffix), "_")
	if keep := maxLen - len(suffix) - 1; len(base) > keep {
		base = base[:max(keep, 0)]
	}
	return base + "_" + suffix
}

// LangGraphSDKVar names the installed @langchain/langgraph-sdk package the
// wire tests run against (.ci/run installs it with npm ci in
// server/testdata/js).
const LangGraphSDKVar = "TRELLIS_LANGGRAPH_SDK"

// LangGraphSDK returns the SDK package folder, after checking that node is
// on PATH and that the package holds file (a path under it); it skips the
// test when something is missing, or fails it when services are required.
func LangGraphSDK(t testing.TB, file string) string {
	t.Helper()
	const install = "run `npm ci` in server/testdata/js and set " + LangGraphSDKVar + "=$PWD/server/testdata/js/node_modules/@langchain/langgraph-sdk"
	missing := func(msg string) {
		t.Helper()
		if Required() {
			t.Fatal(RequireVar + "=1 but " + msg)
		}
		t.Skip(msg)
	}
	dir := os.Getenv(LangGraphSDKVar)
	if dir == "" {
		missing("the SDK compatibility test needs node and " + LangGraphSDKVar + ": " + install)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("the SDK compatibility test needs node on PATH (" + err.Error() + ")")
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		missing(LangGraphSDKVar + " does not point at the SDK package (" + err.Error() + "): " + install)
	}
	return dir
}
