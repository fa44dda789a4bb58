// Package remotegraph runs an assistant on a server speaking the
// LangGraph API (another `trellis serve`, or LangGraph's own server) from
// inside a Trellis graph node, as package tool/a2a does for A2A agents.
//
// The remote thread's ID is derived from the local thread, task and
// agent, and created if absent, so it is the same on every re-run; the
// remote run's ID is saved as a durable step (graph.Durable) as soon as
// the run is created, before Call waits on it, so a node that runs again
// (after an interrupt, a failure, a restart) joins that run instead of
// starting another. Each run is created with a key of its round in its
// metadata (MetaRunKey), and a round whose ID was not saved looks for a
// run with its key on the remote thread before creating one, so a
// process that dies between the remote's creating the run and the save
// does not leave the round's request sent twice. A remote interrupt becomes a local graph.Interrupt
// with the remote's own payload and answer schema; the answer resumes the
// remote thread with a Command. Cancelling the local run cancels the
// remote run. Requests dial through the guarded dialer (internal/netguard)
// and the headers go only to the configured URL's origin.
//
// The remote run's events are streamed across the hop: Call creates the
// run with the stream modes in StreamModes, joins its event stream (GET
// .../runs/{run_id}/stream, from the run's first event, rejoining after
// the last event seen with Last-Event-ID when a connection drops) and
// passes them on as custom events of the local run (Event: the remote
// graph's finished nodes, its message chunks, its custom events), between
// the run's "created" and how it ended.
package remotegraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/netguard"
	"github.com/trellis-agents/trellis/tool"
	a2atool "github.com/trellis-agents/trellis/tool/a2a"
)

// Config describes one remote assistant.
type Config struct {
	// Name names the agent locally (events, errors, the derived thread).
	Name string
	// URL is the server's base URL (http(s)://host:port[/prefix]).
	URL string
	// Assistant is the remote assistant's ID (or graph ID).
	Assistant string
	// Headers go with every request to URL's origin (an API key).
	Headers map[string]string
	// AllowPrivate allows loopback and private addresses.
	AllowPrivate bool
	// AllowHosts, when set, are the only hosts requests may go to.
	AllowHosts []string
	// KeepRemoteOn says whether a cancellation with this cause leaves the
	// remote run going (see tool/a2a); nil: every cancellation cancels it.
	KeepRemoteOn func(cause error) bool
	// Transport is the base transport (nil: a clone of the default); it is
	// guarded like the default.
	Transport *http.Transport
	// Description is the tool's description (Tool); "" gives a default.
	Description string
	// ReadOnly marks the tool as a read tool (run without approval).
	ReadOnly bool
	// SaveEvery and SaveInterval say how often a call saves, as a durable
	// step, the last event of the remote run's stream it passed on: after
	// SaveEvery events, or SaveInterval after the first event not saved
	// yet, whichever comes first (0: DefaultSaveEvery,
	// DefaultSaveInterval). A node that runs again after a crash rejoins
	// the stream there; at most the events after the last save are passed
	// on again. A save is a checkpoint write.
	SaveEvery    int
	SaveInterval time.Duration
}

// Agent is a remote LangGraph-API assistant; safe for concurrent use.
type Agent struct {
	cfg  Config
	base *url.URL
	http *http.Client
}

