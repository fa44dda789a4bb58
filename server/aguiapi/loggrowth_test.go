package aguiapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// converse runs turns of the chat graph on one thread, the whole history
// sent each time as AG-UI clients do, and returns the bytes the last
// run logged by event name.
func converse(t testing.TB, e *env, thread string, turns int) map[string]int {
	t.Helper()
	var history []Message
	for i := range turns {
		history = append(history, user(fmt.Sprintf("u%d", i), fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 20))))
		e.run("chat-a", RunAgentInput{ThreadID: thread, RunID: fmt.Sprintf("r%d", i), Messages: history})
		history = append(history, Message{ID: fmt.Sprintf("a%d", i), Role: "assistant", Content: json.RawMessage(`"` + Answer + `"`)})
	}
	ctx := context.Background()
	last, err := e.db.ListRuns(ctx, DefaultTenant, thread, db.RunQuery{Limit: 1})
	if err != nil || len(last) != 1 {
		t.Fatalf("runs %v %v", last, err)
	}
	evs, err := e.db.ReadEvents(ctx, DefaultTenant, last[0].ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	bytes := map[string]int{}
	for _, ev := range evs {
		bytes[ev.Event] += len(ev.Data)
		bytes[""] += len(ev.Data)
	}
	return bytes
}

// The wire's step events do not carry the thread's state: on a thread of
// 20 messages the run logs no tasks events, and its steps events stay
// small and hold none of the history.
func TestStepEventsCarryNoState(t *testing.T) {
	e := newEnv(t, 0)
	converse(t, e, "t1", 10)
	ctx := context.Background()
	last, err := e.db.ListRuns(ctx, DefaultTenant, "t1", db.RunQuery{Limit: 1})
	if err != nil || len(last) != 1 {
		t.Fatalf("runs %v %v", last, err)
	}
	evs, err := e.db.ReadEvents(ctx, DefaultTenant, last[0].ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, ev := range evs {
		switch ev.Event {
		case runs.ModeTasks:
			t.Errorf("a tasks event was logged: %.200s", ev.Data)
		case runs.ModeSteps:
			steps++
			if len(ev.Data) > 256 || strings.Contains(string(ev.Data), "message 0") {
				t.Errorf("a steps event of %d bytes carries state: %.300s", len(ev.Data), ev.Data)
			}
		}
	}
	if steps != 2 {
		t.Errorf("%d steps events; want the bot task's start and end", steps)
	}
	var msgs struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(e.threadValues("t1"), &msgs); err != nil || len(msgs.Messages) != 20 {
		t.Fatalf("the thread has %d messages (%v); want 20", len(msgs.Messages), err)
	}
}

// BenchmarkLogBytesPerRun reports the bytes the run of the 10th turn of a
// conversation (a thread of 20 messages after it) logs, with the wire
// asking for the tasks mode (before) and the steps mode (now).
func BenchmarkLogBytesPerRun(b *testing.B) {
	for _, mode := range []string{runs.ModeTasks, runs.ModeSteps} {
		b.Run(mode, func(b *testing.B) {
			saved := streamModes
			streamModes = []string{runs.ModeMessages, runs.ModeUpdates, runs.ModeValues, mode, runs.ModeCustom}
			defer func() { streamModes = saved }()
			var got map[string]int
			i := 0
			for b.Loop() {
				e := newEnv(b, 0)
				got = converse(b, e, fmt.Sprintf("t%d", i), 10)
				i++
			}
			b.ReportMetric(float64(got[""]), "bytes/run")
			b.ReportMetric(float64(got[mode]), mode+"-bytes/run")
			b.ReportMetric(float64(got[runs.ModeValues]), "values-bytes/run")
		})
	}
}
