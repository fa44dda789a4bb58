package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider/internal/baseurl"
)

// DefaultBaseURL is the official OpenAI API, used when neither WithBaseURL
// nor OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultProviderName is the provider part of Name and of APIError.Provider
// unless WithProviderName says otherwise.
const DefaultProviderName = "openai"

// Environment variables read by New when the matching option is not given.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// TokenLimitField says which request field carries llm.Request.MaxTokens.
type TokenLimitField int

const (
	// TokenLimitAuto sends max_completion_tokens to the official OpenAI API
	// (its reasoning models reject max_tokens) and max_tokens to any other
	// base URL (many compatible servers know only max_tokens).
	TokenLimitAuto TokenLimitField = iota
	// TokenLimitMaxCompletionTokens always sends max_completion_tokens.
	TokenLimitMaxCompletionTokens
	// TokenLimitMaxTokens always sends max_tokens.
	TokenLimitMaxTokens
)

// Option configures a Model; pass options to New.
type Option func(*config)

type config struct {
	apiKey     string
	baseURL    string
	headers    [][2]string
	httpClient *http.Client
	provider   string
	tokenField TokenLimitField
	extra      []option.RequestOption
	limits     llm.Limits
}

// WithAPIKey sets the API key sent as a bearer token. Without it New reads
// OPENAI_API_KEY, but sends it only to the official API or to
// OPENAI_BASE_URL's server (see EnvKeyAllowed); an empty key sends no
// Authorization header, which only servers with a custom base URL accept.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL points the model at another server speaking the Chat
// Completions API, e.g. "http://localhost:11434/v1" for Ollama. The path
// must include the version prefix ("/v1"): requests go to
// <base>/chat/completions. Without it New reads OPENAI_BASE_URL, then uses
// DefaultBaseURL.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHeader adds a header to every request (an organisation, a project, a
// gateway's routing key). Later calls with the same key replace earlier
// ones.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// WithHTTPClient sets the HTTP client (for proxies, TLS settings or
// tracing). nil keeps the default, http.DefaultClient. Prefer context
// deadlines over Client.Timeout, which also cuts long streams.
func WithHTTPClient(c *http.Client) Option { return func(cfg *config) { cfg.httpClient = c } }

// WithProviderName sets the provider part of Name and of APIError.Provider
// (default "openai"); use it to tell servers apart in logs and errors.
func WithProviderName(name string) Option { return func(c *config) { c.provider = name } }

// WithTokenLimitField chooses the field that carries MaxTokens; see
// TokenLimitField. The default is TokenLimitAuto.
func WithTokenLimitField(f TokenLimitField) Option { return func(c *config) { c.tokenField = f } }

// WithExtraBody sets a top-level field of every request body, for server
// options the Chat Completions API lacks (Qwen's "enable_thinking", vLLM's
// "chat_template_kwargs", "top_k"). It overrides a field the request
// mapping set. A dot in key is a path separator.
func WithExtraBody(key string, value any) Option {
	return func(c *config) { c.extra = append(c.extra, option.WithJSONSet(key, value)) }
}

// WithLimits bounds every reply (see llm.Limits; zero fields keep their
// defaults): the answer text, reasoning and tool-call arguments, the number
// of tool calls, and the bytes read of a non-streamed body, an error body
// or one streamed event. A reply over a limit fails with an
// *llm.LimitError, which is not retried. Negative fields make New fail.
func WithLimits(l llm.Limits) Option { return func(c *config) { c.limits = l } }

// WithRequestOptions appends openai-go request options, applied after this
// package's own: the escape hatch for anything else (middleware, a query
// parameter, option.WithJSONDel("stream_options") for a server that rejects
// it). Do not turn the SDK's retries back on: llm.Retry owns retries, and
// two retry layers multiply.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// Model is an llm.Model backed by the Chat Completions API. It is safe for
// concurrent use.
type Model struct {
	model        string
	provider     string
	useMaxTokens bool
	limits       llm.Limits
	svc          openai.ChatCompletionService
	opts         []option.RequestOption // the client's options, for NewEmbedder
}

var _ llm.Model = (*Model)(nil)

