package openaiapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/planner"
)

func TestModelsListsGraphsThenAssistants(t *testing.T) {
	e := newEnv(t, 0)
	resp, err := http.Get(e.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got ModelList
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.GraphID == "" {
			t.Errorf("model %+v: want object model and its graph", m)
		}
	}
	if got.Object != "list" || strings.Join(ids, ",") != "chat,planner,helper,mixed,chat-a,chat-b,planner-a,helper-a,mixed-a" {
		t.Errorf("models %s %v, want the graphs then the assistants", got.Object, ids)
	}
}

// Every refusal is a 4xx in OpenAI's error shape naming what was wrong.
func TestErrorsInOpenAIShape(t *testing.T) {
	e := newEnv(t, 2048)
	user := []map[string]any{{"role": "user", "content": "hi"}}
	waitingThread := "th-idle"
	if st, _, b := e.post(map[string]any{"model": "chat", "messages": user}, HeaderThread, waitingThread); st != 200 {
		t.Fatalf("setup: %d %s", st, b)
	}
	for _, c := range []struct {
		name   string
		body   any
		hdr    []string
		status int
		want   string // in the message
		param  string
		code   string
	}{
		{"unknown model", map[string]any{"model": "nosuch", "messages": user}, nil, 404, `"nosuch" does not exist`, "model", "model_not_found"},
		{"malformed JSON", `{"model": "chat", "messages": [`, nil, 400, "JSON", "", ""},
		{"not an object", `[1,2]`, nil, 400, "object", "", ""},
		{"model missing", map[string]any{"messages": user}, nil, 400, "required", "model", ""},
		{"model empty", map[string]any{"model": " ", "messages": user}, nil, 400, "model is empty", "model", ""},
		{"messages wrong type", map[string]any{"model": "chat", "messages": "hi"}, nil, 400, "/messages", "messages", ""},
		{"no messages", map[string]any{"model": "chat", "messages": []any{}}, nil, 400, "messages is empty", "messages", ""},
		{"last not user", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "assistant", "content": "b"}}}, nil, 400, "last message", "messages", ""},
		{"unknown role", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "robot", "content": "a"}}}, nil, 400, `role "robot"`, "messages[0].role", ""},
		{"tool result without call", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "tool", "content": "42"}}}, nil, 400, "without tool_call_id", "messages[1].tool_call_id", ""},
		{"tool result to a thread not waiting", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "x"}, map[string]any{"role": "tool", "content": "42", "tool_call_id": "c1"}}}, []string{HeaderThread, waitingThread}, 409, "waits for no tool results", "messages", "thread_not_waiting"},
		{"function role", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "function", "content": "42"}, map[string]any{"role": "user", "content": "a"}}}, nil, 400, "deprecated role function", "messages[0].role", ""},
		{"not a function tool", map[string]any{"model": "chat", "messages": user, "tools": []any{map[string]any{"type": "web_search", "function": map[string]any{"name": "f"}}}}, nil, 400, `type "web_search"`, "tools[0].type", ""},
		{"image part", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "x"}}}}}}, nil, 400, "only text parts", "messages[0].content", ""},
		{"client tools", map[string]any{"model": "planner", "messages": user, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}}, nil, 400, `(graph planner) does not accept client tools`, "tools", ""},
		{"n above 1", map[string]any{"model": "chat", "messages": user, "n": 2}, nil, 400, "n must be 1", "n", ""},
		{"not JSON", `model=chat`, []string{"Content-Type", "text/plain"}, 415, "must be JSON", "", ""},
		{"oversized body", map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("x", 4096)}}}, nil, 413, "", "", ""},
		{"two thread IDs", map[string]any{"model": "chat", "messages": user, "metadata": map[string]any{"thread_id": "a"}}, []string{HeaderThread, "b"}, 400, "different threads", "metadata.thread_id", ""},
		{"answer to a thread not waiting", map[string]any{"model": "chat", "messages": user, "trellis": map[string]any{"answer": "yes"}}, []string{HeaderThread, waitingThread}, 409, "not waiting", "trellis.answer", "thread_not_waiting"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, h, b := e.post(c.body, c.hdr...)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var er ErrorResponse
			if err := json.Unmarshal(b, &er); err != nil || er.Error.Message == "" || er.Error.Type == "" {
				t.Fatalf("body %s is not OpenAI's error shape (%v)", b, err)
			}
			if !strings.Contains(er.Error.Message, c.want) {
				t.Errorf("message %q, want it to contain %q", er.Error.Message, c.want)
			}
			if c.param != "" && (er.Error.Param == nil || *er.Error.Param != c.param) {
				t.Errorf("param %v, want %q", er.Error.Param, c.param)
			}
			if c.code != "" && (er.Error.Code == nil || *er.Error.Code != c.code) {
				t.Errorf("code %v, want %q", er.Error.Code, c.code)
			}
		})
	}
	// A refused turn ran nothing on the thread.
	if got := e.userMessages(waitingThread); len(got) != 1 {
		t.Errorf("the thread has user messages %q after refusals, want the one of the setup", got)
	}
}

