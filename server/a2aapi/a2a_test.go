package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/server/db"
)

// The card a client finds at the endpoint's URL: v1.0's shape (no
// top-level url), one JSON-RPC interface per protocol version at the
// absolute endpoint URL, the assistant's name, description and skill,
// and the key schemes only when keys are on.
func TestCard(t *testing.T) {
	e := newEnv(t)
	c := e.card("planner-a")
	if c.Name != "offsite planner" || c.Description != "Plans team offsites." || !c.Capabilities.Streaming || !c.Capabilities.PushNotifications {
		t.Errorf("card %+v", c)
	}
	if len(c.SupportedInterfaces) != 3 {
		t.Fatalf("interfaces %+v", c.SupportedInterfaces)
	}
	if rest := c.SupportedInterfaces[2]; rest.URL != e.srv.URL+"/a2a/planner-a/rest" || rest.ProtocolBinding != a2a.TransportProtocolHTTPJSON || rest.ProtocolVersion != a2a.Version {
		t.Errorf("the REST interface %+v", rest)
	}
	versions := map[a2a.ProtocolVersion]bool{}
	for _, i := range c.SupportedInterfaces[:2] {
		if i.URL != e.srv.URL+"/a2a/planner-a" || i.ProtocolBinding != a2a.TransportProtocolJSONRPC {
			t.Errorf("interface %+v: want JSON-RPC at %s/a2a/planner-a", i, e.srv.URL)
		}
		versions[i.ProtocolVersion] = true
	}
	if !versions["1.0"] || !versions["0.3"] {
		t.Errorf("protocol versions %v; want 1.0 and 0.3", versions)
	}
	if len(c.Skills) != 1 || c.Skills[0].ID != "planner" || len(c.SecuritySchemes) != 0 {
		t.Errorf("skills %+v schemes %+v", c.Skills, c.SecuritySchemes)
	}
	// The graph's description when the assistant has none.
	if c := e.card("chat-a"); c.Description != "Answers in one short message." {
		t.Errorf("chat card description %q", c.Description)
	}
	raw := e.get("/.well-known/agent-card.json?assistant_id=chat-a", http.StatusOK)
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil || top["url"] != nil || top["name"] != "Chat" {
		t.Errorf("well-known card %s (%v): want the chat card without a top-level url", raw, err)
	}
	if raw := e.get("/.well-known/agent-card.json", http.StatusOK); !strings.Contains(string(raw), `"name":"Chat"`) {
		t.Errorf("card without assistant_id %s: want the first assistant's", raw)
	}
	e.get("/.well-known/agent-card.json?assistant_id=nobody", http.StatusNotFound)
	e.get("/a2a/nobody/.well-known/agent-card.json", http.StatusNotFound)
	e.authOn = true
	if c := e.card("chat-a"); len(c.SecuritySchemes) != 2 || len(c.SecurityRequirements) != 2 {
		t.Errorf("with keys on: schemes %+v requirements %+v", c.SecuritySchemes, c.SecurityRequirements)
	}
}

func (e *env) get(path string, status int) []byte {
	e.t.Helper()
	resp, err := e.hc.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		e.t.Fatalf("GET %s: %d %s; want %d", path, resp.StatusCode, b, status)
	}
	return b
}

// A blocking send returns the task completed, with the answer as its
// status message and artifact and the exchange as its history; the
// context is a thread whose run the wire marked.
func TestSendBlocking(t *testing.T) {
	for _, v0 := range []bool{false, true} {
		e := newEnv(t)
		c := e.client("chat-a", v0)
		task := send(t, c, userText("hello", ""))
		if task.Status.State != a2a.TaskStateCompleted || text(task.Status.Message) != Answer {
			t.Fatalf("v0=%v: task %+v message %q", v0, task.Status, text(task.Status.Message))
		}
		if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 || task.Artifacts[0].Parts[0].Text() != Answer {
			t.Errorf("v0=%v: artifacts %+v", v0, task.Artifacts)
		}
		if len(task.History) != 2 || task.History[0].Role != a2a.MessageRoleUser || text(task.History[0]) != "hello" || text(task.History[1]) != Answer {
			t.Errorf("v0=%v: history %+v", v0, task.History)
		}
		rs, err := e.db.ListRuns(context.Background(), DefaultTenant, task.ContextID, db.RunQuery{Limit: 10})
		if err != nil || len(rs) != 1 || rs[0].Metadata[mdSource] != source || !strings.HasPrefix(string(task.ID), rs[0].ID) {
			t.Errorf("v0=%v: runs of context %s: %+v %v", v0, task.ContextID, rs, err)
		}
		got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.History) != 2 {
			t.Errorf("v0=%v: GetTask %+v %v", v0, got, err)
		}
		one := 1
		got, err = c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &one})
		if err != nil || len(got.History) != 1 || text(got.History[0]) != Answer {
			t.Errorf("v0=%v: GetTask historyLength 1: %+v %v", v0, got, err)
		}
	}
}