// New returns the model named model (as the server knows it, e.g.
// "gpt-4o-mini" or "deepseek-chat"). The API key and base URL come from the
// options, else from OPENAI_API_KEY and OPENAI_BASE_URL. The official API
// requires a key; a custom base URL may go without one.
func New(model string, opts ...Option) (*Model, error) {
	model = strings.TrimSpace(model)
	if model == "" {
		return nil, errors.New("openai: the model name is empty; pass one such as \"gpt-4o-mini\"")
	}
	cfg := config{provider: DefaultProviderName}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if strings.TrimSpace(cfg.provider) == "" {
		return nil, errors.New("openai: WithProviderName was given an empty name")
	}
	if err := cfg.limits.Validate(); err != nil {
		return nil, fmt.Errorf("openai: WithLimits: %w", err)
	}
	if cfg.tokenField < TokenLimitAuto || cfg.tokenField > TokenLimitMaxTokens {
		return nil, fmt.Errorf("openai: unknown TokenLimitField %d; use TokenLimitAuto, TokenLimitMaxCompletionTokens or TokenLimitMaxTokens", cfg.tokenField)
	}
	envBase := strings.TrimSpace(os.Getenv(EnvBaseURL))
	base := strings.TrimSpace(cfg.baseURL)
	if base == "" {
		base = envBase
	}
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL; set it like \"https://api.example.com/v1\"", base)
	}
	official := isOfficial(u)
	key := strings.TrimSpace(cfg.apiKey)
	if key == "" && EnvKeyAllowed(base) {
		key = strings.TrimSpace(os.Getenv(EnvAPIKey))
	}
	if key == "" && official {
		return nil, fmt.Errorf("openai: no API key for %s: set %s or pass openai.WithAPIKey (a server of your own needs WithBaseURL or %s instead)", base, EnvAPIKey, EnvBaseURL)
	}

	sdkOpts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(0), // llm.Retry owns retries
	}
	if key != "" {
		sdkOpts = append(sdkOpts, option.WithAPIKey(key))
	}
	if cfg.httpClient != nil {
		sdkOpts = append(sdkOpts, option.WithHTTPClient(cfg.httpClient))
	}
	for _, h := range cfg.headers {
		sdkOpts = append(sdkOpts, option.WithHeader(h[0], h[1]))
	}
	limits := cfg.limits.WithDefaults()
	name := cfg.provider + ":" + model
	sdkOpts = append(sdkOpts, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil && resp.Body != nil {
			resp.Body = limitBody(limits, resp, name)
		}
		return resp, err
	}))
	sdkOpts = append(sdkOpts, cfg.extra...)

	useMax := cfg.tokenField == TokenLimitMaxTokens || (cfg.tokenField == TokenLimitAuto && !official)
	return &Model{
		model:        model,
		provider:     cfg.provider,
		useMaxTokens: useMax,
		limits:       limits,
		svc:          openai.NewChatCompletionService(sdkOpts...),
		opts:         sdkOpts,
	}, nil
}

// limitBody bounds what is read of a response: the whole body for an error
// or a JSON reply, one event at a time for anything else (an event stream,
// whatever content type a compatible server gives it).
func limitBody(l llm.Limits, resp *http.Response, model string) io.ReadCloser {
	ctype := strings.ToLower(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 400 || strings.Contains(ctype, "json") {
		return l.LimitBody(resp.Body, model)
	}
	return l.LimitEvents(resp.Body, model)
}

// Limits returns the limits every reply is held to (see WithLimits).
func (m *Model) Limits() llm.Limits { return m.limits }

// EnvKeyAllowed reports whether OPENAI_API_KEY may be sent to base: only
// to the official API (DefaultBaseURL) and to the server OPENAI_BASE_URL
// names, the two places the environment's key is configured for. A model
// pointed elsewhere by WithBaseURL gets no key unless WithAPIKey gives
// one, so a base URL chosen by someone else cannot collect the key.
func EnvKeyAllowed(base string) bool {
	return baseurl.Same(base, DefaultBaseURL) || baseurl.Same(base, os.Getenv(EnvBaseURL))
}

func isOfficial(u *url.URL) bool {
	return strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Name returns "<provider>:<model>", e.g. "openai:gpt-4o-mini".
func (m *Model) Name() string { return m.provider + ":" + m.model }

// Generate sends req and returns the whole reply. Failures are
// *llm.APIError values, except a request this package cannot map (a plain
// error, not retryable), a reply over the limits (*llm.LimitError, see
// WithLimits) and a cancelled context (its error, unwrapped).
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var raw *http.Response
	cc, err := m.svc.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, m.callError(ctx, raw, err)
	}
	resp, err := m.response(cc)
	if err != nil {
		return nil, err
	}
	if err := m.limits.CheckResponse(resp, m.Name()); err != nil {
		return nil, err
	}
	return resp, nil
}

// Stream sends req with streaming on and yields one chunk per server-sent
// event: text, reasoning and tool-call fragments as they arrive, the finish
// reason, and a last chunk with the usage. A failure is yielded last, as
// the sole non-nil error; a stream that stops before the model finished is
// such a failure, and so is a reply over the model's limits (an
// *llm.LimitError, see WithLimits). Breaking out of the loop or cancelling
// ctx closes the connection at once.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
		var raw *http.Response
		s := m.svc.NewStreaming(ctx, params, option.WithResponseInto(&raw))
		defer s.Close()
		finished, events := false, 0
		meter := llm.Meter{Limits: m.limits, Model: m.Name()}
		for s.Next() {
			ev := s.Current()
			c, done := chunkOf(&ev)
			finished = finished || done
			events++
			if err := meter.Add(c); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		switch {
		case s.Err() != nil:
			yield(llm.Chunk{}, m.callError(ctx, raw, s.Err()))
		case finished:
		case ctx.Err() != nil:
			yield(llm.Chunk{}, ctx.Err())
		default:
			yield(llm.Chunk{}, m.truncated(raw, events))
		}
	}
}
