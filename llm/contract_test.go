package llm_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// contractModel replies with its scripted texts in turn (an error entry fails
// that call) and records a copy of every request.
type contractModel struct {
	mu       sync.Mutex
	replies  []any // string or error
	finish   llm.FinishReason
	requests []llm.Request
}

func (m *contractModel) Name() string { return "test:json" }

func (m *contractModel) next(req *llm.Request) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := *req
	r.Messages = append([]llm.Message(nil), req.Messages...)
	m.requests = append(m.requests, r)
	if len(m.replies) == 0 {
		return "", errors.New("script exhausted")
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	if err, ok := next.(error); ok {
		return "", err
	}
	return next.(string), nil
}

func (m *contractModel) usage() *llm.Usage { return &llm.Usage{InputTokens: 10, OutputTokens: 4} }

func (m *contractModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	text, err := m.next(req)
	if err != nil {
		return nil, err
	}
	return &llm.Response{Message: llm.Assistant(text), Usage: *m.usage(), FinishReason: m.finishReason()}, nil
}

func (m *contractModel) finishReason() llm.FinishReason {
	if m.finish != "" {
		return m.finish
	}
	return llm.FinishStop
}

func (m *contractModel) Stream(_ context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		text, err := m.next(req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		if yield(llm.Chunk{Text: text}, nil) {
			yield(llm.Chunk{Usage: m.usage(), FinishReason: m.finishReason()}, nil)
		}
	}
}

const (
	contractBadMissing = `{"goal":"ship"}`
	contractBadProse   = "I think we should ship it soon."
)

func contractRequest() *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.System("You plan."), llm.User("Plan the release.")}}
}

func TestGenerateJSONFirstTry(t *testing.T) {
	m := &contractModel{replies: []any{"```json\n" + contractGoodPlan + "\n```"}}
	res, err := llm.GenerateJSON[contractPlan](context.Background(), m, contractRequest())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contractWantPlan(), res.Value); diff != "" {
		t.Errorf("value -want +got:\n%s", diff)
	}
	if res.Attempts != 1 || len(res.Rejected) != 0 || res.Response == nil || res.Response.Message.Text() == "" {
		t.Errorf("result = %+v", res)
	}
	schema, _ := llm.SchemaFor[contractPlan]()
	rf := m.requests[0].ResponseFormat
	if rf == nil || rf.Name != "contractPlan" || string(rf.Schema) != string(schema) {
		t.Errorf("ResponseFormat = %+v, want T's schema", rf)
	}
}

func TestGenerateJSONCorrectsBadReplies(t *testing.T) {
	m := &contractModel{replies: []any{contractBadMissing, contractBadProse, contractGoodPlan}}
	req := contractRequest()
	before := append([]llm.Message(nil), req.Messages...)
	res, err := llm.GenerateJSON[contractPlan](context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contractWantPlan(), res.Value); diff != "" {
		t.Errorf("value -want +got:\n%s", diff)
	}
	if res.Attempts != 3 || len(m.requests) != 3 {
		t.Fatalf("attempts %d, requests %d; want 3", res.Attempts, len(m.requests))
	}
	if want := (llm.Usage{InputTokens: 30, OutputTokens: 12, Requests: 3}); res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	// Rejected: bad reply, correction, bad reply, correction.
	if len(res.Rejected) != 4 {
		t.Fatalf("rejected = %d messages, want 4", len(res.Rejected))
	}
	for i, want := range []struct {
		role llm.Role
		text string
	}{
		{llm.RoleAssistant, contractBadMissing},
		{llm.RoleUser, "- field `priority` is required\n- field `steps` is required\n- field `labels` is required\n"},
		{llm.RoleAssistant, contractBadProse},
		{llm.RoleUser, "- no JSON object found in the reply"},
	} {
		got := res.Rejected[i]
		if got.Role != want.role || !strings.Contains(got.Text(), want.text) || got.ID == "" {
			t.Errorf("rejected[%d] = %s %q (id %q), want %s containing %q", i, got.Role, got.Text(), got.ID, want.role, want.text)
		}
	}
	if fix := res.Rejected[1].Text(); !strings.Contains(fix, "only the corrected JSON object") || !strings.Contains(fix, "{goal: string, priority:") {
		t.Errorf("correction does not restate the task and shape: %q", fix)
	}
	// Each request is the original history plus the rejected messages so far.
	for i, n := range []int{0, 2, 4} {
		want := append(append([]llm.Message(nil), before...), res.Rejected[:n]...)
		if diff := cmp.Diff(want, m.requests[i].Messages); diff != "" {
			t.Errorf("request %d messages -want +got:\n%s", i+1, diff)
		}
	}
	if !cmp.Equal(req.Messages, before) || req.ResponseFormat != nil {
		t.Errorf("the caller's request was modified: %+v", req)
	}
}