// A stream starts with the task, streams the answer as artifact chunks,
// then the answer whole and the final status, and ends.
func TestStream(t *testing.T) {
	e := newEnv(t)
	c := e.client("chat-a", false)
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: userText("hello", "")}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) < 4 {
		t.Fatalf("events %d: %+v", len(evs), evs)
	}
	first, ok := evs[0].(*a2a.Task)
	if !ok || len(first.History) != 1 || text(first.History[0]) != "hello" {
		t.Fatalf("first event %#v: want the task with the message", evs[0])
	}
	var chunks strings.Builder
	var whole string
	for _, ev := range evs[1 : len(evs)-1] {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			if a.TaskID != first.ID {
				t.Errorf("artifact of task %s; want %s", a.TaskID, first.ID)
			}
			if a.LastChunk {
				whole = a.Artifact.Parts[0].Text()
				continue
			}
			chunks.WriteString(a.Artifact.Parts[0].Text())
		}
	}
	if chunks.String() != Answer || whole != Answer {
		t.Errorf("chunks %q whole %q; want %q", chunks.String(), whole, Answer)
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || last.Status.State != a2a.TaskStateCompleted || text(last.Status.Message) != Answer {
		t.Errorf("last event %#v", evs[len(evs)-1])
	}
}

// The planner's questions come as input-required, each with the question
// as text and its payload and schema as data; plain text answers a
// choice and a review, a data part answers the form, an answer that does
// not fit is asked again with why, and the task completes. A finished
// task takes no more messages.
func TestPlannerThroughInputRequired(t *testing.T) {
	e := newEnv(t)
	c := e.client("planner-a", false)
	task := send(t, c, userText("Organise our team offsite", ""))
	id := task.ID
	ask := func(what string, m *a2a.Message) *a2a.Task {
		t.Helper()
		m.TaskID = id
		got := send(t, c, m)
		if got.ID != id {
			t.Fatalf("after %s: task %s; want the same task %s", what, got.ID, id)
		}
		return got
	}
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(task.Status.Message), planner.CityQuestion) || !strings.Contains(text(task.Status.Message), "1. Lisbon") {
		t.Fatalf("first answer %+v %q: want the city question", task.Status.State, text(task.Status.Message))
	}
	d := data(task.Status.Message)
	ints, _ := d["interrupts"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["response_schema"] == nil || ints[0].(map[string]any)["payload"] == nil {
		t.Fatalf("question data %v: want the interrupt's payload and schema", d)
	}
	got := ask("7", userText("7", ""))
	if got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(got.Status.Message), "7 is not an option") || !strings.Contains(text(got.Status.Message), planner.CityQuestion) {
		t.Fatalf("after 7: %v %q: want the question again with why", got.Status.State, text(got.Status.Message))
	}
	got = ask("lisbon", userText("lisbon", ""))
	if got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(got.Status.Message), "Number of people (people)") {
		t.Fatalf("after the city: %v %q: want the form", got.Status.State, text(got.Status.Message))
	}
	form := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"people": 12, "length": "2 days", "notes": "vegetarian food"}))
	got = ask("the form", form)
	if got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(got.Status.Message), "1. Find venues [venues]") {
		t.Fatalf("after the form: %v %q: want the plan", got.Status.State, text(got.Status.Message))
	}
	for i := 0; i < 4 && got.Status.State == a2a.TaskStateInputRequired; i++ {
		got = ask("yes", userText("yes", ""))
	}
	if got.Status.State != a2a.TaskStateCompleted || !strings.Contains(text(got.Status.Message), planner.DeliveredText) {
		t.Fatalf("after approving: %v %q", got.Status.State, text(got.Status.Message))
	}
	full, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
	if err != nil || full.Status.State != a2a.TaskStateCompleted || len(full.History) < 2 ||
		text(full.History[0]) != "Organise our team offsite" || !strings.Contains(text(full.History[len(full.History)-1]), planner.DeliveredText) {
		t.Fatalf("GetTask %+v %v", full, err)
	}
	_, err = c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userText("and again", id)})
	if !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a message to the completed task: %v; want UnsupportedOperation", err)
	}
}

