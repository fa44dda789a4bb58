// Package a2a calls remote agents over the A2A protocol (v1.0, and v0.3
// servers through a2a-go's compatibility layer) from inside Trellis graphs:
// as a tool a react agent's model calls (Agent.Tool), as a graph node
// (Agent.Node), or from any node's own code (Agent.Call).
//
// A remote agent is a node that owns a remote task. Its IDs (task and
// context) are saved as a durable step of the calling task
// (graph.Durable) as soon as the remote names them, before the call
// returns, so a run that resumes after an interrupt, a failure or a
// restart reattaches to the same remote task instead of starting another.
// The remote's input-required becomes a local graph.Interrupt; its answer
// is sent back on the same remote task. Streamed status and artifacts
// become the local run's custom events (Event). Cancelling the local run
// cancels the remote task. A remote failure is a *RemoteError: a tool
// error for a model, the local thread stays usable.
//
// Every request dials through the guarded dialer (internal/netguard):
// loopback and private addresses are refused unless Config.AllowPrivate,
// hosts outside Config.AllowHosts (when set) are refused, and the
// configured headers (credentials) go only to the origin of the card URL
// they were configured for, never to another host a card names.
package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	proto "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/trellis-agents/trellis/internal/netguard"
)

// Config describes one remote A2A agent.
type Config struct {
	// Name names the agent locally: the tool's name, and the agent in
	// events and interrupts. Required; letters, digits, '_' and '-'.
	Name string
	// Description is the tool's description for a model ("": the card's).
	Description string
	// CardURL is where the agent card is: the agent's base URL (the card
	// is then read from /.well-known/agent-card.json under it) or the
	// card's own URL (a path ending in .json). Required.
	CardURL string
	// Headers are sent with every request to CardURL's origin (scheme,
	// host and port) and to no other: an API key or an Authorization
	// header for this agent.
	Headers map[string]string
	// AllowPrivate allows loopback, private and other non-public
	// addresses (a remote on the same host or network).
	AllowPrivate bool
	// AllowHosts, when set, are the only hosts ("host" or "host:port")
	// requests may go to; the card URL's host must be one of them.
	AllowHosts []string
	// ReadOnly marks the tool as a read tool, which the tool node runs
	// without asking for approval. A remote agent may do anything, so by
	// default it is a write tool.
	ReadOnly bool
	// KeepRemoteOn says whether a cancellation whose cause (context.Cause
	// of the call's context) it is given leaves the remote task running:
	// a server stopping for its runs to be taken over elsewhere should not
	// cancel the remote work the new owner will reattach to. nil: every
	// cancellation cancels the remote task.
	KeepRemoteOn func(cause error) bool
	// PollInterval is how often a task is read again when the remote
	// offers no stream to follow it by (0: one second).
	PollInterval time.Duration
	// Transport is the base transport (nil: a clone of the default one).
	// It is guarded like the default: its dialer is replaced.
	Transport *http.Transport
}

// Agent is a remote A2A agent. It reads the agent's card on first use
// (and again after a failed read); it is safe for concurrent use.
type Agent struct {
	cfg    Config
	origin string
	http   *http.Client

	mu     sync.Mutex
	client *a2aclient.Client
	card   *proto.AgentCard
}

// New checks cfg and returns its agent; it does not reach the remote.
func New(cfg Config) (*Agent, error) {
	if cfg.Name == "" || strings.IndexFunc(cfg.Name, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return nil, fmt.Errorf("a2a: agent name %q: use letters, digits, '_' and '-'", cfg.Name)
	}
	u, err := CheckURL(cfg.CardURL, cfg.AllowPrivate, cfg.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent %s: %w", cfg.Name, err)
	}
	for k := range cfg.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return nil, fmt.Errorf("a2a: agent %s: header name %q is not valid", cfg.Name, k)
		}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	} else {
		tr = tr.Clone()
	}
	netguard.Guard(tr, cfg.AllowPrivate)
	a := &Agent{cfg: cfg, origin: originOf(u)}
	a.http = &http.Client{
		Transport:     &scoped{next: tr, origin: a.origin, headers: cfg.Headers, hosts: cfg.AllowHosts},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return a, nil
}

// Close closes the agent's idle connections; the agent stays usable.
func (a *Agent) Close() {
	a.http.CloseIdleConnections()
}

// Name returns the agent's local name.
func (a *Agent) Name() string { return a.cfg.Name }

