package openai

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// callModes runs a request through Generate or through Stream and returns
// the error.
var callModes = map[string]func(m *Model, ctx context.Context, req *llm.Request) error{
	"generate": func(m *Model, ctx context.Context, req *llm.Request) error {
		_, err := m.Generate(ctx, req)
		return err
	},
	"stream": func(m *Model, ctx context.Context, req *llm.Request) error {
		_, err := llm.Assemble(m.Stream(ctx, req))
		return err
	},
}

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		header    map[string]string
		want      llm.APIError
		retryable bool
	}{
		{
			name: "400", status: 400, body: "error_400/body.json",
			// The server asks for a retry; the SDK must not make one.
			header: map[string]string{"X-Should-Retry": "true"},
			want: llm.APIError{StatusCode: 400, Type: "invalid_request_error", Code: "invalid_value",
				Message: "Invalid value for 'temperature': expected a number between 0 and 2."},
		},
		{
			name: "401", status: 401, body: "error_401/body.json",
			want: llm.APIError{StatusCode: 401, Type: "invalid_request_error", Code: "invalid_api_key",
				Message: "Incorrect API key provided: sk-fixt****0000. You can find your API key in your account settings."},
		},
		{
			name: "429 Retry-After", status: 429, body: "error_429/body.json",
			header: map[string]string{"Retry-After": "7"},
			want: llm.APIError{StatusCode: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 7 * time.Second,
				Message: "Rate limit reached for requests per minute. Please try again in 7s."},
			retryable: true,
		},
		{
			name: "429 retry-after-ms", status: 429, body: "error_429/body.json",
			header: map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"},
			want: llm.APIError{StatusCode: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 1500 * time.Millisecond,
				Message: "Rate limit reached for requests per minute. Please try again in 7s."},
			retryable: true,
		},
		{
			name: "500", status: 500, body: "error_500/body.json",
			want: llm.APIError{StatusCode: 500, Type: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
			retryable: true,
		},
	}
	for _, c := range cases {
		for mode, call := range callModes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				s := newServer(t, serveJSON(c.status, fixture(t, c.body), c.header))
				err := call(newModel(t, s), context.Background(), hello())
				ae := asAPIError(t, err)
				got := *ae
				got.Err = nil
				want := c.want
				want.Provider, want.Model = "openai", fixtureModel
				if got != want {
					t.Errorf("APIError\n got %+v\nwant %+v", got, want)
				}
				if ae.Err == nil {
					t.Error("Err is nil; want the SDK's error kept")
				}
				if ae.Retryable() != c.retryable || llm.IsRetryable(err) != c.retryable {
					t.Errorf("retryable = %v, want %v", ae.Retryable(), c.retryable)
				}
				if n := s.count(); n != 1 {
					t.Errorf("%d HTTP requests, want exactly 1 (the SDK must not retry)", n)
				}
			})
		}
	}
}

func TestCompatibleErrorBodies(t *testing.T) {
	cases := []struct {
		name, body            string
		status                int
		typ, code, msg, wantE string
	}{
		{name: "vLLM top-level", status: 400, typ: "BadRequestError", code: "400",
			body: `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}`,
			msg:  "max_tokens is too large"},
		{name: "error string", status: 404, msg: `model "nope" not found, try pulling it first`,
			body: `{"error":"model \"nope\" not found, try pulling it first"}`},
		{name: "FastAPI detail", status: 422, msg: `[{"loc":["body","messages"],"msg":"field required"}]`,
			body: `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`},
		{name: "plain text", status: 502, msg: "<html> <body>Bad Gateway</body> </html>",
			body: "<html>\n  <body>Bad Gateway</body>\n</html>\n"},
		{name: "empty", status: 503, body: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, serveJSON(c.status, []byte(c.body), nil))
			_, err := newModel(t, s).Generate(context.Background(), hello())
			ae := asAPIError(t, err)
			if ae.StatusCode != c.status || ae.Type != c.typ || ae.Code != c.code || ae.Message != c.msg {
				t.Errorf("got status %d type %q code %q message %q\nwant status %d type %q code %q message %q",
					ae.StatusCode, ae.Type, ae.Code, ae.Message, c.status, c.typ, c.code, c.msg)
			}
			if !strings.Contains(err.Error(), "HTTP ") {
				t.Errorf("Error() = %q, want the status in it", err)
			}
		})
	}
	long := strings.Repeat("é", 400)
	if _, _, msg := parseErrorBody([]byte(long)); len(msg) > maxPlainMessage+len("…") || !strings.HasSuffix(msg, "…") {
		t.Errorf("long plain body gave a %d-byte message", len(msg))
	}
}

func TestNetworkError(t *testing.T) {
	for mode, call := range callModes {
		t.Run(mode, func(t *testing.T) {
			s := newServer(t, serveJSON(200, nil, nil))
			m := newModel(t, s)
			s.Close() // nothing listens any more
			err := call(m, context.Background(), hello())
			ae := asAPIError(t, err)
			if ae.StatusCode != 0 || ae.Err == nil || !ae.Retryable() {
				t.Errorf("error = %+v, want a retryable APIError with status 0 and Err", ae)
			}
			if ae.Provider != "openai" || ae.Model != fixtureModel {
				t.Errorf("provider %q model %q", ae.Provider, ae.Model)
			}
		})
	}
}

func TestMalformedReply(t *testing.T) {
	for name, body := range map[string]string{
		"not json":   `{"id": "x", "choices": [`,
		"no choices": `{"id":"x","object":"chat.completion","model":"m","choices":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, serveJSON(200, []byte(body), nil))
			_, err := newModel(t, s).Generate(context.Background(), hello())
			ae := asAPIError(t, err)
			if ae.StatusCode != 0 || ae.Err == nil {
				t.Errorf("error = %+v, want status 0 with Err", ae)
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	for mode, call := range callModes {
		t.Run(mode, func(t *testing.T) {
			s := newServer(t, serveSSE(fixture(t, "stream_text/stream.sse")))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := call(newModel(t, s), ctx, hello())
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if _, ok := errors.AsType[*llm.APIError](err); ok || llm.IsRetryable(err) {
				t.Errorf("err = %v (%T), want the bare, non-retryable context error", err, err)
			}
		})
	}
}

func TestProviderNameInErrors(t *testing.T) {
	s := newServer(t, serveJSON(500, fixture(t, "error_500/body.json"), nil))
	_, err := newModel(t, s, WithProviderName("openai-compatible")).Generate(context.Background(), hello())
	if ae := asAPIError(t, err); ae.Provider != "openai-compatible" {
		t.Errorf("Provider = %q", ae.Provider)
	}
	if !strings.Contains(err.Error(), `openai-compatible model "gpt-4o-fixture": HTTP 500 server_error`) {
		t.Errorf("Error() = %q", err)
	}
}