// Cancelling a working task stops its run: the task is canceled, and a
// second cancel is refused.
func TestCancelRunningTask(t *testing.T) {
	e := newEnv(t)
	c := e.client("slow-a", false)
	req := &a2a.SendMessageRequest{Message: userText("go slowly", ""), Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
	res, err := c.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State.Terminal() {
		t.Fatalf("returnImmediately answered %v", task.Status.State)
	}
	select {
	case <-e.slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow run did not start")
	}
	if got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("while it runs: %+v %v; want working", got, err)
	}
	_, err = c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userText("hurry", task.ID)})
	if !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a message to the working task: %v; want UnsupportedOperation", err)
	}
	got, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	run, err := e.db.GetRun(context.Background(), DefaultTenant, task.ContextID, strings.Split(string(task.ID), taskSep)[0])
	if err != nil || run.Status != db.RunInterrupted {
		t.Errorf("the run after cancel: %+v %v; want interrupted", run, err)
	}
	if _, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("second cancel: %v; want TaskNotCancelable", err)
	}
	var first a2a.Event
	for ev, err := range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err == nil {
			first = ev
		} else if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("subscribe to the canceled task: %v; want UnsupportedOperation", err)
		}
		break
	}
	if first != nil {
		t.Errorf("subscribe to the canceled task streamed %#v", first)
	}
}

// A message without a context starts a new one (a new thread); a
// message naming a context starts a new task on its thread, whose
// history starts after the earlier task's.
func TestContexts(t *testing.T) {
	e := newEnv(t)
	c := e.client("chat-a", false)
	a := send(t, c, userText("one", ""))
	b := send(t, c, userText("two", ""))
	if a.ContextID == b.ContextID || a.ID == b.ID {
		t.Fatalf("two sends without a context share %s / %s", a.ContextID, a.ID)
	}
	for _, ctxID := range []string{a.ContextID, b.ContextID} {
		if _, err := e.db.GetThread(context.Background(), DefaultTenant, ctxID); err != nil {
			t.Errorf("context %s has no thread: %v", ctxID, err)
		}
	}
	m := userText("three", "")
	m.ContextID = a.ContextID
	third := send(t, c, m)
	if third.ContextID != a.ContextID || third.ID == a.ID || len(third.History) != 2 || text(third.History[0]) != "three" {
		t.Errorf("a second task on context %s: %+v", a.ContextID, third)
	}
	// A client's own context ID names a new thread.
	m = userText("four", "")
	m.ContextID = "my-context"
	if got := send(t, c, m); got.ContextID != "my-context" {
		t.Errorf("context %s; want my-context", got.ContextID)
	}
}

