package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/runs"
)

// until polls cond every 20 ms for up to 30 s and fails the test if it
// never holds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// Two servers on one PostgreSQL with limits.max_concurrent_runs 2 share
// the tenant's two slots: of four blocking runs created through both, two
// run and two stay pending while their jobs are tried and held back;
// when one run ends, exactly one more starts.
func TestConcurrentRunLimitAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	url, _, _ := pgSchema(t, "limits")
	var blocked atomic.Int32
	cfg := Config{Database: url, DataDir: t.TempDir(), Limits: config.Limits{MaxConcurrentRuns: 2}, ShutdownGrace: 200 * time.Millisecond}
	r1, r2 := start(t, cfg, &blocked), start(t, cfg, &blocked)
	var ids []string
	for i, r := range []*running{r1, r2, r1, r2} {
		th := fmt.Sprintf("t%d", i)
		run, err := r.s.svc.Create(ctx, r.s.enqueue, runs.CreateRequest{
			Tenant: api.DefaultTenant, ThreadID: th, AssistantID: "echo", CreateThread: true,
			Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["block"]}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	d := r1.s.st.db
	running := func() (n int, which []int) {
		for i, id := range ids {
			run, err := d.GetRun(ctx, api.DefaultTenant, fmt.Sprintf("t%d", i), id)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status == "running" {
				n++
				which = append(which, i)
			}
		}
		return n, which
	}
	until(t, "two runs block", func() bool { return blocked.Load() == 2 })
	// The held-back runs' jobs must have been tried again since (by
	// whichever replica picked them up).
	held := func() int64 { return r1.s.heldAtLimit.Load() + r2.s.heldAtLimit.Load() }
	h := held()
	until(t, "the pending runs are held back again", func() bool { return held() >= h+4 })
	if n, _ := running(); n != 2 || blocked.Load() != 2 {
		t.Fatalf("%d runs running, %d blocking; want 2 of 4 with a limit of 2 on two replicas", n, blocked.Load())
	}

	// End one running run: one pending run takes its slot, no more.
	_, which := running()
	first := which[0]
	if _, err := d.RequestCancel(ctx, api.DefaultTenant, fmt.Sprintf("t%d", first), ids[first], "interrupt"); err != nil {
		t.Fatal(err)
	}
	r1.s.svc.Cancel(ids[first], "interrupt")
	until(t, "a third run blocks", func() bool { return blocked.Load() == 3 })
	h = held()
	until(t, "the last run is held back again", func() bool { return held() >= h+2 })
	if n, _ := running(); n != 2 || blocked.Load() != 3 {
		t.Errorf("after one run ended: %d running, %d blocked in all; want 2 running and 3 blocked", n, blocked.Load())
	}
}

// Two servers sharing a Redis share a tenant's request rate: the burst
// spent through one leaves nothing through the other (each has its own
// SQLite file, and a key of the same tenant).
func TestRequestRateSharedThroughRedis(t *testing.T) {
	redis := "redis://" + testenv.RedisAddr(t)
	tenant := "rate-" + uuid.NewString()
	var clients []client
	for range 2 {
		file := filepath.Join(t.TempDir(), "t.db")
		key := mkKey(t, file, tenant)
		r := start(t, Config{Database: file, Redis: redis, DataDir: t.TempDir(), Limits: config.Limits{RequestsPerSecond: 0.01, Burst: 2}}, nil)
		clients = append(clients, client{t: t, base: r.url, key: key})
	}
	for i, c := range clients {
		if code, body, _ := c.do("POST", "/threads/count", "", `{}`); code != 200 {
			t.Fatalf("request %d within the shared burst: %d %s", i, code, body)
		}
	}
	for i, c := range clients {
		if code, body, hdr := c.do("POST", "/threads/count", "", `{}`); code != 429 || hdr.Get("Retry-After") == "" {
			t.Errorf("server %d over the shared rate: %d %s", i, code, body)
		}
	}
}
