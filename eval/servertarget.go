package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/eval/internal/lcwire"
)

// maxResponse bounds what the server target reads of one response.
const maxResponse = 64 << 20

// ServerTarget evaluates an assistant on a Trellis server (or any server
// with LangGraph's threads/runs API) by URL: each run is a POST
// /threads/{id}/runs/wait; the thread is read with GET /state and
// /history. Usage is not reported over this API: trials of a server target
// have none.
type ServerTarget struct {
	// URL is the server's base URL (http://127.0.0.1:8123).
	URL string
	// APIKey is sent as X-Api-Key when set.
	APIKey string
	// Assistant is the assistant ID or graph name runs use.
	Assistant string
	// MessagesKey is the state key holding the conversation (default
	// "messages").
	MessagesKey string
	// Context is the run context every first run of a case is given,
	// the case's own context merged over it key by key (nil: none).
	Context map[string]any
	// Config is LangGraph's config object every first run of a case is
	// given, the case's config merged over its "configurable" key by key
	// (nil: none).
	Config map[string]any
	// AssistantVersion, when positive, is the assistant version a case's
	// first run names (assistant_version, a Trellis server extension of
	// the run API): that version's graph, config and context run it. The
	// server keeps it for the thread's later runs (the answers to its
	// interrupts). 0 runs the latest version.
	AssistantVersion int
	// Client is the HTTP client (default http.DefaultClient; runs/wait
	// holds the request until the run ends, so give it no short timeout).
	Client *http.Client
}

// Name is the assistant at the server.
func (s *ServerTarget) Name() string { return s.Assistant + " at " + s.URL }

func (s *ServerTarget) key() string {
	if s.MessagesKey != "" {
		return s.MessagesKey
	}
	return "messages"
}

// do sends a JSON request and decodes a JSON answer into out; an answer
// that is not 2xx is an error with the server's message.
func (s *ServerTarget) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.URL, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.APIKey != "" {
		req.Header.Set("X-Api-Key", s.APIKey)
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var p struct{ Detail, Title, Message string }
		_ = json.Unmarshal(b, &p)
		msg := strings.TrimSpace(p.Detail + " " + p.Message)
		if msg == "" {
			msg = strings.TrimSpace(string(b[:min(len(b), 300)]))
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: the answer does not decode: %w", method, path, err)
		}
	}
	return nil
}

