package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/tool"
)

// toolsOf lists the session's tools by name.
func toolsOf(t *testing.T, s *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// The tenant's assistants are the tools: names sanitized and unique (the
// second "chat" gets a tag of its ID), descriptions from the assistant or
// its graph, chat assistants taking {message, thread_id, answer} and the
// others their state keys, all object schemas.
func TestListTools(t *testing.T) {
	e := newEnv(t)
	tools := toolsOf(t, e.connect(DefaultTenant, nil))
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	second := withTag("chat", "chat-b")
	want := []string{"Trip_planner", "chat", second, "double", "pick", "slow"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if !strings.HasPrefix(tools["chat"].Description, "Chats.") || !strings.HasPrefix(tools[second].Description, "The second chat.") {
		t.Errorf("descriptions %q / %q: want the graph's and the assistant's", tools["chat"].Description, tools[second].Description)
	}
	props := func(name string) []string {
		b, _ := json.Marshal(tools[name].InputSchema)
		var s struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Type != "object" {
			t.Fatalf("%s: input schema %s is not an object schema", name, b)
		}
		var ks []string
		for k := range s.Properties {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if got := props("chat"); !slices.Equal(got, []string{"answer", "message", "thread_id"}) {
		t.Errorf("chat's arguments %v", got)
	}
	if got := props("double"); !slices.Equal(got, []string{"answer", "doubled", "n", "thread_id"}) {
		t.Errorf("double's arguments %v", got)
	}
	if tools["chat"].OutputSchema == nil {
		t.Error("no output schema")
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"Trip planner!":          "Trip_planner",
		"  a.b/c  ":              "a_b_c",
		"名前":                     "",
		"ok-name_1":              "ok-name_1",
		strings.Repeat("x", 100): strings.Repeat("x", maxNameLen),
	} {
		if got := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := withTag(strings.Repeat("y", 64), "id"); len(got) != maxNameLen {
		t.Errorf("withTag keeps %d characters, want %d", len(got), maxNameLen)
	}
}

// A chat call runs the assistant and answers with its message and the
// thread; a second call with that thread_id continues the same thread.
func TestCallChatContinuesThread(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, nil)
	res := invoke(t, s, "chat", map[string]any{"message": "hello"}, false)
	if res.IsError || !strings.Contains(text(res), Answer) {
		t.Fatalf("result %q (error %v)", text(res), res.IsError)
	}
	r := structured(t, res)
	if r.Status != StatusDone || r.Answer != Answer || r.RunID == "" {
		t.Fatalf("structured %+v", r)
	}
	res2 := invoke(t, s, "chat", map[string]any{"message": "again", "thread_id": r.ThreadID}, false)
	r2 := structured(t, res2)
	if r2.ThreadID != r.ThreadID || r2.Answer != Answer {
		t.Fatalf("second call %+v, want thread %s", r2, r.ThreadID)
	}
	th, err := e.db.GetThread(context.Background(), DefaultTenant, r.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Messages []struct {
			Type string `json:"type"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(th.Values, &v)
	if len(v.Messages) != 4 {
		t.Errorf("thread has %d messages, want 4 (two turns): %s", len(v.Messages), th.Values)
	}
}

// A graph that is not a chat takes its state keys and answers with its
// final state as structured content.
func TestCallStructured(t *testing.T) {
	e := newEnv(t)
	res := invoke(t, e.connect(DefaultTenant, nil), "double", map[string]any{"n": 21}, false)
	r := structured(t, res)
	var vals struct {
		Doubled int `json:"doubled"`
	}
	if err := json.Unmarshal(r.Values, &vals); err != nil || vals.Doubled != 42 {
		t.Fatalf("values %s: want doubled 42", r.Values)
	}
	if !strings.Contains(text(res), `"doubled":42`) {
		t.Errorf("text %q: want the state as JSON", text(res))
	}
}

// A call with a progress token gets progress notifications carrying the
// run's step and custom events, increasing. The client hands notifications
// to its handler on its own goroutine, so they may reach it after the
// result: the test waits for them instead of reading at once.
func TestProgress(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	s := e.connect(DefaultTenant, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
	}})
	// waitFor waits until the notifications received hold want, each
	// counted once, and returns them.
	waitFor := func(want ...string) []*mcp.ProgressNotificationParams {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			var msgs []string
			for _, p := range got {
				msgs = append(msgs, p.Message)
			}
			snapshot := slices.Clone(got)
			mu.Unlock()
			ok := true
			for _, w := range want {
				ok = ok && slices.Contains(msgs, w)
			}
			if ok {
				return snapshot
			}
			if time.Now().After(deadline) {
				t.Fatalf("progress messages %q: want %q", msgs, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	invoke(t, s, "double", map[string]any{"n": 2}, true)
	first := waitFor(`{"doubling":2}`, "step twice done")
	seen := map[float64]bool{}
	for i, p := range first {
		if p.ProgressToken != "tok-double" || seen[p.Progress] {
			t.Errorf("notification %d: token %v progress %v (repeated: %v)", i, p.ProgressToken, p.Progress, seen[p.Progress])
		}
		seen[p.Progress] = true
	}
	for i := range first { // increasing, whatever order the handler saw them in
		if !seen[float64(i+1)] {
			t.Errorf("progress values %v: want 1..%d", seen, len(first))
		}
	}
	// Without a token, none: a third call with a token is waited for, and
	// everything received by then belongs to the first or the third.
	invoke(t, s, "double", map[string]any{"n": 3}, false)
	invoke(t, s, "double", map[string]any{"n": 4}, true)
	all := waitFor(`{"doubling":4}`)
	for _, p := range all {
		if p.ProgressToken != "tok-double" || strings.Contains(p.Message, `"doubling":3`) {
			t.Errorf("notification %+v: the call without a progress token got one", p)
		}
	}
}

// elicitor answers elicitations with action and content, recording what
// it was asked.
type elicitor struct {
	mu      sync.Mutex
	asked   []*mcp.ElicitParams
	action  string
	content map[string]any
}

func (el *elicitor) handle(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	el.asked = append(el.asked, r.Params)
	return &mcp.ElicitResult{Action: el.action, Content: el.content}, nil
}

// A run that waits for a person asks through elicitation, with the
// interrupt's flat answer schema as the requested schema; the accepted
// answer resumes the run, and the call returns its final answer.
func TestElicitationAccepted(t *testing.T) {
	e := newEnv(t)
	el := &elicitor{action: "accept", content: map[string]any{"city": "Porto", "nights": 3}}
	s := e.connect(DefaultTenant, &mcp.ClientOptions{ElicitationHandler: el.handle})
	res := invoke(t, s, "Trip_planner", map[string]any{"message": "plan a trip"}, false)
	r := structured(t, res)
	if r.Status != StatusDone || r.Answer != "Booked Porto for 3 nights." {
		t.Fatalf("result %+v: want the answer after the elicited city", r)
	}
	if len(el.asked) != 1 {
		t.Fatalf("asked %d times", len(el.asked))
	}
	b, _ := json.Marshal(el.asked[0].RequestedSchema)
	var sch struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	_ = json.Unmarshal(b, &sch)
	if len(sch.Properties) != 2 || sch.Properties["city"]["enum"] == nil || !slices.Equal(sch.Required, []string{"city"}) {
		t.Errorf("requested schema %s: want the interrupt's city and nights", b)
	}
	if !strings.Contains(el.asked[0].Message, "Which city?") {
		t.Errorf("message %q: want the question", el.asked[0].Message)
	}
}

// An answer schema elicitation cannot ask (an array) is one text field
// read as JSON; an answer the run service refuses is asked again with the
// reason, and the next one resumes the run.
func TestElicitationAskedAgain(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var msgs []string
	s := e.connect(DefaultTenant, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, r.Params.Message)
		if len(msgs) == 1 {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "not a list"}}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": `["red", "blue"]`}}, nil
	}})
	r := structured(t, invoke(t, s, "pick", map[string]any{"message": "tags"}, false))
	if r.Status != StatusDone || r.Answer != "Picked red, blue" {
		t.Fatalf("result %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 2 || !strings.Contains(msgs[0], `"minItems":1`) || !strings.Contains(msgs[1], "did not fit") {
		t.Errorf("asked %q: want the schema shown, then the reason", msgs)
	}
}

// Declined or cancelled, the run keeps waiting and the result says so,
// with what it asks and how to answer; the thread still waits.
func TestElicitationDeclinedCancelled(t *testing.T) {
	for action, want := range map[string]string{"decline": "declined", "cancel": "cancelled"} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t)
			el := &elicitor{action: action}
			s := e.connect(DefaultTenant, &mcp.ClientOptions{ElicitationHandler: el.handle})
			res := invoke(t, s, "Trip_planner", map[string]any{"message": "plan a trip"}, false)
			r := structured(t, res)
			if r.Status != StatusWaiting || r.Question == nil || r.Question.Elicitation != want {
				t.Fatalf("result %+v: want waiting, elicitation %s", r, want)
			}
			if !strings.Contains(text(res), `"thread_id": "`+r.ThreadID+`"`) || !strings.Contains(text(res), "Which city?") {
				t.Errorf("text %q: want the question and how to answer", text(res))
			}
			th, err := e.db.GetThread(context.Background(), DefaultTenant, r.ThreadID)
			if err != nil || th.Status != "interrupted" {
				t.Errorf("thread %s %v: want it still waiting", th.Status, err)
			}
		})
	}
}

// A client without elicitation gets a waiting result with the question
// and its schema; calling again with thread_id and answer resumes the
// run. An answer that does not fit is refused with the reason, and the
// thread keeps waiting; an answer to a thread that does not wait is an
// error.
func TestNoElicitationThenResume(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, nil)
	res := invoke(t, s, "Trip_planner", map[string]any{"message": "plan a trip"}, false)
	r := structured(t, res)
	if r.Status != StatusWaiting || r.Question == nil || r.Question.Elicitation != "unsupported" || !strings.Contains(string(r.Question.Schema), "Lisbon") {
		t.Fatalf("result %+v: want waiting with the question's schema", r)
	}
	bad := invoke(t, s, "Trip_planner", map[string]any{"thread_id": r.ThreadID, "answer": map[string]any{"city": "Paris"}}, false)
	if !bad.IsError || !strings.Contains(text(bad), "does not fit") {
		t.Fatalf("a city not in the enum: %q (error %v)", text(bad), bad.IsError)
	}
	// A new message while it waits says what it waits for.
	msg := invoke(t, s, "Trip_planner", map[string]any{"thread_id": r.ThreadID, "message": "hello?"}, false)
	if !msg.IsError || !strings.Contains(text(msg), "waits for an answer") {
		t.Errorf("a message to a waiting thread: %q", text(msg))
	}
	ok := invoke(t, s, "Trip_planner", map[string]any{"thread_id": r.ThreadID, "answer": map[string]any{"city": "Lisbon", "nights": 2}}, false)
	r2 := structured(t, ok)
	if r2.Status != StatusDone || r2.Answer != "Booked Lisbon for 2 nights." || r2.ThreadID != r.ThreadID {
		t.Fatalf("after the answer: %+v", r2)
	}
	again := invoke(t, s, "Trip_planner", map[string]any{"thread_id": r.ThreadID, "answer": map[string]any{"city": "Lisbon"}}, false)
	if !again.IsError || !strings.Contains(text(again), "not waiting") {
		t.Errorf("an answer to a thread that does not wait: %q", text(again))
	}
}

// An unknown tool is a JSON-RPC invalid-params error naming it.
func TestUnknownTool(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, nil)
	_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != codeInvalidParams || !strings.Contains(je.Message, `"nope"`) {
		t.Fatalf("err %v: want invalid params naming the tool", err)
	}
}

// Bad arguments are tool errors (isError) saying what is wrong.
func TestBadArguments(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, nil)
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"chat", map[string]any{}, "needs message"},
		{"chat", map[string]any{"message": 3}, "needs message"},
		{"chat", map[string]any{"message": "hi", "extra": 1}, "does not take extra"},
		{"chat", map[string]any{"message": "hi", "thread_id": 7}, "thread_id must be a string"},
		{"chat", map[string]any{"answer": "yes"}, "answer needs thread_id"},
		{"chat", map[string]any{"thread_id": "nowhere", "answer": "yes"}, "does not exist"},
		{"chat", map[string]any{"message": "hi", "thread_id": strings.Repeat("x", 300)}, "at most"},
		{"double", map[string]any{"n": "two"}, "refused the input"},
		{"double", map[string]any{"nope": 1}, "refused the input"},
	} {
		res := invoke(t, s, c.tool, c.args, false)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %v: %q (error %v), want an error saying %q", c.tool, c.args, text(res), res.IsError, c.want)
		}
	}
}

// A tenant sees only its own assistants, cannot call another's, cannot
// continue another's thread, and cannot use another's session.
func TestTenantIsolation(t *testing.T) {
	e := newEnv(t)
	a := e.connect(DefaultTenant, nil)
	res := invoke(t, a, "chat", map[string]any{"message": "secret"}, false)
	thread := structured(t, res).ThreadID
	b := e.connect("other", nil)
	tools := toolsOf(t, b)
	if len(tools) != 1 || tools["other_chat"] == nil {
		t.Fatalf("other's tools %v: want only other_chat", tools)
	}
	if _, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "double", Arguments: map[string]any{"n": 1}}); err == nil {
		t.Error("other called default's double")
	}
	// Naming A's thread makes a new thread of B's with that ID, holding
	// none of A's messages.
	rb := structured(t, invoke(t, b, "other_chat", map[string]any{"message": "hi", "thread_id": thread}, false))
	th, err := e.db.GetThread(context.Background(), "other", rb.ThreadID)
	if err != nil || strings.Contains(string(th.Values), "secret") {
		t.Errorf("other's thread %s: %v", th.Values, err)
	}
	// A's session ID with B's tenant is unknown.
	req, _ := http.NewRequest("POST", e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set(tenantHeader, "other")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("B with A's session: %d %s, want a 404 problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// The transport's refusals are problems, not plain text.
func TestTransportErrorsAreProblems(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		method, accept, session string
		want                    int
	}{
		{"GET", "text/event-stream", "", http.StatusBadRequest},
		{"POST", "application/json, text/event-stream", DefaultTenantPrefix() + "unknown", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(c.method, e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", c.accept)
		if c.session != "" {
			req.Header.Set("Mcp-Session-Id", c.session)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != c.want || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s %s: %d %s, want %d as a problem", c.method, c.session, resp.StatusCode, resp.Header.Get("Content-Type"), c.want)
		}
	}
}

// Malformed and oversized bodies are refused as problems (400, 413), and
// nothing runs.
func TestMalformedAndOversizedBodies(t *testing.T) {
	e := newEnv(t)
	small := &Handler{DB: e.h.DB, Runs: e.h.Runs, Graphs: e.h.Graphs, Enqueue: e.h.Enqueue, Tenant: e.h.Tenant, Log: e.h.Log, BodyLimit: 512}
	srv := httptest.NewServer(small.HTTPHandler())
	defer srv.Close()
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, http.StatusBadRequest},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("x", 1000) + `"}}`, http.StatusRequestEntityTooLarge},
	} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: %d %s %s, want %d as a problem", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.want)
		}
	}
}

// Clients that offer 2026-07-28 (the Go SDK's default) are answered with
// 2025-11-25, whose server-to-client requests elicitation needs.
func TestNegotiatesSessionProtocol(t *testing.T) {
	e := newEnv(t)
	if v := e.connect(DefaultTenant, nil).InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("protocol %s, want 2025-11-25", v)
	}
}

// DefaultTenantPrefix is the session ID prefix of the default tenant.
func DefaultTenantPrefix() string { return sessionPrefix(DefaultTenant) }

func TestMapSchema(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		wrapped, raw bool
		props        []string
		content      map[string]any
		want         string
	}{
		{"flat object", citySchema, false, false, []string{"city", "nights"}, map[string]any{"city": "Lisbon"}, `{"city":"Lisbon"}`},
		{"boolean", `{"type":"boolean"}`, true, false, []string{"answer"}, map[string]any{"answer": true}, `true`},
		{"anyOf picks the flat object", `{"anyOf":[{"type":"string","enum":["a","b"]},{"type":"object","properties":{"choice":{"type":"string","enum":["a","b"]}},"required":["choice"]}]}`, false, false, []string{"choice"}, map[string]any{"choice": "a"}, `{"choice":"a"}`},
		{"optional nested property dropped", `{"type":"object","properties":{"action":{"type":"string","enum":["approve","reject"]},"arguments":{"type":"object"}},"required":["action"]}`, false, false, []string{"action"}, map[string]any{"action": "approve"}, `{"action":"approve"}`},
		{"required nested: raw JSON", `{"type":"object","properties":{"plan":{"type":"object","properties":{"x":{"type":"string"}}}},"required":["plan"]}`, false, true, []string{"answer"}, map[string]any{"answer": `{"plan":{"x":"y"}}`}, `{"plan":{"x":"y"}}`},
		{"no schema: text", ``, false, true, []string{"answer"}, map[string]any{"answer": "just text"}, `"just text"`},
		{"array: raw", `{"type":"array","items":{"type":"string"}}`, false, true, []string{"answer"}, map[string]any{"answer": `["a"]`}, `["a"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			el := mapSchema(json.RawMessage(c.schema))
			if el.wrapped != c.wrapped || el.raw != c.raw {
				t.Errorf("wrapped %v raw %v", el.wrapped, el.raw)
			}
			var got []string
			for k := range el.schema["properties"].(map[string]any) {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.props) {
				t.Errorf("properties %v, want %v", got, c.props)
			}
			if v := string(el.value(c.content)); v != c.want {
				t.Errorf("value %s, want %s", v, c.want)
			}
			if _, err := json.Marshal(el.schema); err != nil {
				t.Error(err)
			}
		})
	}
}

// Plan reviews and tool approvals are asked as approve/reject with a
// reason, whatever their answer schemas allow besides.
func TestElicitationForDecisions(t *testing.T) {
	for kind, why := range map[string]string{planexec.ReviewKind: "feedback", tool.ApprovalKind: "message"} {
		p := pending{ID: "i", Value: json.RawMessage(`{"kind":"` + kind + `"}`), Schema: json.RawMessage(`{"anyOf":[{"type":"boolean"}]}`)}
		el := elicitationFor(p)
		props := el.schema["properties"].(map[string]any)
		action, _ := props["action"].(map[string]any)
		if el.wrapped || el.raw || action == nil || props[why] == nil {
			t.Errorf("%s: schema %v, want action and %s", kind, el.schema, why)
			continue
		}
		if got := string(el.value(map[string]any{"action": "reject", why: "too long"})); got != `{"action":"reject","`+why+`":"too long"}` {
			t.Errorf("%s: value %s", kind, got)
		}
	}
}

// A client whose elicitation fails gets the waiting result, saying so.
func TestElicitationFails(t *testing.T) {
	e := newEnv(t)
	s := e.connect(DefaultTenant, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("the form broke")
	}})
	r := structured(t, invoke(t, s, "Trip_planner", map[string]any{"message": "go"}, false))
	if r.Status != StatusWaiting || r.Question.Elicitation != "failed" {
		t.Fatalf("result %+v, want waiting with elicitation failed", r)
	}
}

// Any answer schema maps to an elicitation schema the SDK accepts, and any
// submitted content to a resume value that is valid JSON, without panics.
func FuzzMapSchema(f *testing.F) {
	for _, s := range []string{citySchema, `{"type":"boolean"}`, `{"anyOf":[{"type":"string","enum":["a"]},{"type":"object"}]}`, `[]`, `null`, `{"type":"object","properties":{"a":{"enum":[1,2]}}}`} {
		f.Add(s, `{"answer":"x","city":"Lisbon"}`)
	}
	f.Fuzz(func(t *testing.T, schema, content string) {
		el := mapSchema(json.RawMessage(schema))
		props, ok := el.schema["properties"].(map[string]any)
		if !ok || len(props) == 0 || el.schema["type"] != "object" {
			t.Fatalf("schema %v: want an object with properties", el.schema)
		}
		for name, p := range props {
			switch p.(map[string]any)["type"] {
			case "string", "number", "integer", "boolean":
			default:
				t.Fatalf("property %s of %v is not primitive", name, el.schema)
			}
		}
		var c map[string]any
		_ = json.Unmarshal([]byte(content), &c)
		if v := el.value(c); !json.Valid(v) {
			t.Fatalf("value %s is not JSON", v)
		}
	})
}
