package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
)

// cronOf decodes a cron answer.
func cronOf(t *testing.T, body string) struct {
	ID   string     `json:"cron_id"`
	Next *time.Time `json:"next_run_date"`
} {
	t.Helper()
	var c struct {
		ID   string     `json:"cron_id"`
		Next *time.Time `json:"next_run_date"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.ID == "" {
		t.Fatalf("cron answer %s: %v", body, err)
	}
	return c
}

// A thread cron every minute, driven by the loop's clock: each slot fires
// once however often the loop ticks in it, its run runs on the thread with
// the payload, and no slot fires after end_time.
func TestThreadCronFiresOncePerSlotUntilEndTime(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	const th = "6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a91"
	if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+th+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	end := time.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339Nano)
	code, body, _ := post(t, r.url+"/threads/"+th+"/runs/crons",
		`{"assistant_id":"echo","schedule":"* * * * *","input":{"log":["tick"]},"metadata":{"team":"ops"},"end_time":"`+end+`"}`)
	if code != 200 || !strings.Contains(body, `"thread_id":"`+th+`"`) || !strings.Contains(body, `"schedule":"* * * * *"`) {
		t.Fatalf("create cron: %d %s", code, body)
	}
	c := cronOf(t, body)
	if c.Next == nil || c.Next.Second() != 0 || !c.Next.After(time.Now().Add(-time.Second)) {
		t.Fatalf("next_run_date %v, want the next minute", c.Next)
	}
	ctx := context.Background()
	slot := *c.Next
	if fired, err := r.s.crons.tick(ctx, slot.Add(-time.Second)); err != nil || len(fired) != 0 {
		t.Fatalf("tick before the slot fired %d runs (%v)", len(fired), err)
	}
	fired, err := r.s.crons.tick(ctx, slot.Add(time.Second))
	if err != nil || len(fired) != 1 {
		t.Fatalf("tick in the slot fired %d runs (%v), want 1", len(fired), err)
	}
	run := fired[0]
	if run.ThreadID != th || run.Metadata["cron_id"] != c.ID || run.Metadata["team"] != "ops" {
		t.Errorf("cron run %+v", run)
	}
	if again, err := r.s.crons.tick(ctx, slot.Add(2*time.Second)); err != nil || len(again) != 0 {
		t.Fatalf("a second tick in the same slot fired %d runs (%v), want 0", len(again), err)
	}
	if got := waitRun(t, r.s.st.db, th, run.ID); got.Status != db.RunSuccess {
		t.Fatalf("cron run: %s %s", got.Status, got.Error)
	}
	// The next slot fires once; it is the last before end_time.
	fired, err = r.s.crons.tick(ctx, slot.Add(time.Minute+time.Second))
	if err != nil || len(fired) != 1 {
		t.Fatalf("tick in the second slot fired %d runs (%v), want 1", len(fired), err)
	}
	waitRun(t, r.s.st.db, th, fired[0].ID)
	if later, err := r.s.crons.tick(ctx, slot.Add(10*time.Minute)); err != nil || len(later) != 0 {
		t.Fatalf("a tick after end_time fired %d runs (%v), want 0", len(later), err)
	}
	cr, err := r.s.st.db.GetCron(ctx, api.DefaultTenant, c.ID)
	if err != nil || !cr.NextRunAt.IsZero() {
		t.Errorf("after end_time: next %v (%v), want none", cr.NextRunAt, err)
	}
	runs, err := r.s.st.db.ListRuns(ctx, api.DefaultTenant, th, db.RunQuery{})
	if err != nil || len(runs) != 2 {
		t.Errorf("the thread has %d runs (%v), want 2", len(runs), err)
	}
	_, body, _ = get(t, r.url+"/threads/"+th+"/state")
	if !strings.Contains(body, `"echo tick"`) {
		t.Errorf("thread state after the cron runs: %s", body)
	}
}

// Slots missed while no replica ran fire once, not once each, even with
// two loops ticking at once.
func TestMissedSlotsFireOnce(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	code, body, _ := post(t, r.url+"/runs/crons", `{"assistant_id":"echo","schedule":"*/5 * * * *","input":{"log":["x"]},"on_run_completed":"keep"}`)
	if code != 200 || !strings.Contains(body, `"thread_id":null`) {
		t.Fatalf("create cron: %d %s", code, body)
	}
	c := cronOf(t, body)
	other := &cronLoop{s: r.s, fire: r.s.crons.fire} // a second replica's loop
	results := make(chan []db.Run, 2)
	var wg sync.WaitGroup
	for _, l := range []*cronLoop{r.s.crons, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := l.tick(context.Background(), c.Next.Add(3*time.Hour))
			if err != nil {
				t.Error(err)
			}
			results <- got
		}()
	}
	wg.Wait()
	close(results)
	var fired []db.Run
	for got := range results {
		fired = append(fired, got...)
	}
	if len(fired) != 1 {
		t.Fatalf("two loops ticking three hours late fired %d runs, want 1", len(fired))
	}
	cr, _ := r.s.st.db.GetCron(context.Background(), api.DefaultTenant, c.ID)
	if want := c.Next.Add(3*time.Hour + 5*time.Minute); !cr.NextRunAt.Equal(want) {
		t.Errorf("next slot after the late tick %v, want %v", cr.NextRunAt, want)
	}
	// A kept thread outlives its run.
	if got := waitRun(t, r.s.st.db, fired[0].ThreadID, fired[0].ID); got.Status != db.RunSuccess {
		t.Fatalf("stateless cron run: %s %s", got.Status, got.Error)
	}
	if _, err := r.s.st.db.GetThread(context.Background(), api.DefaultTenant, fired[0].ThreadID); err != nil {
		t.Errorf("the kept thread of a stateless cron run: %v", err)
	}
}

// A stateless cron's thread is deleted when its run ends (the default
// on_run_completed).
func TestStatelessCronDeletesItsThread(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	code, body, _ := post(t, r.url+"/runs/crons", `{"assistant_id":"echo","schedule":"0 * * * *","input":{"log":["x"]}}`)
	if code != 200 || !strings.Contains(body, `"on_run_completed":"delete"`) {
		t.Fatalf("create cron: %d %s", code, body)
	}
	c := cronOf(t, body)
	fired, err := r.s.crons.tick(context.Background(), c.Next.Add(time.Second))
	if err != nil || len(fired) != 1 {
		t.Fatalf("tick fired %d runs (%v), want 1", len(fired), err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := r.s.st.db.GetThread(context.Background(), api.DefaultTenant, fired[0].ThreadID)
		if errors.Is(err, db.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stateless cron run's thread was not deleted (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The cron routes over HTTP: bad input is a 4xx naming the field; search,
// count, update and delete in LangGraph's shapes; /info flags crons.
func TestCronRoutes(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	for body, want := range map[string]string{
		`{"assistant_id":"echo","schedule":"* * *"}`:                            `/schedule`,
		`{"assistant_id":"echo","schedule":"61 * * * *"}`:                       `/schedule`,
		`{"assistant_id":"echo","schedule":"* * * * *","timezone":"Mars/Base"}`: `/timezone`,
		`{"assistant_id":"echo","schedule":"* * * * *","end_time":"tomorrow"}`:  `/end_time`,
		`{"assistant_id":"echo","schedule":"* * * * *","stream_mode":"nope"}`:   `/stream_mode`,
		`{"assistant_id":"echo","schedule":"* * * * *","on_run_completed":"x"}`: `/on_run_completed`,
		`{"schedule":"* * * * *"}`:                                              `/assistant_id`,
	} {
		code, got, h := post(t, r.url+"/runs/crons", body)
		if code != 422 || !strings.Contains(got, want) || h.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want a 422 naming %s", body, code, got, want)
		}
	}
	if code, got, _ := post(t, r.url+"/runs/crons", `{"assistant_id":"nobody","schedule":"* * * * *"}`); code != 404 {
		t.Errorf("unknown assistant: %d %s", code, got)
	}
	if code, got, _ := post(t, r.url+"/threads/6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a99/runs/crons", `{"assistant_id":"echo","schedule":"* * * * *"}`); code != 404 {
		t.Errorf("missing thread: %d %s", code, got)
	}
	_, b1, _ := post(t, r.url+"/runs/crons", `{"assistant_id":"echo","schedule":"0 9 * * *","metadata":{"k":"a"}}`)
	_, b2, _ := post(t, r.url+"/runs/crons", `{"assistant_id":"echo","schedule":"0 10 * * *","metadata":{"k":"b"},"enabled":false}`)
	c1, c2 := cronOf(t, b1), cronOf(t, b2)
	if code, got, _ := post(t, r.url+"/runs/crons/count", `{"assistant_id":"echo"}`); code != 200 || got != "2" {
		t.Errorf("count: %d %s", code, got)
	}
	if code, got, _ := post(t, r.url+"/runs/crons/search", `{"metadata":{"k":"b"},"select":["cron_id","enabled","now"]}`); code != 200 || got != `[{"cron_id":"`+c2.ID+`","enabled":false}]` {
		t.Errorf("search: %d %s", code, got)
	}
	if code, got, _ := post(t, r.url+"/runs/crons/search", `{"enabled":true,"sort_by":"schedule"}`); code != 422 || !strings.Contains(got, "/sort_by") {
		t.Errorf("search by a bad sort: %d %s", code, got)
	}
	// PATCH: a new schedule counts the next slot from now; payload fields
	// replace the payload's.
	if code := patch(t, r.url+"/runs/crons/"+c1.ID, `{"schedule":"0 * * * *","input":{"log":["new"]},"metadata":{"x":1}}`); code != 200 {
		t.Fatalf("patch: %d", code)
	}
	cr, err := r.s.st.db.GetCron(context.Background(), api.DefaultTenant, c1.ID)
	if err != nil || cr.Schedule != "0 * * * *" || cr.NextRunAt.Minute() != 0 || !strings.Contains(string(cr.Payload), `"new"`) || cr.Metadata["k"] != "a" || cr.Metadata["x"] != 1.0 {
		t.Errorf("patched cron %+v (%v) payload %s", cr, err, cr.Payload)
	}
	if code := patch(t, r.url+"/runs/crons/"+c1.ID, `{"schedule":"every hour"}`); code != 422 {
		t.Errorf("patch with a bad schedule: %d", code)
	}
	if code := patch(t, r.url+"/runs/crons/nope", `{"enabled":true}`); code != 404 {
		t.Errorf("patch a missing cron: %d", code)
	}
	req, _ := http.NewRequest(http.MethodDelete, r.url+"/runs/crons/"+c1.ID, nil)
	for i, want := range []int{204, 404} {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("delete #%d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	if _, got, _ := get(t, r.url+"/info"); !strings.Contains(got, `"crons":true`) {
		t.Errorf("/info: %s", got)
	}
}