// wireState is the part of LangGraph's ThreadState the target reads.
type wireState struct {
	Values     map[string]json.RawMessage `json:"values"`
	Next       []string                   `json:"next"`
	Checkpoint struct {
		ID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	Metadata struct {
		Step int `json:"step"`
	} `json:"metadata"`
	Tasks []struct {
		Name       string          `json:"name"`
		Interrupts []wireInterrupt `json:"interrupts"`
	} `json:"tasks"`
	Interrupts []wireInterrupt `json:"interrupts"`
}

type wireInterrupt struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// Run creates the thread when it does not exist (tagged with req's
// metadata), then runs the assistant on it and waits for the end.
func (s *ServerTarget) Run(ctx context.Context, req RunRequest) (*RunOutcome, error) {
	tid := url.PathEscape(req.ThreadID)
	// The agent's custom events, its subgraphs' too, are logged with the
	// run as the page's runs log them: a planner's plan steps report their
	// tool calls so, and GET /threads/{id}/case records them.
	body := map[string]any{"assistant_id": s.Assistant, "metadata": req.Metadata,
		"stream_mode": []string{"values", "custom"}, "stream_subgraphs": true}
	switch {
	case len(req.Resume) > 0:
		body["command"] = map[string]any{"resume": req.Resume}
	default:
		md := map[string]any{}
		for k, v := range req.Metadata {
			md[k] = v
		}
		if err := s.do(ctx, "POST", "/threads", map[string]any{"thread_id": req.ThreadID, "metadata": md, "if_exists": "do_nothing"}, nil); err != nil {
			return nil, err
		}
		if req.Input.Message != "" {
			body["input"] = map[string]any{s.key(): []map[string]any{{"type": "human", "content": req.Input.Message}}}
		} else {
			body["input"] = req.Input.State
		}
		if c := mergeKeys(s.Context, req.Input.Context); c != nil {
			body["context"] = c
		}
		if cfg := s.runConfig(req.Input.Config); cfg != nil {
			body["config"] = cfg
		}
		if s.AssistantVersion > 0 {
			body["assistant_version"] = s.AssistantVersion
		}
	}
	var res map[string]json.RawMessage
	if err := s.do(ctx, "POST", "/threads/"+tid+"/runs/wait", body, &res); err != nil {
		return nil, err
	}
	out := &RunOutcome{}
	if e, ok := res["__error__"]; ok && string(e) != "null" {
		var fe struct{ Error, Message string }
		if json.Unmarshal(e, &fe) == nil && (fe.Message != "" || fe.Error != "") {
			out.Error = strings.TrimSpace(fe.Error + ": " + fe.Message)
		} else {
			out.Error = string(e)
		}
		return out, nil
	}
	if _, ok := res["__interrupt__"]; !ok {
		return out, nil
	}
	var st wireState
	if err := s.do(ctx, "GET", "/threads/"+tid+"/state", nil, &st); err != nil {
		return nil, err
	}
	node := map[string]string{}
	for _, t := range st.Tasks {
		for _, in := range t.Interrupts {
			node[in.ID] = t.Name
		}
	}
	for _, in := range st.Interrupts {
		out.Interrupts = append(out.Interrupts, Interrupt{ID: in.ID, Node: node[in.ID], Payload: in.Value})
	}
	return out, nil
}

// mergeKeys returns over's keys set over base's, in a new map; nil when
// both are nil.
func mergeKeys(base, over map[string]any) map[string]any {
	if base == nil && over == nil {
		return nil
	}
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// runConfig is the config of a case's first run: the target's Config
// with the case's configurable merged over its own.
func (s *ServerTarget) runConfig(configurable map[string]any) map[string]any {
	if s.Config == nil && configurable == nil {
		return nil
	}
	out := make(map[string]any, len(s.Config)+1)
	for k, v := range s.Config {
		out[k] = v
	}
	own, _ := out["configurable"].(map[string]any)
	if c := mergeKeys(own, configurable); c != nil {
		out["configurable"] = c
	}
	return out
}

// Thread reads the thread's state and, for the node path, its history.
func (s *ServerTarget) Thread(ctx context.Context, id string) (*Thread, error) {
	tid := url.PathEscape(id)
	var st wireState
	if err := s.do(ctx, "GET", "/threads/"+tid+"/state", nil, &st); err != nil {
		return nil, err
	}
	th := &Thread{ThreadID: id, CheckpointID: st.Checkpoint.ID, State: st.Values}
	if raw, ok := st.Values[s.key()]; ok && string(raw) != "null" {
		ms, err := lcwire.Messages(raw)
		if err != nil {
			return nil, fmt.Errorf("eval: thread %s: %w", id, err)
		}
		th.Messages = ms
	}
	var hist []wireState
	if err := s.do(ctx, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 1000}, &hist); err != nil {
		return nil, err
	}
	th.Nodes = nodePath(hist)
	return th, nil
}

// nodePath rebuilds the root node path from a thread's history (newest
// first): the tasks planned at a checkpoint ran when the next checkpoint
// has a later step.
func nodePath(hist []wireState) []string {
	var out []string
	for i := len(hist) - 1; i > 0; i-- {
		if hist[i-1].Metadata.Step > hist[i].Metadata.Step {
			out = append(out, hist[i].Next...)
		}
	}
	return out
}

// Answers returns the answers the thread's runs sent to its interrupts,
// oldest first, read from the runs' creation bodies (GET
// /threads/{id}/runs): what a person answered on the page or through the
// SDK, for Record. Each has the interrupt's ID when the run answered by
// ID, and no Kind or Question (a run's body does not say what was asked).
func (s *ServerTarget) Answers(ctx context.Context, threadID string) ([]Interrupt, error) {
	var runs []struct {
		CreatedAt string `json:"created_at"`
		Kwargs    struct {
			Command *struct {
				Resume json.RawMessage `json:"resume"`
			} `json:"command"`
		} `json:"kwargs"`
	}
	q := "?limit=1000&select=run_id&select=created_at&select=kwargs"
	if err := s.do(ctx, "GET", "/threads/"+url.PathEscape(threadID)+"/runs"+q, nil, &runs); err != nil {
		return nil, err
	}
	var out []Interrupt
	for i := len(runs) - 1; i >= 0; i-- { // newest first on the wire
		c := runs[i].Kwargs.Command
		if c == nil || len(c.Resume) == 0 || string(c.Resume) == "null" {
			continue
		}
		out = append(out, resumeAnswers(c.Resume)...)
	}
	return out, nil
}

// resumeAnswers splits a resume value: an object whose every key is an
// interrupt ID ("<task>:<n>") answers by ID, in key order; anything else
// is one answer.
func resumeAnswers(v json.RawMessage) []Interrupt {
	var byID map[string]json.RawMessage
	if json.Unmarshal(v, &byID) == nil && len(byID) > 0 {
		ids := make([]string, 0, len(byID))
		for id := range byID {
			if !strings.Contains(id, ":") {
				return []Interrupt{{Answer: v}}
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		out := make([]Interrupt, 0, len(ids))
		for _, id := range ids {
			out = append(out, Interrupt{ID: id, Answer: byID[id]})
		}
		return out
	}
	return []Interrupt{{Answer: v}}
}