func TestGenerateJSONGivesUpAfterMaxAttempts(t *testing.T) {
	m := &contractModel{replies: []any{contractBadProse, contractBadProse, contractBadMissing, contractGoodPlan}}
	res, err := llm.GenerateJSON[contractPlan](context.Background(), m, contractRequest())
	if !errors.Is(err, llm.ErrContract) {
		t.Fatalf("err = %v, want ErrContract", err)
	}
	cerr, ok := errors.AsType[*llm.ContractError](err)
	if !ok {
		t.Fatalf("err = %T, want *ContractError", err)
	}
	if cerr.Attempts != 3 || cerr.Reply != contractBadMissing || cerr.Model != "test:json" || len(cerr.Problems) != 3 ||
		cerr.Problems[0].Message != "field `priority` is required" {
		t.Errorf("ContractError = %+v", cerr)
	}
	if len(res.Rejected) != 6 || len(cerr.Rejected) != 6 || res.Rejected[4].Text() != contractBadMissing || res.Rejected[5].Role != llm.RoleUser {
		t.Errorf("rejected: result %d, error %d messages; want the 3 replies and 3 corrections", len(res.Rejected), len(cerr.Rejected))
	}
	if res.Response != nil || res.Attempts != 3 || len(m.requests) != 3 {
		t.Errorf("result %+v after %d requests", res, len(m.requests))
	}
	if derr, ok := errors.AsType[*llm.DecodeError](err); !ok || derr.Reply != contractBadMissing {
		t.Errorf("the ContractError does not unwrap to the last DecodeError")
	}
	for _, want := range []string{"test:json", "llm_test.contractPlan", "3 attempts", "field `priority` is required", "with an example", "JSONMaxAttempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestGenerateJSONPassesModelErrorsThrough(t *testing.T) {
	boom := &llm.APIError{Provider: "test", Model: "json", StatusCode: 503}
	m := &contractModel{replies: []any{contractBadProse, boom}}
	res, err := llm.GenerateJSON[contractPlan](context.Background(), m, contractRequest())
	if !errors.Is(err, boom) || errors.Is(err, llm.ErrContract) {
		t.Fatalf("err = %v, want the model's error as is", err)
	}
	if res == nil || len(res.Rejected) != 2 || res.Attempts != 1 {
		t.Errorf("result = %+v, want the first bad reply and its correction", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m = &contractModel{replies: []any{contractGoodPlan}}
	if _, err := llm.GenerateJSON[contractPlan](ctx, m, contractRequest()); !errors.Is(err, context.Canceled) || len(m.requests) != 0 {
		t.Errorf("cancelled: err = %v after %d requests", err, len(m.requests))
	}
}

func TestGenerateJSONOptions(t *testing.T) {
	ctx := context.Background()

	m := &contractModel{replies: []any{contractGoodPlan}}
	if _, err := llm.GenerateJSON[contractPlan](ctx, m, contractRequest(), llm.JSONResponseFormat(false)); err != nil || m.requests[0].ResponseFormat != nil {
		t.Errorf("JSONResponseFormat(false): err %v, format %+v", err, m.requests[0].ResponseFormat)
	}

	own := &llm.ResponseFormat{Name: "mine"}
	req := contractRequest()
	req.ResponseFormat = own
	m = &contractModel{replies: []any{contractGoodPlan}}
	if _, err := llm.GenerateJSON[contractPlan](ctx, m, req); err != nil || m.requests[0].ResponseFormat != own {
		t.Errorf("the request's own ResponseFormat was replaced: %+v", m.requests[0].ResponseFormat)
	}

	m = &contractModel{replies: []any{`["a"]`}}
	if _, err := llm.GenerateJSON[[]string](ctx, m, contractRequest()); err != nil || m.requests[0].ResponseFormat != nil {
		t.Errorf("a non-object type must not send a ResponseFormat: err %v, %+v", err, m.requests[0].ResponseFormat)
	}

	m = &contractModel{replies: []any{contractBadProse, contractGoodPlan}}
	res, err := llm.GenerateJSON[contractPlan](ctx, m, contractRequest(), llm.JSONMaxAttempts(1))
	if !errors.Is(err, llm.ErrContract) || res.Attempts != 1 || len(res.Rejected) != 2 {
		t.Errorf("JSONMaxAttempts(1): err %v, result %+v", err, res)
	}

	m = &contractModel{replies: []any{contractBadProse, contractGoodPlan}}
	custom := llm.JSONCorrection(func(e *llm.DecodeError) llm.Message {
		return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("JSON only, please. " + e.Problems[0].Message)}}
	})
	res, err = llm.GenerateJSON[contractPlan](ctx, m, contractRequest(), custom)
	if err != nil || !strings.HasPrefix(res.Rejected[1].Text(), "JSON only, please. no JSON object") || res.Rejected[1].ID == "" {
		t.Errorf("JSONCorrection: err %v, correction %+v", err, res.Rejected[1])
	}
}

func TestGenerateJSONSaysWhenTheReplyWasCutOff(t *testing.T) {
	m := &contractModel{replies: []any{`{"goal": "ship", "steps": [`, contractGoodPlan}, finish: llm.FinishLength}
	res, err := llm.GenerateJSON[contractPlan](context.Background(), m, contractRequest())
	if err != nil {
		t.Fatal(err)
	}
	if fix := res.Rejected[1].Text(); !strings.Contains(fix, "- the reply was cut off at the token limit; make it shorter\n") {
		t.Errorf("correction = %q", fix)
	}
}

// TestGenerateJSONInsideAGraph checks that each attempt is a model request
// recorded on the node (one step), streamed through Call.
func TestGenerateJSONInsideAGraph(t *testing.T) {
	m := &contractModel{replies: []any{contractBadProse, contractBadMissing, contractGoodPlan}}
	plans := graph.NewKey[contractPlan]("plan")
	b := graph.New(history, plans)
	b.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Output, error) {
		res, err := llm.GenerateJSON[contractPlan](ctx, m, &llm.Request{Messages: history.Get(s)})
		if err != nil {
			return nil, err
		}
		msgs := append(res.Rejected, res.Response.Message)
		return graph.Writes(plans.Set(res.Value), history.Set(msgs)), nil
	})
	b.SetEntry("plan")
	b.AddEdge("plan", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var chunks int
	for ev, err := range g.Stream(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("plan it")}))) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventMessages {
			chunks++
		}
	}
	if chunks != 3 {
		t.Errorf("streamed %d message chunks, want one per attempt", chunks)
	}
	m.replies = []any{contractBadProse, contractBadMissing, contractGoodPlan}
	res, err := g.Invoke(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("plan it")})))
	if err != nil {
		t.Fatal(err)
	}
	if want := (llm.Usage{InputTokens: 30, OutputTokens: 12, Requests: 3}); res.Usage() != want || len(res.Path) != 1 {
		t.Errorf("run usage %+v over %d tasks, want %+v in one", res.Usage(), len(res.Path), want)
	}
	if got := history.Get(res.State); len(got) != 6 {
		t.Errorf("history has %d messages, want the prompt, 4 rejected and the answer", len(got))
	}
}
