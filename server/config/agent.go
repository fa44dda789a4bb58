package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// AgentGraph is the graph ID of the configurable tool-calling agent that
// `trellis serve` registers; only its assistants take System and Tools.
const AgentGraph = "agent"

// BuiltinTools are the built-in tools an agent assistant may name: the
// tools of the tool package that need nothing from the server's files, and
// the long-term memory pair of tool/memory (remember runs without asking
// unless approve says otherwise; memories are filed under the run
// context's user_id).
var BuiltinTools = []string{"stop", "remember", "recall"}

// Approval policies of a ToolRef.
const (
	// ApproveByKind (the default, "") runs read tools at once and asks a
	// person before every other tool runs.
	ApproveByKind = ""
	// ApproveAsk asks a person before every call, read tools included.
	ApproveAsk = "ask"
	// ApproveAuto runs every call without asking, write tools included.
	ApproveAuto = "auto"
)

// ToolRef names tools an agent assistant gets. In YAML (and JSON) it is a
// string, the Use alone, or an object {use: ..., approve: ask|auto}.
type ToolRef struct {
	// Use is a built-in tool's name ("stop"), mcp:SERVER (every tool of
	// the MCP server of that name under mcp_servers) or mcp:SERVER/TOOL
	// (one tool, by the server's own name for it), or remote:NAME (the
	// remote agent of that name under remote_agents).
	Use string `json:"use" yaml:"use"`
	// Approve is the approval policy of the tools: "" (by kind: read
	// tools run, others ask), "ask" or "auto".
	Approve string `json:"approve,omitempty" yaml:"approve"`
}

// UnmarshalYAML accepts a string or a mapping with use and approve.
func (r *ToolRef) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*r = ToolRef{Use: n.Value}
		return nil
	case yaml.MappingNode:
		var out ToolRef
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: %s must be a string", v.Line, k.Value)
			}
			switch k.Value {
			case "use":
				out.Use = v.Value
			case "approve":
				out.Approve = v.Value
			default:
				return fmt.Errorf("line %d: unknown field %q (known: use, approve)", k.Line, k.Value)
			}
		}
		*r = out
		return nil
	}
	return fmt.Errorf("line %d: a tool is a name (stop, mcp:SERVER, mcp:SERVER/TOOL) or {use: NAME, approve: ask|auto}", n.Line)
}

// UnmarshalJSON accepts a string or an object with use and approve.
func (r *ToolRef) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*r = ToolRef{Use: s}
		return nil
	}
	type plain ToolRef
	var p plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("a tool is a name (stop, mcp:SERVER, mcp:SERVER/TOOL) or {\"use\": NAME, \"approve\": \"ask\"|\"auto\"}: %w", err)
	}
	*r = ToolRef(p)
	return nil
}

// MCP reports the server and tool an mcp: reference names (tool "" for
// every tool of the server).
func (r ToolRef) MCP() (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(r.Use, "mcp:")
	if !ok {
		return "", "", false
	}
	server, tool, _ = strings.Cut(rest, "/")
	return server, tool, true
}

// Check checks the reference's syntax and approval policy (not that its
// MCP server exists).
func (r ToolRef) Check() error {
	switch r.Approve {
	case ApproveByKind, ApproveAsk, ApproveAuto:
	default:
		return fmt.Errorf("approve: %q is not ask or auto (leave it out for the default: read tools run, others ask)", r.Approve)
	}
	if srv, tl, ok := r.MCP(); ok {
		if srv == "" || strings.Contains(r.Use, "//") || strings.HasSuffix(r.Use, "/") {
			return fmt.Errorf("%q is not mcp:SERVER or mcp:SERVER/TOOL", r.Use)
		}
		_ = tl
		return nil
	}
	if name, ok := r.Remote(); ok {
		if name == "" {
			return fmt.Errorf("%q is not remote:NAME", r.Use)
		}
		return nil
	}
	if !slices.Contains(BuiltinTools, r.Use) {
		return fmt.Errorf("%q is not a built-in tool (%s) nor mcp:SERVER, mcp:SERVER/TOOL or remote:NAME", r.Use, strings.Join(BuiltinTools, ", "))
	}
	return nil
}