// New checks cfg; it does not reach the server.
func New(cfg Config) (*Agent, error) {
	if cfg.Name == "" || cfg.Assistant == "" {
		return nil, errors.New("remotegraph: Name and Assistant are required")
	}
	u, err := a2atool.CheckURL(cfg.URL, cfg.AllowPrivate, cfg.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("remotegraph: agent %s: %w", cfg.Name, err)
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	} else {
		tr = tr.Clone()
	}
	netguard.Guard(tr, cfg.AllowPrivate)
	return &Agent{cfg: cfg, base: u, http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Tool returns the assistant as a tool a model calls with {"message":
// ...}: the message is sent as the remote graph's input {"messages":
// [{"role": "user", "content": message}]} and the result is the text of
// the last message the remote run left; a failure is a tool error.
func (a *Agent) Tool() tool.Tool { return &lgTool{a: a} }

type lgTool struct{ a *Agent }

var toolParams = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask or tell the remote assistant, in full: it does not see this conversation."}},"required":["message"],"additionalProperties":false}`)

func (t *lgTool) Info() tool.Info {
	d := t.a.cfg.Description
	if d == "" {
		d = "Ask the remote assistant " + t.a.cfg.Name + " to do a task and return its answer."
	}
	return tool.Info{Name: t.a.cfg.Name, Description: d, Parameters: toolParams, ReadOnly: t.a.cfg.ReadOnly}
}

func (t *lgTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Message) == "" {
		return "", tool.BadArguments(t.a.cfg.Name, "the arguments must be an object with a non-empty message string")
	}
	return t.a.Ask(ctx, in.Message)
}

// Ask sends task as the remote graph's input {"messages": [{"role":
// "user", "content": task}]} (Call) and returns the text of the last
// message the run left: a router sub-agent (agent/router's Remote).
func (a *Agent) Ask(ctx context.Context, task string) (string, error) {
	res, err := a.Call(ctx, map[string]any{"messages": []any{map[string]any{"role": "user", "content": task}}})
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

// Close closes idle connections; the agent stays usable.
func (a *Agent) Close() { a.http.CloseIdleConnections() }

// Result is what the remote run left on the remote thread.
type Result struct {
	ThreadID string          `json:"thread_id"`
	RunID    string          `json:"run_id"`
	Values   json.RawMessage `json:"values"`
	// Text is the content of the last message in values.messages, when
	// there is one.
	Text string `json:"text"`
}

// Event is a custom event a call emits (graph.Emit), naming the agent and
// the remote thread and run: Kind "remote_run" with the run's Status
// ("created", then "success", "interrupted", "error"...), and between the
// two what the remote run streamed: "remote_node" (Node finished),
// "remote_message" (a message chunk's Text; Append says it continues the
// message MessageID) and "remote_custom" (Data, the remote's own custom
// event). See the Kind constants.
type Event struct {
	Kind      string          `json:"kind"`
	Agent     string          `json:"agent"`
	ThreadID  string          `json:"thread_id"`
	RunID     string          `json:"run_id"`
	Status    string          `json:"status,omitempty"`
	Node      string          `json:"node,omitempty"`
	MessageID string          `json:"message_id,omitempty"`
	Text      string          `json:"text,omitempty"`
	Append    bool            `json:"append,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// Error is a failed remote call or run.
type Error struct {
	Agent, Op string
	Err       error
	status    int // the HTTP status, when the server answered
}

func (e *Error) Error() string {
	return fmt.Sprintf("remote assistant %s: %s: %v", e.Agent, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

type outcome struct {
	Status     string          `json:"status"`
	Values     json.RawMessage `json:"values,omitempty"`
	Interrupt  json.RawMessage `json:"interrupt,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Error      string          `json:"error,omitempty"`
	Interrupts int             `json:"interrupts,omitempty"`
}

// Call runs the assistant on the remote thread with input (the remote
// graph's input, e.g. {"messages": [...]}) and returns what it left, from
// inside a graph node; see the package documentation.
func (a *Agent) Call(ctx context.Context, input any) (*Result, error) {
	thread := uuid.NewSHA1(uuid.NameSpaceURL, []byte("trellis-remote:"+a.cfg.Name+":"+graph.ThreadID(ctx)+":"+graph.TaskID(ctx))).String()
	if _, err := graph.Durable(ctx, "lg:"+a.cfg.Name+":thread", func(ctx context.Context) (string, error) {
		return thread, a.do(ctx, "POST", "/threads", map[string]any{"thread_id": thread, "if_exists": "do_nothing", "metadata": map[string]any{"caller": a.cfg.Name}}, nil, "create the thread")
	}); err != nil {
		return nil, err
	}
	body := map[string]any{"assistant_id": a.cfg.Assistant, "input": input, "stream_mode": StreamModes, "stream_resumable": true}
	for round := 0; ; round++ {
		n := strconv.Itoa(round)
		key := runKey("call", a.cfg.Name, graph.ThreadID(ctx), graph.Namespace(ctx), graph.TaskID(ctx), n)
		run, err := graph.Durable(ctx, "lg:"+a.cfg.Name+":run:"+n, func(ctx context.Context) (string, error) {
			return a.createRun(ctx, thread, body, key)
		})
		if err != nil {
			return nil, err
		}
		graph.Emit(ctx, Event{Kind: "remote_run", Agent: a.cfg.Name, ThreadID: thread, RunID: run, Status: "created"})
		o, err := a.wait(ctx, thread, run, n)
		if err != nil {
			if ctx.Err() != nil {
				if a.cfg.KeepRemoteOn == nil || !a.cfg.KeepRemoteOn(context.Cause(ctx)) {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
					_ = a.do(cctx, "POST", "/threads/"+thread+"/runs/"+run+"/cancel?action=interrupt", nil, nil, "cancel the run")
					cancel()
				}
				return nil, ctx.Err()
			}
			return nil, err
		}
		graph.Emit(ctx, Event{Kind: "remote_run", Agent: a.cfg.Name, ThreadID: thread, RunID: run, Status: o.Status})
		if o.Interrupts == 0 {
			if o.Status != "success" {
				return nil, &Error{Agent: a.cfg.Name, Op: "run " + run + " ended " + o.Status, Err: errors.New(orDefault(o.Error, "no error message"))}
			}
			return &Result{ThreadID: thread, RunID: run, Values: o.Values, Text: lastText(o.Values)}, nil
		}
		var opts []graph.InterruptOption
		if len(o.Schema) > 0 {
			opts = append(opts, graph.ExpectAnswer(o.Schema))
		}
		answer, err := graph.Interrupt[json.RawMessage](ctx, o.Interrupt, opts...)
		if err != nil {
			return nil, err
		}
		body = map[string]any{"assistant_id": a.cfg.Assistant, "command": map[string]any{"resume": answer}, "stream_mode": StreamModes, "stream_resumable": true}
	}
}

// wait follows the run's stream to its end, saving where it stood now
// and then (marks, see mark) and how the run ended as durable steps of
// round n: a node that runs again rejoins the stream after the last mark,
// so the events passed on before it are not passed on twice.
func (a *Agent) wait(ctx context.Context, thread, run, n string) (outcome, error) {
	j := a.joiner(thread, run)
	defer j.close()
	for {
		m, err := graph.Durable(ctx, "lg:"+a.cfg.Name+":round:"+n, j.step)
		if err != nil {
			return outcome{}, err
		}
		if !m.Partial {
			return m.outcome, nil
		}
		j.last, j.pass.msgID = m.Seen, m.MsgID
	}
}

// ended reads how the run ended and the thread's state.
func (a *Agent) ended(ctx context.Context, thread, run string) (outcome, error) {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := a.do(ctx, "GET", "/threads/"+thread+"/runs/"+run, nil, &r, "read the run"); err != nil {
		return outcome{}, err
	}
	var st struct {
		Values     json.RawMessage `json:"values"`
		Interrupts []struct {
			Value  json.RawMessage `json:"value"`
			Schema json.RawMessage `json:"response_schema"`
		} `json:"interrupts"`
	}
	if err := a.do(ctx, "GET", "/threads/"+thread+"/state", nil, &st, "read the thread's state"); err != nil {
		return outcome{}, err
	}
	o := outcome{Status: r.Status, Values: st.Values, Error: r.Error, Interrupts: len(st.Interrupts)}
	if len(st.Interrupts) > 0 {
		o.Interrupt, o.Schema = st.Interrupts[0].Value, st.Interrupts[0].Schema
	}
	return o, nil
}

// request is a request to path under the configured URL, with the
// configured headers.
func (a *Agent) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	u := *a.base
	p, q, _ := strings.Cut(path, "?")
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	u.RawQuery = q
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range a.cfg.Headers {
		req.Header.Set(k, v) // every request goes to the configured origin
	}
	return req, nil
}

func (a *Agent) do(ctx context.Context, method, path string, in, out any, op string) error {
	req, err := a.request(ctx, method, path, in)
	if err != nil {
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	resp, err := a.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return &Error{Agent: a.cfg.Name, Op: op, status: resp.StatusCode, Err: fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return &Error{Agent: a.cfg.Name, Op: op, Err: fmt.Errorf("the answer is not the JSON expected: %w", err)}
		}
	}
	return nil
}

// lastText is the text of the last message in values.messages.
func lastText(values json.RawMessage) string {
	var v struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(values, &v) != nil || len(v.Messages) == 0 {
		return ""
	}
	return contentText(v.Messages[len(v.Messages)-1].Content)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
