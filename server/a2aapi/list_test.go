package a2aapi

import (
	"context"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// ListTasks lists this agent's tasks, newest first: across contexts or in
// one, filtered by state, in pages whose token leads to the next, with
// history trimmed and artifacts only when asked; another agent's tasks
// are not listed, and a token it did not give is refused.
func TestListTasks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	chat, planner := e.client("chat-a", false), e.client("planner-a", false)
	var done []*a2a.Task
	for _, s := range []string{"one", "two", "three"} {
		done = append(done, send(t, chat, userText(s, "")))
	}
	// A second task in the first one's context.
	m := userText("four", "")
	m.ContextID = done[0].ContextID
	done = append(done, send(t, chat, m))
	asking := send(t, planner, userText("Organise our team offsite", ""))

	all, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if all.TotalSize != 4 || len(all.Tasks) != 4 || all.NextPageToken != "" {
		t.Fatalf("all tasks: total %d, %d listed, next %q; want the 4 chat tasks", all.TotalSize, len(all.Tasks), all.NextPageToken)
	}
	if all.Tasks[0].ID != done[3].ID || all.Tasks[3].ID != done[0].ID {
		t.Errorf("order %s … %s; want the newest (%s) first", all.Tasks[0].ID, all.Tasks[3].ID, done[3].ID)
	}
	for _, v := range all.Tasks {
		if v.ID == asking.ID {
			t.Errorf("the planner's task is listed by the chat agent")
		}
		if len(v.Artifacts) != 0 || len(v.History) < 2 {
			t.Errorf("task %s: %d artifacts, %d messages; want none without includeArtifacts, and the history", v.ID, len(v.Artifacts), len(v.History))
		}
	}
	one := 1
	page, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 3, HistoryLength: &one, IncludeArtifacts: true})
	if err != nil || len(page.Tasks) != 3 || page.NextPageToken == "" || len(page.Tasks[0].History) != 1 || len(page.Tasks[0].Artifacts) != 1 {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 3, PageToken: page.NextPageToken})
	if err != nil || len(rest.Tasks) != 1 || rest.Tasks[0].ID != done[0].ID || rest.NextPageToken != "" || rest.TotalSize != 4 {
		t.Fatalf("second page: %+v %v", rest, err)
	}
	inCtx, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: done[0].ContextID})
	if err != nil || len(inCtx.Tasks) != 2 || inCtx.Tasks[0].ID != done[3].ID || inCtx.Tasks[1].ID != done[0].ID {
		t.Fatalf("one context's tasks: %+v %v", inCtx, err)
	}
	waiting, err := planner.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired})
	if err != nil || len(waiting.Tasks) != 1 || waiting.Tasks[0].ID != asking.ID {
		t.Fatalf("the planner's waiting tasks: %+v %v", waiting, err)
	}
	if none, err := planner.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}); err != nil || none.TotalSize != 0 || len(none.Tasks) != 0 {
		t.Errorf("the planner's completed tasks: %+v %v", none, err)
	}
	if _, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{PageToken: "bogus"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("a bad page token: %v", err)
	}
}

// ListTasks without contextId finds this agent's tasks by its runs, also
// in a thread another agent ran last, and pages by a token naming the
// last task shown: a task created between two pages does not make the
// next page repeat one.
func TestListTasksAcrossThreadsAndPages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	chat, planner := e.client("chat-a", false), e.client("planner-a", false)
	one := send(t, chat, userText("one", ""))
	two := send(t, chat, userText("two", ""))
	m := userText("Organise our team offsite", "")
	m.ContextID = one.ContextID
	send(t, planner, m) // the planner runs on the first task's thread last

	all, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if all.TotalSize != 2 || len(all.Tasks) != 2 || all.Tasks[0].ID != two.ID || all.Tasks[1].ID != one.ID {
		t.Fatalf("all tasks: total %d, %+v; want %s then %s", all.TotalSize, all.Tasks, two.ID, one.ID)
	}

	first, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1})
	if err != nil || len(first.Tasks) != 1 || first.Tasks[0].ID != two.ID || first.NextPageToken == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	three := send(t, chat, userText("three", "")) // added while the client pages
	second, err := chat.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1, PageToken: first.NextPageToken})
	if err != nil || len(second.Tasks) != 1 || second.Tasks[0].ID != one.ID || second.NextPageToken != "" || second.TotalSize != 3 {
		t.Fatalf("second page after %s was added: %+v %v; want %s alone, the last page, of 3", three.ID, second, err, one.ID)
	}
}
