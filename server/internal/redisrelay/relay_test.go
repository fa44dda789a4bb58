package redisrelay

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func connect(t *testing.T) *goredis.Client {
	t.Helper()
	addr := testenv.RedisAddr(t)
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialerRetries: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		testenv.Unreachable(t, "Redis at "+addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// replica is a broker connected to the others through a relay.
type replica struct {
	b         *runs.Broker
	r         *Relay
	mu        sync.Mutex
	cancels   []string
	delivered int // event batches relayed to this replica
}

func newReplica(t *testing.T, c *goredis.Client, prefix, origin string) *replica {
	t.Helper()
	rp := &replica{b: runs.NewBroker()}
	r, err := New(context.Background(), c, prefix, origin, Handler{
		Deliver: func(runID string, evs []db.Event) {
			rp.mu.Lock()
			rp.delivered++
			rp.mu.Unlock()
			rp.b.Deliver(runID, evs)
		},
		Ended: rp.b.Ended,
		Cancel: func(runID, action string) bool {
			rp.mu.Lock()
			defer rp.mu.Unlock()
			rp.cancels = append(rp.cancels, runID+":"+action)
			return true
		},
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	rp.r = r
	rp.b.SetRelay(r, time.Second)
	return rp
}

// subscribed waits until channel has n subscribers in Redis.
func subscribed(t *testing.T, c *goredis.Client, channel string, n int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		m, err := c.PubSubNumSub(context.Background(), channel).Result()
		if err == nil && m[channel] >= n {
			return
		}
	}
	t.Fatalf("%s never had %d subscribers", channel, n)
}

func TestRelayCarriesEventsEndsAndCancels(t *testing.T) {
	c := connect(t)
	prefix := "trellis_test_relay_" + rand.Text()[:8]
	a := newReplica(t, c, prefix, "a")
	b := newReplica(t, c, prefix, "b")

	subA := a.b.Subscribe("run1") // the executing replica's own follower
	defer subA.Close()
	// A follower on the other replica: live events only (the log is empty).
	joined := make(chan []int64, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		var got []int64
		for ev, err := range runs.Join(ctx, &fakeLog{}, b.b, "t", "run1", 0, func(context.Context) (bool, error) { return false, nil }) {
			if err != nil {
				break
			}
			got = append(got, ev.Seq)
		}
		joined <- got
	}()
	subscribed(t, c, prefix+":run:run1", 2)

	a.b.Publish("run1", db.Event{RunID: "run1", Seq: 1, Event: "values", Data: json.RawMessage(`{"n":1}`)}, db.Event{RunID: "run1", Seq: 2, Event: "values"})
	a.b.End("run1")
	select {
	case got := <-joined:
		if fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("the other replica's follower got %v, want [1 2]", got)
		}
	case <-ctx.Done():
		t.Fatal("the other replica's follower never heard the run end")
	}
	if ctx.Err() != nil {
		t.Fatal("the follower ended by its deadline, not by the relayed end")
	}
	a.mu.Lock()
	if a.delivered != 0 {
		t.Errorf("a replica was relayed its own events %d times", a.delivered)
	}
	a.mu.Unlock()

	subscribed(t, c, prefix+":cancel", 2)
	a.r.Cancel("run9", "rollback")
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		got := fmt.Sprint(b.cancels)
		b.mu.Unlock()
		if got == "[run9:rollback]" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("cancels received by the other replica: %s", got)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cancels) != 0 {
		t.Fatalf("a replica received its own cancel: %v", a.cancels)
	}

	// The last subscriber leaving unsubscribes the run's channel.
	subA.Close()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m, _ := c.PubSubNumSub(context.Background(), prefix+":run:run1").Result()
		if m[prefix+":run:run1"] == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the run's channel is still subscribed after its subscribers left")
		}
	}
}

// A relay whose Redis is gone loses live delivery, not events: Join reads
// the log on its poll and ends when the run has ended.
func TestJoinFallsBackToTheLog(t *testing.T) {
	c := connect(t)
	prefix := "trellis_test_relay_" + rand.Text()[:8]
	a := newReplica(t, c, prefix, "a")
	a.r.Close() // nothing relayed from here on
	a.b.SetRelay(a.r, 50*time.Millisecond)
	log := &fakeLog{}
	ended := false
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		time.Sleep(100 * time.Millisecond)
		log.add(db.Event{RunID: "r", Seq: 1, Event: "values"}, db.Event{RunID: "r", Seq: 2, Event: "values"})
		mu.Lock()
		ended = true
		mu.Unlock()
	}()
	var got []int64
	for ev, err := range runs.Join(ctx, log, a.b, "t", "r", 0, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return ended, nil
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Seq)
	}
	if fmt.Sprint(got) != "[1 2]" || ctx.Err() != nil {
		t.Fatalf("Join without a relay yielded %v (ctx %v), want [1 2] before the deadline", got, ctx.Err())
	}
}

type fakeLog struct {
	mu  sync.Mutex
	evs []db.Event
}

func (f *fakeLog) add(evs ...db.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evs = append(f.evs, evs...)
}

func (f *fakeLog) ReadEvents(_ context.Context, _, _ string, after int64, limit int) ([]db.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []db.Event
	for _, ev := range f.evs {
		if ev.Seq > after && (limit == 0 || len(out) < limit) {
			out = append(out, ev)
		}
	}
	return out, nil
}