func TestCompletionWithUsageAndReasoning(t *testing.T) {
	e := newEnv(t, 0)
	got, h := e.complete(map[string]any{"model": "chat-b", "messages": []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Hello"}}},
	}})
	msg := got.Choices[0].Message
	if msg.Role != "assistant" || msg.Content != Answer || msg.ReasoningContent != Thinking {
		t.Errorf("message %+v, want the answer and its reasoning", msg)
	}
	if got.Choices[0].FinishReason != "stop" || got.Object != "chat.completion" || got.Model != "chat-b" {
		t.Errorf("completion %+v", got)
	}
	if got.Usage == nil || got.Usage.PromptTokens == 0 || got.Usage.CompletionTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Errorf("usage %+v, want the model call's tokens", got.Usage)
	}
	thread := h.Get(HeaderThread)
	if thread == "" || got.Trellis.ThreadID != thread || got.Trellis.Status != "done" || h.Get(HeaderStatus) != "done" {
		t.Errorf("thread header %q, extension %+v, status %q", thread, got.Trellis, h.Get(HeaderStatus))
	}
	if users := e.userMessages(thread); len(users) != 1 || users[0] != "Hello" {
		t.Errorf("the thread has user messages %q, want just Hello (the system message is the assistant's business)", users)
	}
}

func TestStreamedCompletion(t *testing.T) {
	e := newEnv(t, 0)
	st, h, b := e.post(map[string]any{"model": "chat", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []any{map[string]any{"role": "user", "content": "Hello"}}})
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %q: %s", st, h.Get("Content-Type"), b)
	}
	list, done := chunks(t, b)
	if !done || len(list) < 4 {
		t.Fatalf("%d chunks, done %v: %s", len(list), done, b)
	}
	var content, reasoning strings.Builder
	var pieces int
	var finish []string
	var usage *ChatUsage
	for i, raw := range list {
		var c ChatChunk
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("chunk %d %s: %v", i, raw, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID != (func() string { var f ChatChunk; _ = json.Unmarshal(list[0], &f); return f.ID })() {
			t.Errorf("chunk %d: object %q id %q", i, c.Object, c.ID)
		}
		if i == 0 && (c.Choices[0].Delta.Role != "assistant" || c.Trellis == nil || c.Trellis.ThreadID != h.Get(HeaderThread)) {
			t.Errorf("first chunk %s: want the role and the thread", raw)
		}
		if len(c.Choices) == 0 {
			usage = c.Usage
			continue
		}
		if c.Usage != nil {
			t.Errorf("chunk %d carries usage before the end", i)
		}
		if d := c.Choices[0].Delta.Content; d != "" {
			content.WriteString(d)
			pieces++
		}
		reasoning.WriteString(c.Choices[0].Delta.ReasoningContent)
		if f := c.Choices[0].FinishReason; f != nil {
			finish = append(finish, *f)
			if c.Trellis == nil || c.Trellis.Status != "done" {
				t.Errorf("last chunk %s: want the status in the extension", raw)
			}
		}
	}
	if content.String() != Answer || pieces < 2 {
		t.Errorf("content %q in %d pieces, want %q streamed in several", content.String(), pieces, Answer)
	}
	if reasoning.String() != Thinking {
		t.Errorf("reasoning %q, want %q", reasoning.String(), Thinking)
	}
	if strings.Join(finish, ",") != "stop" {
		t.Errorf("finish reasons %v, want one stop", finish)
	}
	if usage == nil || usage.TotalTokens == 0 {
		t.Errorf("usage chunk %+v, want the tokens", usage)
	}
	if h.Get(HeaderStatus) != "done" {
		t.Errorf("status trailer %q, want done", h.Get(HeaderStatus))
	}
}

