package a2aapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/trellis-agents/trellis/apps/planner"
)

// a2a-go's client over the REST binding the card names: a blocking send,
// the planner's question answered on the task, a stream, GetTask,
// ListTasks, and a task that is not found is the binding's 404.
func TestRESTBinding(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rest := func(assistant string) *a2aclient.Client {
		t.Helper()
		var iface []*a2a.AgentInterface
		for _, i := range e.card(assistant).SupportedInterfaces {
			if i.ProtocolBinding == a2a.TransportProtocolHTTPJSON {
				iface = append(iface, i)
			}
		}
		c, err := a2aclient.NewFromEndpoints(ctx, iface, a2aclient.WithRESTTransport(e.hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := rest("planner-a")
	task := send(t, c, userText("Organise our team offsite", ""))
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(task.Status.Message), planner.CityQuestion) {
		t.Fatalf("send over REST: %v %q", task.Status.State, text(task.Status.Message))
	}
	got := send(t, c, userText("lisbon", task.ID))
	if got.ID != task.ID || !strings.Contains(text(got.Status.Message), "Number of people (people)") {
		t.Fatalf("the answer over REST: %v %q", got.Status.State, text(got.Status.Message))
	}
	read, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || read.ID != task.ID || read.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask over REST: %+v %v", read, err)
	}
	list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("ListTasks over REST: %+v %v", list, err)
	}
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("an unknown task over REST: %v", err)
	}
	chat := rest("chat-a")
	var evs []a2a.Event
	for ev, err := range chat.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: userText("hello", "")}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if _, first := evs[0].(*a2a.Task); !first || !ok || last.Status.State != a2a.TaskStateCompleted || text(last.Status.Message) != Answer {
		t.Errorf("the stream over REST: %d events, first %T, last %#v", len(evs), evs[0], evs[len(evs)-1])
	}
	resp, err := e.hc.Get(e.srv.URL + "/a2a/nobody/rest/tasks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown assistant's REST route: %d; want 404", resp.StatusCode)
	}
}
