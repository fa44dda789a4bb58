package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// openAIErrors gives the refusals the middleware in front of the OpenAI
// wire answers (a missing key, a rate limit, a body too large or too slow,
// unreadable keys) OpenAI's error JSON on /v1 paths, as the wire's own
// errors have: OpenAI clients read error.message and error.type. Other
// paths, and every answer that is not an RFC 9457 problem, pass untouched.
func openAIErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		pw := &problemRewriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		pw.finish()
	})
}

// problemRewriter holds back a problem answer to rewrite it.
type problemRewriter struct {
	http.ResponseWriter
	status  int
	capture bool
	body    bytes.Buffer
}

// maxProblem bounds the problem body held back.
const maxProblem = 64 << 10

func (p *problemRewriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(p.Header().Get("Content-Type"), "application/problem+json") {
		p.status, p.capture = code, true
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *problemRewriter) Write(b []byte) (int, error) {
	if !p.capture {
		return p.ResponseWriter.Write(b)
	}
	if p.body.Len()+len(b) <= maxProblem {
		p.body.Write(b)
	}
	return len(b), nil
}

// Flush passes streaming answers through.
func (p *problemRewriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.capture {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (p *problemRewriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish writes the held-back problem as OpenAI's error object.
func (p *problemRewriter) finish() {
	if !p.capture {
		return
	}
	var prob struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(p.body.Bytes(), &prob)
	msg := prob.Detail
	if msg == "" {
		msg = prob.Title
	}
	if msg == "" {
		msg = http.StatusText(p.status)
	}
	typ, code := "invalid_request_error", strconv.Itoa(p.status)
	switch {
	case p.status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case p.status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case p.status == http.StatusRequestEntityTooLarge:
		code = "request_too_large"
	case p.status == http.StatusRequestTimeout:
		code = "request_timeout"
	case p.status >= 500:
		typ, code = "server_error", "server_error"
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	h := p.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	p.ResponseWriter.WriteHeader(p.status)
	_, _ = p.ResponseWriter.Write(out)
}
