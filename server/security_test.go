package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// With a key in the database every route but /ok, /info and
// /openapi.json needs one: none or an unknown one is 401 with a Bearer
// challenge; Bearer and X-Api-Key both work; a revoked key is refused and
// a used key shows when it was last used.
func TestAPIKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	key := mkKey(t, file, "acme")
	r := start(t, Config{Database: file}, nil)
	anon, withKey := client{t: t, base: r.url}, client{t: t, base: r.url, key: key}

	for _, path := range []string{"/ok", "/info", "/openapi.json", "/", "/ui/app.js"} {
		if code, body, _ := anon.do("GET", path, "", ""); code != 200 {
			t.Errorf("GET %s without a key: %d %s", path, code, body)
		}
	}
	for _, c := range []struct{ name, header, value string }{
		{"no key", "", ""},
		{"unknown key", "Authorization", "Bearer trellis_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"not a Trellis key", "X-Api-Key", "sk-123"},
		{"basic auth", "Authorization", "Basic dXNlcjpwYXNz"},
	} {
		req, _ := http.NewRequest("POST", r.url+"/threads/search", strings.NewReader(`{}`))
		if c.header != "" {
			req.Header.Set(c.header, c.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: %d, WWW-Authenticate %q, Content-Type %q; want a 401 problem with a Bearer challenge",
				c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Content-Type"))
		}
	}
	if code, body, _ := withKey.do("POST", "/threads", "", `{}`); code != 200 {
		t.Errorf("Bearer key: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", r.url+"/threads/count", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("X-Api-Key: %d", resp.StatusCode)
	}

	k, err := OpenKeys(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	keys, err := k.List(context.Background(), "acme")
	if err != nil || len(keys) != 1 || keys[0].LastUsedAt.IsZero() || !strings.HasPrefix(key, keys[0].Prefix) {
		t.Fatalf("List = %+v, %v; want one key, used, whose prefix starts the key", keys, err)
	}
	if _, err := k.Revoke(context.Background(), keys[0].ID); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := withKey.do("POST", "/threads/search", "", `{}`); code != 401 || !strings.Contains(body, "revoked") {
		t.Errorf("revoked key: %d %s", code, body)
	}
	if _, _, err := k.Create(context.Background(), "no spaces please", ""); err == nil {
		t.Error("a tenant name with spaces was accepted")
	}
}

// Without keys the server serves loopback only: a public address is
// refused with an error naming --insecure-no-auth unless it is given; on a
// public address auth stays on even after the last key is revoked.
func TestLoopbackRule(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "[::1]": true, "localhost": true, "127.9.9.9": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "example.com": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v", host, got)
		}
	}

	file := filepath.Join(t.TempDir(), "t.db")
	s, err := New(context.Background(), Config{Addr: "0.0.0.0:0", Database: file, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("echo", echoGraph(nil)); err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background()) // refused before listening
	var refusal *publicNoAuth
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "--insecure-no-auth") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run on 0.0.0.0 without keys = %v; want a one-line refusal naming --insecure-no-auth", err)
	}

	for _, c := range []struct {
		name            string
		addr            string
		insecure, keyed bool
		wantForce       bool
	}{
		{"loopback, no key", "127.0.0.1:0", false, false, false},
		{"public, insecure flag", "0.0.0.0:0", true, false, false},
		{"public, a key", "0.0.0.0:0", false, true, true},
		{"public, a key, insecure flag", "0.0.0.0:0", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "t.db")
			if c.keyed {
				mkKey(t, file, "acme")
			}
			s, err := New(context.Background(), Config{Addr: c.addr, Database: file, Logger: quiet(), InsecureNoAuth: c.insecure})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			force, err := s.checkExposure(context.Background())
			if err != nil || force != c.wantForce {
				t.Errorf("checkExposure = %v, %v; want %v, nil", force, err, c.wantForce)
			}
		})
	}
}

// CORS: a preflight from an allowed origin is answered without a key and
// allows the SDK's headers; answers expose Content-Location and Location;
// other origins get no CORS headers.
func TestCORS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	key := mkKey(t, file, "acme")
	r := start(t, Config{Database: file, CORS: config.CORS{AllowOrigins: []string{"https://app.example.com"}, MaxAge: time.Minute}}, nil)

	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", r.url+"/threads", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-api-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://app.example.com")
	h := resp.Header
	if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Max-Age") != "60" {
		t.Errorf("preflight: %d %v", resp.StatusCode, h)
	}
	if h := preflight("https://evil.example.net").Header; h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin allowed: %v", h)
	}

	req, _ := http.NewRequest("POST", r.url+"/threads/"+"6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a77"+"/runs/wait", strings.NewReader(`{"assistant_id":"echo","input":{"log":["hi"]},"if_not_exists":"create"}`))
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	expose := resp.Header.Get("Access-Control-Expose-Headers")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(expose, "Content-Location") || !strings.Contains(expose, "Location") {
		t.Errorf("actual request: %d, allow-origin %q, expose %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), expose)
	}
}