// Ten turns sent as a chat app sends them — the whole history each time,
// no thread ID — leave exactly ten user messages in one thread.
func TestTenTurnsWithoutThreadIDStayInOneThread(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "chat"}
	threads := map[string]bool{}
	for i := range 10 {
		got := c.say(fmt.Sprintf("message %d", i+1))
		threads[got.Trellis.ThreadID] = true
	}
	if len(threads) != 1 {
		t.Fatalf("the conversation went to %d threads", len(threads))
	}
	for th := range threads {
		users := e.userMessages(th)
		if len(users) != 10 || users[0] != "message 1" || users[9] != "message 10" {
			t.Errorf("the thread has user messages %q, want message 1 to 10 once each", users)
		}
	}
}

// An edited earlier message forks the thread at the last common message:
// the fork has the common part and the edit; the original is unchanged.
func TestEditedHistoryForksTheThread(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "chat"}
	for _, s := range []string{"one", "two", "three"} {
		c.say(s)
	}
	orig := c.msgs
	first := c.say("four").Trellis.ThreadID
	// Edit "three": the history up to the answer to "two", then the edit.
	edited := &conversation{e: e, model: "chat", msgs: append([]map[string]any{}, orig[:4]...)}
	fork := edited.say("three, edited").Trellis.ThreadID
	if fork == first {
		t.Fatal("the edit went to the original thread")
	}
	if got := e.userMessages(first); strings.Join(got, "|") != "one|two|three|four" {
		t.Errorf("original thread: %q", got)
	}
	if got := e.userMessages(fork); strings.Join(got, "|") != "one|two|three, edited" {
		t.Errorf("forked thread: %q, want the common part and the edit", got)
	}
	// The fork continues as its own conversation.
	if again := edited.say("five").Trellis.ThreadID; again != fork {
		t.Errorf("the fork's next turn went to %s, not the fork %s", again, fork)
	}
	// A regenerated answer (the same history sent again) forks as well,
	// so the thread never holds a message twice.
	regen := &conversation{e: e, model: "chat", msgs: append([]map[string]any{}, orig...)}
	if th := regen.say("four").Trellis.ThreadID; th == first || th == fork {
		t.Errorf("a resent turn went to thread %s (original %s, fork %s), want a new fork", th, first, fork)
	}
	if got := e.userMessages(first); len(got) != 4 {
		t.Errorf("original thread has %q after the resend", got)
	}
}

// A named thread (header or metadata) is used as it is, created when new,
// and only the new message is appended.
func TestNamedThread(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "chat", hdr: []string{HeaderThread, "my-thread"}}
	got := c.say("first")
	if got.Trellis.ThreadID != "my-thread" {
		t.Fatalf("thread %s, want my-thread", got.Trellis.ThreadID)
	}
	// The metadata form, with a history the thread never answered: only
	// the last message is new to it.
	body := map[string]any{"model": "chat", "metadata": map[string]any{"thread_id": "my-thread"}, "messages": []any{
		map[string]any{"role": "user", "content": "something else"}, map[string]any{"role": "assistant", "content": "ok"},
		map[string]any{"role": "user", "content": "second"},
	}}
	if got, h := e.complete(body); got.Trellis.ThreadID != "my-thread" || h.Get(HeaderThread) != "my-thread" {
		t.Errorf("thread %s / %s", got.Trellis.ThreadID, h.Get(HeaderThread))
	}
	if users := e.userMessages("my-thread"); strings.Join(users, "|") != "first|second" {
		t.Errorf("user messages %q, want first|second", users)
	}
}