// CheckURL checks a remote agent's URL when it is configured: an absolute
// http(s) URL, its host on allowHosts (when set), and not a literal
// non-public address unless allowPrivate. Names are checked again, after
// resolution, on every connection.
func CheckURL(raw string, allowPrivate bool, allowHosts []string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("%q is not an absolute http or https URL", raw)
	}
	if !hostAllowed(u, allowHosts) {
		return nil, fmt.Errorf("host %s of %q is not on the allowed hosts %v", u.Host, raw, allowHosts)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate {
		if k := netguard.Kind(ip); k != "" {
			return nil, &netguard.RefusedError{Addr: ip, Kind: k}
		}
	}
	return u, nil
}

func hostAllowed(u *url.URL, hosts []string) bool {
	if len(hosts) == 0 {
		return true
	}
	return slices.ContainsFunc(hosts, func(h string) bool {
		return strings.EqualFold(h, u.Host) || strings.EqualFold(h, u.Hostname())
	})
}

func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme + "://" + u.Hostname() + ":" + port)
}

// scoped sends the configured headers only to their origin, and refuses
// hosts off the allow-list.
type scoped struct {
	next    http.RoundTripper
	origin  string
	headers map[string]string
	hosts   []string
}

func (s *scoped) RoundTrip(req *http.Request) (*http.Response, error) {
	if !hostAllowed(req.URL, s.hosts) {
		return nil, fmt.Errorf("a2a: refused: host %s is not on the allowed hosts %v", req.URL.Host, s.hosts)
	}
	if len(s.headers) > 0 && originOf(req.URL) == s.origin {
		req = req.Clone(req.Context())
		for k, v := range s.headers {
			req.Header.Set(k, v)
		}
	}
	return s.next.RoundTrip(req)
}

// CloseIdleConnections closes the transport's idle connections.
func (s *scoped) CloseIdleConnections() {
	if c, ok := s.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Card reads (once) and returns the agent's card.
func (a *Agent) Card(ctx context.Context) (*proto.AgentCard, error) {
	if _, err := a.connect(ctx); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.card, nil
}

// connect returns the client, reading the card first if no read has
// succeeded yet.
func (a *Agent) connect(ctx context.Context) (*a2aclient.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil {
		return a.client, nil
	}
	base, path := a.cfg.CardURL, ""
	if u, _ := url.Parse(base); u != nil && strings.HasSuffix(u.Path, ".json") {
		i := strings.LastIndex(u.Path, "/")
		path = u.Path[i:]
		u.Path = u.Path[:i]
		base = u.String()
	}
	r := agentcard.NewResolver(a.http)
	r.CardParser = parseCard
	var opts []agentcard.ResolveOption
	if path != "" {
		opts = append(opts, agentcard.WithPath(path))
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	card, err := r.Resolve(rctx, base, opts...)
	if err != nil {
		return nil, &RemoteError{Agent: a.cfg.Name, Op: "read the agent card", Err: err}
	}
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, &RemoteError{Agent: a.cfg.Name, Op: "read the agent card", Err: fmt.Errorf("the card names an interface at %q, not an http(s) URL", in.URL)}
		}
	}
	c, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(a.http),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: a.http}),
	)
	if err != nil {
		return nil, &RemoteError{Agent: a.cfg.Name, Op: "connect", Err: err}
	}
	a.card, a.client = card, c
	return c, nil
}

// parseCard reads a 1.0 card, or a 0.3 one (which names its endpoint in a
// top-level url instead of supportedInterfaces).
func parseCard(b []byte) (*proto.AgentCard, error) {
	card, err := agentcard.DefaultCardParser(b)
	if err == nil && len(card.SupportedInterfaces) > 0 {
		return card, nil
	}
	old, err2 := a2av0.NewAgentCardParser()(b)
	if err2 == nil && len(old.SupportedInterfaces) > 0 {
		return old, nil
	}
	if err == nil {
		err = errors.New("the card names no interface to call")
	}
	return nil, err
}

// RemoteError is a call to a remote agent that failed: the agent could
// not be reached, refused the request, or its task failed, was rejected
// or cancelled there.
type RemoteError struct {
	Agent  string // the agent's local name
	Op     string // what failed ("send the message", "task failed", ...)
	TaskID string // the remote task, when there is one
	State  string // the task's final state, for a task that ended badly
	Err    error  // the cause, or the remote's own message as an error
}

func (e *RemoteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote agent %s: %s", e.Agent, e.Op)
	if e.TaskID != "" {
		fmt.Fprintf(&b, " (task %s)", e.TaskID)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *RemoteError) Unwrap() error { return e.Err }
