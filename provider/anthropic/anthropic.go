// Package anthropic adapts Anthropic's Messages API (tool use, extended
// thinking, streaming) to llm.Model, on the official Go SDK
// (anthropic-sdk-go v2, which speaks API version 2026-10-21).
//
// A Model is made with New and is safe for concurrent use:
//
//	m, err := anthropic.New("claude-sonnet-4-5") // key from ANTHROPIC_API_KEY
//	resp, err := llm.Call(ctx, m, &llm.Request{Messages: msgs})
//
// # Retries
//
// The SDK's own retries are turned off: every Generate or Stream call sends
// exactly one HTTP request, and the llm package (llm.Retry) decides whether
// to try again, using the *llm.APIError every failure comes back as.
//
// # How a request is mapped
//
//   - System messages, wherever they stand, are joined (blank line between)
//     into the top-level system prompt; they may hold only text.
//   - User messages keep their text and image parts. An image URL starting
//     with http(s) is sent as a URL source; a data: URL
//     (data:image/png;base64,...) as a base64 source with its media type
//     (jpeg, png, gif or webp). Part.Detail is ignored.
//   - Assistant messages become, in this order: a thinking block (only when
//     the message has both Reasoning and ReasoningSignature: the API rejects
//     unsigned thinking, so reasoning without a signature is dropped), the
//     text, then one tool_use block per call. A call's Arguments must be a
//     JSON object to be sent as its input; empty arguments are sent as {};
//     arguments that are not a JSON object (invalid JSON, a model that wrote
//     half an object) are sent as {"invalid_json": "<the text as written>"},
//     so that the model sees what it wrote next to the tool's error result.
//   - Tool messages become tool_result blocks (tool_use_id, text and image
//     content, is_error). Consecutive tool messages form one user message,
//     merged with a user message that follows; tool_result blocks always
//     come first in that message, as the API requires.
//   - Consecutive messages of one role are merged, so roles alternate.
//   - Tools are sent with their JSON schema as input_schema ({"type":
//     "object"} when nil; a schema of another type is an error). ToolChoice
//     auto, required (the API's "any"), tool (named) and none map one to
//     one; ParallelToolCalls false sets disable_parallel_tool_use.
//   - MaxTokens 0 means the default (4096, see WithDefaultMaxTokens): the
//     API requires max_tokens.
//   - Reasoning enabled turns on extended thinking with budget_tokens =
//     Reasoning.BudgetTokens, raised to the API's minimum of 1024; with no
//     budget, Effort picks one (low 1024, medium 4096, high 16384; none
//     given: 1024). max_tokens must exceed the budget, so when it does not,
//     the budget is added to it (the answer keeps the room asked for).
//     Reasoning{Enabled: false} sends thinking disabled. The API refuses
//     thinking together with ToolChoice required or tool (HTTP 400).
//   - Temperature and TopP are never sent: API version 2026-10-21, the one
//     this SDK speaks, rejects them (HTTP 400, even at their defaults) and
//     the SDK has no field for them. They are ignored, so a request written
//     for several providers still works here.
//   - ResponseFormat with a Schema uses structured outputs
//     (output_config.format of type json_schema), which constrains the
//     reply to the schema; without a Schema, an instruction to answer with
//     one JSON object and nothing else is appended to the system prompt.
//
// # How a reply is mapped
//
// Text blocks become the message's text, thinking blocks its Reasoning and
// ReasoningSignature (redacted thinking is left out), tool_use blocks its
// ToolCalls (arguments as JSON text). Stop reasons end_turn, stop_sequence
// and pause_turn map to FinishStop, tool_use to FinishToolCalls,
// max_tokens and model_context_window_exceeded to FinishLength, refusal to
// FinishFiltered. Usage.InputTokens counts cache reads and cache writes too,
// CachedInputTokens the cache reads, ReasoningTokens the thinking tokens.
//
// A reply holding several thinking blocks (thinking between tool calls)
// comes back with their texts and signatures joined, which the API will not
// accept back as one block; replay such a message without its reasoning.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider/internal/baseurl"
)

// DefaultMaxTokens is the max_tokens sent when a request leaves MaxTokens 0
// and no WithDefaultMaxTokens option says otherwise.
const DefaultMaxTokens = 4096

// Model is an Anthropic model. Make one with New; it is safe for concurrent
// use and holds no per-request state.
type Model struct {
	model     string
	maxTokens int
	limits    llm.Limits
	client    sdk.Client
}

var _ llm.Model = (*Model)(nil)