// The planner asks a choice, then a form, presents its plan and asks to
// approve the booking: each answered by a plain next message, one of them
// wrong and asked again.
func TestPlannerAnsweredInTheConversation(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "planner"}
	got := c.say("Organise our team offsite")
	ia := got.Trellis.Interaction
	if got.Trellis.Status != "waiting" || ia == nil || ia.Kind != kindQuestion || ia.Mode != "select" || len(ia.Options) != 3 || len(ia.Schema) == 0 {
		t.Fatalf("first reply %+v: want the city question", got.Trellis)
	}
	text := got.Choices[0].Message.Content
	if !strings.Contains(text, planner.CityQuestion) || !strings.Contains(text, "1. Lisbon") || got.Choices[0].FinishReason != "stop" {
		t.Errorf("question text %q", text)
	}
	// 7 is no option: asked again, nothing run.
	got = c.say("7")
	if got.Trellis.Status != "reasked" || !strings.Contains(got.Choices[0].Message.Content, "7 is not an option") || got.Trellis.Interaction.ID != ia.ID {
		t.Errorf("after 7: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	got = c.say("lisbon")
	if got.Trellis.Interaction == nil || got.Trellis.Interaction.Mode != "form" || !strings.Contains(got.Choices[0].Message.Content, "Number of people (people)") {
		t.Fatalf("after the city: %+v", got.Trellis)
	}
	// 99 people is out of bounds: the form is asked again with why.
	got = c.say("people: 99\nlength: 2 days")
	if got.Trellis.Interaction == nil || got.Trellis.Interaction.Mode != "form" || !strings.Contains(got.Choices[0].Message.Content, "at most 40") {
		t.Fatalf("after 99 people: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	got = c.say("Number of people: 12\nlength: 2\nnotes: vegetarian food")
	if ia := got.Trellis.Interaction; ia == nil || ia.Kind != kindPlan || len(ia.Plan) == 0 || !strings.Contains(got.Choices[0].Message.Content, "1. Find venues [venues]") {
		t.Fatalf("after the form: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	got = c.say("确认")
	// The replan after the venues changes the approved plan: reviewed again.
	if ia := got.Trellis.Interaction; ia == nil || ia.Kind != kindPlan || !strings.Contains(got.Choices[0].Message.Content, "The plan changed while it ran (done: venues, activity; changed: availability, budget, book, check_rio, check_verde)") {
		t.Fatalf("after the plan: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	got = c.say("yes")
	ia = got.Trellis.Interaction
	if ia == nil || ia.Kind != kindApproval || ia.Tool != planner.BookVenue || !strings.Contains(got.Choices[0].Message.Content, `"venue":"Quinta Verde"`) {
		t.Fatalf("after the plan: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	if len(got.Trellis.Events) == 0 || !hasEvent(got.Trellis.Events, "tool_call") || !hasEvent(got.Trellis.Events, "tool_result") {
		t.Errorf("events %+v: want the steps' tool calls and results", got.Trellis.Events)
	}
	got = c.say("maybe")
	if got.Trellis.Status != "reasked" || !strings.Contains(got.Choices[0].Message.Content, "is not a decision") {
		t.Errorf("after maybe: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	got = c.say("是")
	if got.Trellis.Status != "done" || got.Trellis.Interaction != nil || !strings.Contains(got.Choices[0].Message.Content, planner.DeliveredText) {
		t.Fatalf("after approving: %+v %q", got.Trellis, got.Choices[0].Message.Content)
	}
	if n := strings.Count(got.Choices[0].Message.Content, "Your offsite is booked"); n != 1 {
		t.Errorf("the answer is in the reply %d times: %q", n, got.Choices[0].Message.Content)
	}
	if users := e.userMessages(got.Trellis.ThreadID); len(users) != 1 {
		t.Errorf("user messages %q: answers go to the interrupts, not the messages", users)
	}
}

func hasEvent(evs []ProgressEvent, typ string) bool {
	for _, ev := range evs {
		if ev.Type == typ {
			return true
		}
	}
	return false
}

// A structured answer skips parsing; a streamed turn that stops ends with
// the interaction in the last chunk.
func TestStructuredAnswerAndStreamedQuestion(t *testing.T) {
	e := newEnv(t, 0)
	msgs := []any{map[string]any{"role": "user", "content": "Organise our team offsite"}}
	st, h, b := e.post(map[string]any{"model": "planner", "stream": true, "messages": msgs})
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	list, done := chunks(t, b)
	var last ChatChunk
	if err := json.Unmarshal(list[len(list)-1], &last); err != nil || !done {
		t.Fatalf("last chunk: %v, done %v", err, done)
	}
	if last.Trellis == nil || last.Trellis.Status != "waiting" || last.Trellis.Interaction == nil || h.Get(HeaderStatus) != "waiting" {
		t.Fatalf("last chunk %s, status %q: want the interaction", list[len(list)-1], h.Get(HeaderStatus))
	}
	thread := h.Get(HeaderThread)
	got, _ := e.complete(map[string]any{"model": "planner", "messages": msgs, "trellis": map[string]any{"answer": map[string]any{"choice": "Prague"}}}, HeaderThread, thread)
	if ia := got.Trellis.Interaction; ia == nil || ia.Mode != "form" {
		t.Fatalf("after the structured answer: %+v", got.Trellis)
	}
	// A structured answer that does not fit the schema is asked again.
	got, _ = e.complete(map[string]any{"model": "planner", "messages": msgs, "trellis": map[string]any{"answer": map[string]any{"people": "many"}}}, HeaderThread, thread)
	if got.Trellis.Status != "reasked" || got.Trellis.Interaction.Mode != "form" || len(got.Trellis.Interaction.Problems) == 0 {
		t.Errorf("after a bad structured answer: %+v", got.Trellis)
	}
}

// An edited answer to a question cannot fork at the question (the answer
// given is recorded on that checkpoint): it forks at the last turn that
// was not waiting, here none, so a new thread gets the whole
// conversation; the original keeps waiting where it was.
func TestEditedAnswerDoesNotForkAtAQuestion(t *testing.T) {
	e := newEnv(t, 0)
	c := &conversation{e: e, model: "planner"}
	c.say("Organise our team offsite")
	orig := append([]map[string]any{}, c.msgs...)
	first := c.say("1")
	if first.Trellis.Interaction == nil || first.Trellis.Interaction.Mode != "form" {
		t.Fatalf("after 1: %+v", first.Trellis)
	}
	edited := &conversation{e: e, model: "planner", msgs: orig}
	got := edited.say("2")
	if got.Trellis.ThreadID == first.Trellis.ThreadID {
		t.Fatal("the edited answer went to the original thread")
	}
	if users := e.userMessages(got.Trellis.ThreadID); len(users) != 2 || users[1] != "2" {
		t.Errorf("the new thread has user messages %q, want the task and the edit", users)
	}
	th, err := e.db.GetThread(t.Context(), DefaultTenant, first.Trellis.ThreadID)
	if err != nil || th.Status != "interrupted" || !strings.Contains(string(th.Interrupts), planner.FormQuestion) {
		t.Errorf("the original thread %s (%v) no longer waits at the form", th.Status, err)
	}
}

// A turn on a thread whose run is still going is a 409: it is neither
// queued behind it nor run beside it.
func TestTurnOnABusyThread(t *testing.T) {
	e := newEnv(t, 0)
	body, _ := json.Marshal(map[string]any{"model": "chat", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "take your time"}}})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderThread, "slow")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first chunk is sent once the run exists.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	st, _, b := e.post(map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "hello?"}}}, HeaderThread, "slow")
	var er ErrorResponse
	if st != http.StatusConflict || json.Unmarshal(b, &er) != nil || er.Error.Code == nil || *er.Error.Code != "thread_busy" {
		t.Errorf("a turn on a busy thread: %d %s, want 409 thread_busy", st, b)
	}
}

// A run that fails is a 500 run_failed, or, streamed, an error where the
// SDKs look for one, then [DONE].
func TestFailedRun(t *testing.T) {
	e := newEnv(t, 0)
	msgs := []any{map[string]any{"role": "user", "content": "break"}}
	st, _, b := e.post(map[string]any{"model": "chat", "messages": msgs})
	var er ErrorResponse
	if st != http.StatusInternalServerError || json.Unmarshal(b, &er) != nil || er.Error.Code == nil || *er.Error.Code != "run_failed" || !strings.Contains(er.Error.Message, "the model is down") {
		t.Errorf("failed run: %d %s, want 500 run_failed with the cause", st, b)
	}
	st, _, b = e.post(map[string]any{"model": "chat", "stream": true, "messages": msgs})
	list, done := chunks(t, b)
	if st != 200 || !done || len(list) == 0 {
		t.Fatalf("streamed failed run: %d %s", st, b)
	}
	if json.Unmarshal(list[len(list)-1], &er) != nil || er.Error.Code == nil || *er.Error.Code != "run_failed" {
		t.Errorf("last data %s, want the error", list[len(list)-1])
	}
}

// Client tools run as frontend tools: the reply ends with tool_calls, the
// next request's tool message answers them and the run goes on; streamed,
// the calls come in a chunk's delta and the finish reason is tool_calls.
func TestClientTools(t *testing.T) {
	e := newEnv(t, 0)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_location", "description": "where the user is",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"precision": map[string]any{"type": "string"}}}}}}
	msgs := []any{map[string]any{"role": "user", "content": "Where am I?"}}
	got, h := e.complete(map[string]any{"model": "helper", "messages": msgs, "tools": tools})
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || h.Get(HeaderStatus) != "tool_calls" {
		t.Fatalf("choice %+v, status %q; want one tool call", c, h.Get(HeaderStatus))
	}
	call := c.Message.ToolCalls[0]
	if call.Index != nil {
		t.Errorf("a completion's tool call has an index (%d); only chunks number them", *call.Index)
	}
	if call.Type != "function" || call.Function.Name != "get_location" || call.Function.Arguments != `{"precision":"city"}` || call.ID == "" {
		t.Errorf("tool call %+v", call)
	}
	thread := h.Get(HeaderThread)
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": c.Message.Content, "tool_calls": []any{map[string]any{"id": call.ID, "type": "function", "function": map[string]any{"name": "get_location", "arguments": call.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": "Lisbon"})
	got, h = e.complete(map[string]any{"model": "helper", "messages": msgs, "tools": tools})
	if got.Choices[0].Message.Content != AfterTool || got.Choices[0].FinishReason != "stop" || h.Get(HeaderThread) != thread {
		t.Errorf("after the result: %+v on thread %s; want the answer on %s", got.Choices[0], h.Get(HeaderThread), thread)
	}
	if got := e.userMessages(thread); len(got) != 1 {
		t.Errorf("user messages %q; want the one", got)
	}

	st, _, b := e.post(map[string]any{"model": "helper", "stream": true, "tools": tools, "messages": []any{map[string]any{"role": "user", "content": "And now?"}}})
	if st != 200 {
		t.Fatalf("stream: %d %s", st, b)
	}
	cs, done := chunks(t, b)
	var sawCall bool
	var finish string
	for _, raw := range cs {
		var ch ChatChunk
		if json.Unmarshal(raw, &ch) != nil || len(ch.Choices) == 0 {
			continue
		}
		if tc := ch.Choices[0].Delta.ToolCalls; len(tc) == 1 && tc[0].Function.Name == "get_location" && tc[0].Index != nil && *tc[0].Index == 0 {
			sawCall = true
		}
		if f := ch.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if !done || !sawCall || finish != "tool_calls" {
		t.Errorf("stream: done %v, call chunk %v, finish %q; want the call and tool_calls", done, sawCall, finish)
	}
}
