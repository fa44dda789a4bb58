package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	a2atool "github.com/trellis-agents/trellis/tool/a2a"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// RemoteAgent is a remote agent the agent graph's assistants may call as a
// tool (remote:NAME under tools):
//
//	remote_agents:
//	  greeter:
//	    a2a: https://agents.example/greeter     # its card's base URL (or the card's own URL)
//	    description: Greets people by name.
//	    headers_env: {Authorization: GREETER_AUTH}   # header → environment variable
//	    allow_private: false                    # allow loopback/private addresses
//	    allow_hosts: [agents.example]           # the only hosts requests may go to
//	  planner:
//	    langgraph: {url: https://lg.example, assistant: planner}   # a LangGraph-API server
//
// The URL is checked when the file is loaded (absolute http(s), its host
// on allow_hosts when set, not a literal private address unless
// allow_private); the connections are checked again, after name
// resolution, by the guarded dialer. Header values are read from the
// environment at load, and are sent only to the URL's origin.
type RemoteAgent struct {
	// A2A is the agent's card URL: its base URL or the card's own.
	A2A string `yaml:"a2a"`
	// LangGraph is an assistant on a server speaking the LangGraph API
	// (instead of A2A).
	LangGraph *RemoteGraph `yaml:"langgraph"`
	// Description is the tool's description ("": the card's or a default).
	Description string `yaml:"description"`
	// HeadersEnv maps a header to the environment variable holding its
	// value.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// AllowPrivate allows non-public addresses (a remote on this host or
	// network).
	AllowPrivate bool `yaml:"allow_private"`
	// AllowHosts, when set, are the only hosts requests may go to.
	AllowHosts []string `yaml:"allow_hosts"`
}

// RemoteGraph is an assistant on a LangGraph-API server.
type RemoteGraph struct {
	// URL is the server's base URL.
	URL string `yaml:"url"`
	// Assistant is the remote assistant's ID (or graph ID).
	Assistant string `yaml:"assistant"`
}

// RemoteGraphConfig is the agent's configuration for package
// tool/remotegraph (for a langgraph entry), with its headers read through
// lookup (os.LookupEnv when nil).
func (r RemoteAgent) RemoteGraphConfig(name string, lookup func(string) (string, bool)) (remotegraph.Config, error) {
	h, err := r.Headers(lookup)
	if err != nil {
		return remotegraph.Config{}, fmt.Errorf("remote_agents.%s.%w", name, err)
	}
	if r.LangGraph == nil {
		return remotegraph.Config{}, fmt.Errorf("remote_agents.%s: not a langgraph agent", name)
	}
	return remotegraph.Config{Name: name, Description: r.Description, URL: r.LangGraph.URL, Assistant: r.LangGraph.Assistant, Headers: h, AllowPrivate: r.AllowPrivate, AllowHosts: r.AllowHosts}, nil
}

// Headers reads the agent's headers from the environment (lookup:
// os.LookupEnv when nil); a variable that is not set is an error naming it.
func (r RemoteAgent) Headers(lookup func(string) (string, bool)) (map[string]string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(r.HeadersEnv)) {
		v, ok := lookup(r.HeadersEnv[h])
		if !ok {
			return nil, fmt.Errorf("headers_env.%s: environment variable %s is not set", h, r.HeadersEnv[h])
		}
		out[h] = v
	}
	return out, nil
}

// A2AConfig is the agent's configuration for package tool/a2a, with
// its headers read through lookup (os.LookupEnv when nil).
func (r RemoteAgent) A2AConfig(name string, lookup func(string) (string, bool)) (a2atool.Config, error) {
	h, err := r.Headers(lookup)
	if err != nil {
		return a2atool.Config{}, fmt.Errorf("remote_agents.%s.%w", name, err)
	}
	return a2atool.Config{Name: name, Description: r.Description, CardURL: r.A2A, Headers: h, AllowPrivate: r.AllowPrivate, AllowHosts: r.AllowHosts}, nil
}

func (r RemoteAgent) check(name string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("remote_agents.%s%s: %s", name, field, fmt.Sprintf(format, args...)))
	}
	if name == "" || strings.IndexFunc(name, func(c rune) bool {
		return !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}) >= 0 {
		bad("", "the name is the tool's name: use letters, digits, '_' and '-'")
	}
	switch {
	case r.LangGraph != nil && r.A2A != "":
		bad("", "set a2a or langgraph, not both")
	case r.LangGraph != nil:
		if r.LangGraph.Assistant == "" {
			bad(".langgraph.assistant", "name the remote assistant (its ID or graph ID)")
		}
		if _, err := a2atool.CheckURL(r.LangGraph.URL, r.AllowPrivate, r.AllowHosts); err != nil {
			bad(".langgraph.url", "%v", err)
		}
	case r.A2A == "":
		bad("", "set a2a to the agent's card URL, or langgraph to a LangGraph-API server's URL and assistant")
	default:
		if _, err := a2atool.CheckURL(r.A2A, r.AllowPrivate, r.AllowHosts); err != nil {
			bad(".a2a", "%v", err)
		}
	}
	for h, env := range r.HeadersEnv {
		if h == "" || strings.ContainsAny(h, " :\r\n") || env == "" {
			bad(".headers_env", "%q: %q is not a header and an environment variable name", h, env)
		}
	}
	return errs
}

// Remote reports whether the reference names a remote agent
// (remote:NAME), and its name.
func (r ToolRef) Remote() (string, bool) {
	return strings.CutPrefix(r.Use, "remote:")
}
