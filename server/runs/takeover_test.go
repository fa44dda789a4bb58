package runs

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// A run taken over logs, before anything else it streams, the IDs of the
// messages its dead worker had begun streaming and that are not saved.
func TestTakeoverDiscardsPartialMessages(t *testing.T) {
	svc, d := titleEnv(t, nil)
	ctx := context.Background()
	in := json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`)
	run, err := svc.Create(ctx, nil, CreateRequest{Tenant: "acme", ThreadID: "t", AssistantID: "bot-a",
		Kwargs: Kwargs{Input: in, StreamMode: []string{"messages-tuple", "values"}}, CreateThread: true})
	if err != nil {
		t.Fatal(err)
	}
	// A worker claims it, streams part of a message and dies.
	_, dead, err := d.ClaimRun(ctx, "acme", run.ID, "dead", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AppendEvents(ctx, dead, []db.Event{
		{Event: "metadata", Data: json.RawMessage(`{}`)},
		{Event: "messages", Data: json.RawMessage(`[{"type":"AIMessageChunk","id":"m-cut","content":"Su"},{"langgraph_node":"bot"}]`)},
	}); err != nil {
		t.Fatal(err)
	}
	expired, err := d.ExpiredLeases(ctx, time.Now().Add(time.Minute), 0)
	if err != nil || len(expired) != 1 {
		t.Fatalf("expired leases %v, %v", expired, err)
	}
	lease, err := d.TakeOver(ctx, expired[0], "alive", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := d.GetRun(ctx, "acme", "t", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Execute(ctx, lease, claimed); err != nil {
		t.Fatal(err)
	}
	evs, err := d.ReadEvents(ctx, "acme", run.ID, 2, 0)
	if err != nil || len(evs) < 2 {
		t.Fatalf("events after the takeover %v, %v", evs, err)
	}
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Event)
	}
	if evs[0].Event != "metadata" || evs[1].Event != EventDiscarded {
		t.Fatalf("the taken-over run logged %v, want metadata then %s first", names, EventDiscarded)
	}
	var disc Discarded
	if err := json.Unmarshal(evs[1].Data, &disc); err != nil || len(disc.MessageIDs) != 1 || disc.MessageIDs[0] != "m-cut" || disc.Reason == "" {
		t.Fatalf("discarded %s", evs[1].Data)
	}
	if r, _ := d.GetRun(ctx, "acme", "t", run.ID); r.Status != db.RunSuccess {
		t.Fatalf("run status %s after the takeover", r.Status)
	}
	// A run that was never taken over logs no such event.
	say(t, svc, "u", "hello")
	runs, _ := d.ListRuns(ctx, "acme", "u", db.RunQuery{})
	all, _ := d.ReadEvents(ctx, "acme", runs[0].ID, 0, 0)
	for _, ev := range all {
		if ev.Event == EventDiscarded {
			t.Fatal("a run never taken over logged discarded messages")
		}
	}
}