// DefaultBaseURL is Anthropic's API, where ANTHROPIC_API_KEY goes.
const DefaultBaseURL = "https://api.anthropic.com"

// Environment variables read by New when the matching option is not given.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// EnvKeyAllowed reports whether ANTHROPIC_API_KEY may be sent to base
// ("" : the default): only to Anthropic's API and to the server
// ANTHROPIC_BASE_URL names. A model pointed elsewhere by WithBaseURL needs
// WithAPIKey, so a base URL chosen by someone else cannot collect the key.
func EnvKeyAllowed(base string) bool {
	base = strings.TrimSpace(base)
	return base == "" || baseurl.Same(base, DefaultBaseURL) || baseurl.Same(base, os.Getenv(EnvBaseURL))
}

// Option configures New.
type Option func(*config)

type config struct {
	apiKey     string
	baseURL    string
	headers    [][2]string
	httpClient *http.Client
	setClient  bool
	maxTokens  int
	setMax     bool
	limits     llm.Limits
}

// WithAPIKey sets the API key (default: the ANTHROPIC_API_KEY environment
// variable). The SDK sends it as "Authorization: Bearer <key>".
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL, e.g. a proxy or a local test server
// (default: ANTHROPIC_BASE_URL, else https://api.anthropic.com). Requests
// go to <base>/v1/messages.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHeader adds a header to every request, e.g. "anthropic-beta". It
// replaces a header of the same name the SDK would send, so use it with
// care for anthropic-version or Authorization.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// WithHTTPClient sets the HTTP client. The default, shared by every Model,
// runs on a clone of http.DefaultTransport that waits at most 10 minutes
// for response headers (as the SDK's own default does) and never bounds a
// stream's body. A client's Timeout bounds whole streams too; prefer a
// context deadline.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.httpClient, c.setClient = hc, true }
}

// WithDefaultMaxTokens sets the max_tokens sent when a request leaves
// MaxTokens 0 (default DefaultMaxTokens). It must be positive.
func WithDefaultMaxTokens(n int) Option {
	return func(c *config) { c.maxTokens, c.setMax = n, true }
}

// WithLimits bounds every reply (see llm.Limits; zero fields keep their
// defaults): the answer text, thinking, tool-call arguments, the number of
// tool calls, and the bytes read of a non-streamed body, an error body or
// one streamed event. A reply over a limit fails with an *llm.LimitError,
// which is not retried. Negative fields make New fail.
func WithLimits(l llm.Limits) Option { return func(c *config) { c.limits = l } }

// New returns the Anthropic model named model (e.g. "claude-sonnet-4-5").
// The API key comes from WithAPIKey, else ANTHROPIC_API_KEY; the base URL
// from WithBaseURL, else ANTHROPIC_BASE_URL. No other environment variable
// or profile file is read. New fails when no key is found, the model name
// is empty or an option is invalid; it sends no request.
func New(model string, opts ...Option) (*Model, error) {
	if strings.TrimSpace(model) == "" {
		return nil, errors.New("anthropic: empty model name: pass one such as \"claude-sonnet-4-5\"")
	}
	c := config{maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	c.baseURL = strings.TrimSpace(c.baseURL)
	if c.baseURL == "" {
		c.baseURL = strings.TrimSpace(os.Getenv(EnvBaseURL))
	}
	if c.apiKey == "" && EnvKeyAllowed(c.baseURL) {
		c.apiKey = strings.TrimSpace(os.Getenv(EnvAPIKey))
	}
	if c.apiKey == "" {
		if c.baseURL != "" && os.Getenv(EnvAPIKey) != "" {
			return nil, fmt.Errorf("anthropic: no API key for %s: %s is sent only to %s or to %s's server; pass anthropic.WithAPIKey for this one", c.baseURL, EnvAPIKey, DefaultBaseURL, EnvBaseURL)
		}
		return nil, errors.New("anthropic: no API key: set the ANTHROPIC_API_KEY environment variable or pass anthropic.WithAPIKey")
	}
	if c.setMax && c.maxTokens <= 0 {
		return nil, fmt.Errorf("anthropic: WithDefaultMaxTokens(%d): the default must be positive", c.maxTokens)
	}
	if err := c.limits.Validate(); err != nil {
		return nil, fmt.Errorf("anthropic: WithLimits: %w", err)
	}
	if c.setClient && c.httpClient == nil {
		return nil, errors.New("anthropic: WithHTTPClient(nil): pass a client, or leave the option out for http.DefaultClient")
	}
	sdkOpts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // we read the environment ourselves, and only these two variables
		option.WithAPIKey(c.apiKey),
		option.WithMaxRetries(0), // llm.Retry owns retries
	}
	if c.baseURL != "" {
		u, err := url.Parse(c.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL: fix WithBaseURL or ANTHROPIC_BASE_URL", c.baseURL)
		}
		sdkOpts = append(sdkOpts, option.WithBaseURL(c.baseURL))
	}
	if c.httpClient == nil {
		c.httpClient = defaultClient()
	}
	sdkOpts = append(sdkOpts, option.WithHTTPClient(c.httpClient))
	for _, h := range c.headers {
		if h[0] == "" || strings.ContainsAny(h[0], " \t\r\n:") || strings.ContainsAny(h[1], "\r\n") {
			return nil, fmt.Errorf("anthropic: WithHeader(%q, %q): not a valid header name and value", h[0], h[1])
		}
		sdkOpts = append(sdkOpts, option.WithHeader(h[0], h[1]))
	}
	limits, name := c.limits.WithDefaults(), "anthropic:"+model
	sdkOpts = append(sdkOpts, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil && resp.Body != nil {
			// The whole body of an error or a JSON reply; one event at a
			// time of anything else (a stream).
			if resp.StatusCode >= 400 || strings.Contains(strings.ToLower(resp.Header.Get("Content-Type")), "json") {
				resp.Body = limits.LimitBody(resp.Body, name)
			} else {
				resp.Body = limits.LimitEvents(resp.Body, name)
			}
		}
		return resp, err
	}))
	return &Model{model: model, maxTokens: c.maxTokens, limits: limits, client: sdk.NewClient(sdkOpts...)}, nil
}

