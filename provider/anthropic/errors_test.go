package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/llm"
)

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      []byte
		header    http.Header
		want      llm.APIError // Provider, Model and Err are checked apart
		retryable bool
	}{
		{
			name: "400", status: 400, body: fixture(t, "errors", "400.json"),
			want: llm.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "messages.0.content.0.text: text content blocks must be non-empty"},
		},
		{
			name: "401", status: 401, body: fixture(t, "errors", "401.json"),
			want: llm.APIError{StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key"},
		},
		{
			name: "429 retry-after", status: 429, body: fixture(t, "errors", "429.json"),
			header:    http.Header{"Retry-After": {"7"}},
			want:      llm.APIError{StatusCode: 429, Type: "rate_limit_error", Message: "This request would exceed the rate limit for your organization of 50 requests per minute.", RetryAfter: 7 * time.Second},
			retryable: true,
		},
		{
			name: "429 retry-after-ms", status: 429, body: fixture(t, "errors", "429.json"),
			header:    http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1500"}},
			want:      llm.APIError{StatusCode: 429, Type: "rate_limit_error", Message: "This request would exceed the rate limit for your organization of 50 requests per minute.", RetryAfter: 1500 * time.Millisecond},
			retryable: true,
		},
		{
			name: "500", status: 500, body: fixture(t, "errors", "500.json"),
			want:      llm.APIError{StatusCode: 500, Type: "api_error", Message: "Internal server error"},
			retryable: true,
		},
		{
			name: "529", status: 529, body: fixture(t, "errors", "529.json"),
			want:      llm.APIError{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"},
			retryable: true,
		},
		{
			name: "502 from a proxy", status: 502, body: fixture(t, "errors", "502.html"),
			want:      llm.APIError{StatusCode: 502, Message: strings.TrimSpace(string(fixture(t, "errors", "502.html")))},
			retryable: true,
		},
	}
	ignoreErr := cmpopts.IgnoreFields(llm.APIError{}, "Provider", "Model", "Err")
	for _, c := range cases {
		for _, mode := range []string{"Generate", "Stream"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				rec := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
					for k, v := range c.header {
						w.Header()[k] = v
					}
					ct := "application/json"
					if strings.HasPrefix(string(c.body), "<") {
						ct = "text/html"
					}
					w.Header().Set("Content-Type", ct)
					w.WriteHeader(c.status)
					_, _ = w.Write(c.body)
				})
				m := rec.model(t)
				var err error
				if mode == "Generate" {
					_, err = m.Generate(t.Context(), userReq("hi"))
				} else {
					_, err = collect(t, m.Stream(t.Context(), userReq("hi")))
				}
				ae, ok := errors.AsType[*llm.APIError](err)
				if !ok {
					t.Fatalf("err = %v (%T), want *llm.APIError", err, err)
				}
				if d := cmp.Diff(c.want, *ae, ignoreErr); d != "" {
					t.Errorf("APIError (-want +got):\n%s", d)
				}
				if ae.Provider != "anthropic" || ae.Model != testModel || ae.Err == nil {
					t.Errorf("APIError Provider %q Model %q Err %v: want anthropic, %s and the SDK error", ae.Provider, ae.Model, testModel, ae.Err)
				}
				if got := ae.Retryable(); got != c.retryable {
					t.Errorf("Retryable() = %v, want %v", got, c.retryable)
				}
				if !strings.Contains(err.Error(), "anthropic") || !strings.Contains(err.Error(), testModel) {
					t.Errorf("error text %q does not name the provider and model", err)
				}
				// The SDK must not retry: llm.Retry owns retries.
				if n := len(rec.requests()); n != 1 {
					t.Errorf("server got %d requests, want exactly 1 (SDK retries must be off)", n)
				}
			})
		}
	}
}