// MCPServer says how to reach an MCP server: a command speaking MCP over
// stdio, or a streamable HTTP endpoint.
type MCPServer struct {
	// Command (stdio) is the program to start; Args its arguments; Env
	// variables added to the environment it inherits; Dir its working
	// directory.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	// URL (streamable HTTP) is the MCP endpoint; Headers are sent with
	// every request (write secrets as ${ENV}).
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// ToolPrefix is put before the name of each of the server's tools as
	// the model sees them, so tools of two servers cannot clash.
	ToolPrefix string `yaml:"tool_prefix"`
	// Timeout bounds each tool call (tool/mcp's default, 60 s, when 0).
	Timeout time.Duration `yaml:"timeout"`
}

func (m MCPServer) check(name string) []error {
	field := "mcp_servers." + name
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", field, f, fmt.Sprintf(format, args...)))
	}
	if name == "" || strings.ContainsAny(name, "/: ") {
		bad("", "a server's name must be non-empty, without '/', ':' or spaces")
	}
	switch {
	case m.Command == "" && m.URL == "":
		bad("", "set command (a stdio server) or url (a streamable HTTP server)")
	case m.Command != "" && m.URL != "":
		bad("", "set command or url, not both")
	case m.URL != "":
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(".url", "%q is not an http:// or https:// URL", m.URL)
		}
		if len(m.Args) > 0 || len(m.Env) > 0 || m.Dir != "" {
			bad("", "args, env and dir are for command (stdio) servers")
		}
	default:
		if len(m.Headers) > 0 {
			bad(".headers", "headers are for url (HTTP) servers")
		}
	}
	for k := range m.Env {
		if k == "" || strings.Contains(k, "=") {
			bad(".env", "%q is not a variable name", k)
		}
	}
	if m.Timeout < 0 {
		bad(".timeout", "must be positive")
	}
	return errs
}

// Thread TTL strategies.
const (
	// StrategyDelete deletes an expired thread with its runs, checkpoints
	// and events.
	StrategyDelete = "delete"
	// StrategyKeepLatest keeps an expired thread and its latest
	// checkpoint, and deletes its older checkpoints and its finished runs.
	StrategyKeepLatest = "keep_latest"
)

// Threads sets threads' default time to live and the sweeper that
// enforces it.
type Threads struct {
	// TTL is how long a thread lives after its last activity (creation, a
	// run, a state update) when its creator gave none (0: forever).
	TTL time.Duration `yaml:"ttl"`
	// Strategy is what happens to an expired thread: delete (the default)
	// or keep_latest.
	Strategy string `yaml:"strategy"`
	// SweepInterval is how often expired threads are looked for (1 min
	// when 0; at least 1 s).
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// SweepBatch bounds the threads one sweep handles (100 when 0).
	SweepBatch int `yaml:"sweep_batch"`
	// Retention is the default checkpoint retention policy of every
	// thread (nil: keep every checkpoint); an assistant's own overrides it.
	Retention *Retention `yaml:"retention"`
}

func (t Threads) check() []error {
	var errs []error
	if t.TTL < 0 {
		errs = append(errs, fmt.Errorf("threads.ttl: must be positive (e.g. 24h), or 0 to keep threads"))
	} else if t.TTL > 0 && t.TTL < time.Minute {
		errs = append(errs, fmt.Errorf("threads.ttl: %s is less than a minute (LangGraph counts TTLs in minutes)", t.TTL))
	}
	switch t.Strategy {
	case "", StrategyDelete, StrategyKeepLatest:
	default:
		errs = append(errs, fmt.Errorf("threads.strategy: %q is not delete or keep_latest", t.Strategy))
	}
	if t.SweepInterval < 0 {
		errs = append(errs, fmt.Errorf("threads.sweep_interval: must be positive"))
	} else if t.SweepInterval > 0 && t.SweepInterval < time.Second {
		errs = append(errs, fmt.Errorf("threads.sweep_interval: %s is less than a second", t.SweepInterval))
	}
	if t.SweepBatch < 0 {
		errs = append(errs, fmt.Errorf("threads.sweep_batch: must be positive"))
	}
	errs = append(errs, t.Retention.check("threads.retention")...)
	return errs
}

func serverNames(m map[string]MCPServer) string {
	if len(m) == 0 {
		return " (there is none)"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return " (" + strings.Join(names, ", ") + ")"
}