// The request rate is per tenant: a tenant over it gets 429 with
// Retry-After while another tenant is served.
func TestRateLimitPerTenant(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	keyA, keyB := mkKey(t, file, "a"), mkKey(t, file, "b")
	r := start(t, Config{Database: file, Limits: config.Limits{RequestsPerSecond: 0.01, Burst: 2}}, nil)
	A, B := client{t: t, base: r.url, key: keyA}, client{t: t, base: r.url, key: keyB}
	for i := range 2 {
		if code, body, _ := A.do("POST", "/threads/count", "", `{}`); code != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, code, body)
		}
	}
	code, body, hdr := A.do("POST", "/threads/count", "", `{}`)
	retry, _ := strconv.Atoi(hdr.Get("Retry-After"))
	if code != 429 || retry < 1 || !strings.Contains(body, "too many requests") {
		t.Errorf("over the rate: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if code, body, _ := B.do("POST", "/threads/count", "", `{}`); code != 200 {
		t.Errorf("the other tenant: %d %s", code, body)
	}
	if code, _, _ := (client{t: t, base: r.url}).do("GET", "/ok", "", ""); code != 200 {
		t.Errorf("/ok of an anonymous caller: %d", code)
	}
}

// A tenant with max_streams streams open gets 429 for another, until one
// closes; body limits answer 413; a run over run_timeout ends with status
// timeout.
func TestStreamBodyAndRunLimits(t *testing.T) {
	var blocked atomic.Int32
	file := filepath.Join(t.TempDir(), "t.db")
	r := start(t, Config{Database: file, Limits: config.Limits{MaxStreams: 1, MaxBodyBytes: 300, RunTimeout: 300 * time.Millisecond}}, &blocked)
	c := client{t: t, base: r.url}

	// One stream open: a run that blocks until the timeout ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+"/runs/stream", strings.NewReader(`{"assistant_id":"echo","input":{"log":["block"]}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first stream: %d %v", resp.StatusCode, err)
	}
	code, body, hdr := c.do("POST", "/runs/stream", "", `{"assistant_id":"echo","input":{"log":["x"]}}`)
	if code != 429 || !strings.Contains(body, "event streams") || hdr.Get("Retry-After") == "" {
		t.Errorf("second stream: %d %s", code, body)
	}
	var rest strings.Builder
	for {
		line, err := rd.ReadString('\n')
		rest.WriteString(line)
		if err != nil {
			break
		}
	}
	if !strings.Contains(rest.String(), "TimeoutError") {
		t.Errorf("the blocked run's stream did not end with a timeout error:\n%s", rest.String())
	}
	if blocked.Load() != 1 {
		t.Errorf("the blocking node ran %d times, want once", blocked.Load())
	}
	// The stream closed: another may open.
	if code, body, _ := c.do("POST", "/runs/stream", "", `{"assistant_id":"echo","input":{"log":["x"]}}`); code != 200 {
		t.Errorf("stream after the first closed: %d %s", code, body)
	}

	run, err := r.s.svc.Create(context.Background(), r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "slow", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: []byte(`{"log":["block"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, r.s.st.db, "slow", run.ID); got.Status != db.RunTimeout {
		t.Errorf("a run over run_timeout ended %s (%s), want timeout", got.Status, got.Error)
	}

	big := `{"metadata":{"pad":"` + strings.Repeat("x", 400) + `"}}`
	if code, body, hdr := c.do("POST", "/threads", "", big); code != 413 || !strings.Contains(hdr.Get("Content-Type"), "problem+json") {
		t.Errorf("big body: %d %s", code, body)
	}
}

// A body that does not arrive within limits.body_timeout is answered 408.
func TestSlowBody408(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), Limits: config.Limits{BodyTimeout: 200 * time.Millisecond}}, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("POST /threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"meta")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 408 || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("slow body: %d %v", resp.StatusCode, resp.Header)
	}
}

// A pending run of a keyed tenant, left without a job while the server was
// down, runs after the start as the default tenant's do; the tenant has
// its default assistants.
func TestKeyedTenantPendingRunRequeued(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	key := mkKey(t, file, "acme")
	r := start(t, Config{Database: file}, nil)
	r.stop(t)

	d := openDB(t, file)
	ctx := context.Background()
	if _, err := d.CreateThread(ctx, "acme", db.Thread{ID: "th"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	lost, err := d.CreateRun(ctx, "acme", db.Run{ThreadID: "th", AssistantID: DefaultAssistantID("echo"), Kwargs: []byte(`{"input":{"log":["left"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	r = start(t, Config{Database: file}, nil)
	c := client{t: t, base: r.url, key: key}
	code, body, _ := c.do("GET", "/threads/th/runs/"+lost.ID+"/join", "", "")
	if code != 200 || !strings.Contains(body, "echo left") {
		t.Errorf("join acme's re-enqueued run: %d %s", code, body)
	}
}

// On the OpenAI wire's paths the middleware's refusals are OpenAI's error
// JSON, which OpenAI clients read; elsewhere they stay problems.
func TestOpenAIPathsGetOpenAIErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	mkKey(t, file, "acme")
	r := start(t, Config{Database: file}, nil)
	resp, err := http.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 || resp.Header.Get("Content-Type") != "application/json" || e.Error.Type != "authentication_error" || e.Error.Code != "invalid_api_key" || e.Error.Message == "" {
		t.Fatalf("no key on /v1: %d %s %+v", resp.StatusCode, resp.Header.Get("Content-Type"), e)
	}
	resp2, err := http.Post(r.url+"/threads/search", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 401 || !strings.Contains(resp2.Header.Get("Content-Type"), "problem+json") {
		t.Fatalf("no key on the LangGraph API: %d %s, want a 401 problem", resp2.StatusCode, resp2.Header.Get("Content-Type"))
	}
}