// Every refusal has the specification's error and says why.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	c := e.client("chat-a", false)
	done := send(t, c, userText("hello", ""))
	ctx := context.Background()
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(strings.Replace(string(done.ID), "-", "0", 1))}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("a task ID with another run: %v", err)
	}
	// Another agent does not see this agent's task.
	if _, err := e.client("planner-a", false).GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the task through another agent: %v", err)
	}
	m := userText("hi", done.ID)
	m.ContextID = "elsewhere"
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "belongs to context") {
		t.Errorf("task/context mismatch: %v", err)
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("hi", "nope")}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("message to an unknown task: %v", err)
	}
	file := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("see"), a2a.NewFileURLPart("https://example.com/a.pdf", "application/pdf"))
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: file}); !errors.Is(err, a2a.ErrUnsupportedContentType) || !strings.Contains(err.Error(), "text and data parts only") {
		t.Errorf("file part: %v", err)
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("hi", ""), Config: &a2a.SendMessageConfig{AcceptedOutputModes: []string{"image/png"}}}); !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Errorf("image-only output: %v", err)
	}
	if _, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 500}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("ListTasks with a page too large: %v", err)
	}
	if _, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: done.ID, ID: "x"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("an unknown push config: %v", err)
	}
	// A protocol version the agent does not serve.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/a2a/chat-a", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}`))
	req.Header.Set("A2A-Version", "2.0")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"code":-32009`) || !strings.Contains(string(b), `"id":7`) {
		t.Errorf("A2A-Version 2.0: %s", b)
	}
	// An unknown assistant's endpoint is not found.
	resp, err = e.hc.Post(e.srv.URL+"/a2a/nobody", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown assistant: %d", resp.StatusCode)
	}
}

// A push config with the first message is kept with the task's run, so
// the run that ends is notified at once; configs set later are listed,
// read and deleted; each push carries the task and the client's token
// and authorization; a URL the outbound guard refuses is refused.
func TestPushConfigs(t *testing.T) {
	e := newEnv(t)
	c := e.client("chat-a", false)
	ctx := context.Background()
	first := &a2a.PushConfig{ID: "p1", URL: "https://hooks.example.com/a", Token: "tok-1", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "sekret"}}
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("hello", ""), Config: &a2a.SendMessageConfig{PushConfig: first}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	root, thread, _ := splitTaskID(task.ID)
	run, err := e.db.GetRun(ctx, DefaultTenant, thread, root)
	if err != nil {
		t.Fatal(err)
	}
	pushes, err := e.h.Pushes(ctx, DefaultTenant, run)
	if err != nil || len(pushes) != 1 {
		t.Fatalf("pushes %+v %v", pushes, err)
	}
	p := pushes[0]
	var body struct {
		Task a2a.Task `json:"task"`
	}
	if err := json.Unmarshal(p.Body, &body); err != nil || body.Task.ID != task.ID || body.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("push body %s (%v)", p.Body, err)
	}
	if p.URL != first.URL || p.Headers["X-A2A-Notification-Token"] != "tok-1" || p.Headers["Authorization"] != "Bearer sekret" {
		t.Errorf("push %+v", p)
	}
	if _, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "p2", URL: "https://hooks.example.com/b"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	if got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "p2"}); err != nil || got.URL != "https://hooks.example.com/b" {
		t.Errorf("get p2 %+v %v", got, err)
	}
	if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "p1"}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("delete the first message's config: %v", err)
	}
	if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "p2"}); err != nil {
		t.Errorf("delete p2: %v", err)
	}
	if pushes, _ := e.h.Pushes(ctx, DefaultTenant, run); len(pushes) != 1 {
		t.Errorf("after delete: %d pushes", len(pushes))
	}
	e.h.CheckPushURL = func(context.Context, string) error { return errors.New("a private address") }
	_, err = c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: "http://10.0.0.1/x"})
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "private address") {
		t.Errorf("a refused URL: %v", err)
	}
}

// A task waiting for an answer can be cancelled: it is canceled, takes
// no more messages, and its context takes a new task (which starts over).
func TestCancelWaitingTask(t *testing.T) {
	e := newEnv(t)
	c := e.client("planner-a", false)
	ctx := context.Background()
	task := send(t, c, userText("Organise our team offsite", ""))
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %v", task.Status.State)
	}
	m := userText("something else", "")
	m.ContextID = task.ContextID
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), string(task.ID)) {
		t.Errorf("a new task while one waits: %v; want invalid params naming the waiting task", err)
	}
	got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("GetTask after cancel: %+v %v", got, err)
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("lisbon", task.ID)}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("answering the cancelled task: %v", err)
	}
	next := send(t, c, m)
	if next.ID == task.ID || next.ContextID != task.ContextID || len(next.History) == 0 || text(next.History[0]) != "something else" {
		t.Errorf("a new task on the context: %+v", next)
	}
	if old, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil || old.Status.State != a2a.TaskStateCanceled {
		t.Errorf("the cancelled task after the next: %+v %v", old, err)
	}
}