// Limits returns the limits every reply is held to (see WithLimits).
func (m *Model) Limits() llm.Limits { return m.limits }

// defaultClient is the HTTP client of Models not given one.
var defaultClient = sync.OnceValue(func() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
})

// Name returns "anthropic:<model>".
func (m *Model) Name() string { return "anthropic:" + m.model }

// Generate sends the request and returns the whole reply. A request whose
// max_tokens is too large for a non-streaming call (the SDK refuses calls
// that could take over ten minutes) is streamed and assembled instead.
// Errors are *llm.APIError, the context's error, or (for a request that
// cannot be mapped) a plain error saying what to fix.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if _, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil); err != nil {
		return m.generateByStream(ctx, params)
	}
	msg, err := m.client.Messages.New(ctx, params)
	if err != nil {
		return nil, m.wrapErr(ctx, err)
	}
	resp := m.response(msg)
	if err := m.limits.CheckResponse(resp, m.Name()); err != nil {
		return nil, err
	}
	return resp, nil
}

func (m *Model) generateByStream(ctx context.Context, params sdk.MessageNewParams) (*llm.Response, error) {
	a := llm.Assembler{Limits: m.limits, Model: m.Name()}
	for c, err := range m.stream(ctx, params) {
		if err != nil {
			return nil, err
		}
		if err := a.Add(c); err != nil {
			return nil, err
		}
	}
	return a.Response(), nil
}

// Stream sends the request and yields the reply as it arrives: one chunk
// per useful server event (text, thinking, signature and tool-argument
// fragments, the model and usage, the finish reason). Tool-call fragments
// carry the content block's index as ToolCallDelta.Index. Feed the chunks
// to an llm.Assembler. A failure ends the sequence with an *llm.APIError
// (an error event in the stream too: overloaded_error comes back as status
// 529), the context's error, or a plain error for a request that cannot be
// mapped. A reply over the limits (WithLimits) ends with an
// *llm.LimitError. Breaking out of the loop closes the connection at once.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	params, err := m.params(req)
	if err != nil {
		return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, err) }
	}
	return m.stream(ctx, params)
}

func (m *Model) stream(ctx context.Context, params sdk.MessageNewParams) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s := m.client.Messages.NewStreaming(ctx, params)
		defer func() { _ = s.Close() }()
		var st streamState
		meter := llm.Meter{Limits: m.limits, Model: m.Name()}
		for s.Next() {
			c, ok := st.event(s.Current())
			if ok {
				if err := meter.Add(c); err != nil {
					yield(llm.Chunk{}, err)
					return
				}
				if !yield(c, nil) {
					return
				}
			}
			if st.stopped {
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(llm.Chunk{}, m.wrapErr(ctx, err))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		yield(llm.Chunk{}, m.truncated())
	}
}
