package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// countingStore counts the logs read.
type countingStore struct {
	fakeStore
	reads map[string]int
}

func (c *countingStore) ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error) {
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[runID]++
	return c.fakeStore.ReadEvents(ctx, tenant, runID, after, limit)
}

// longThread is a thread of n runs, each adding a question and a reply
// and logging the whole message list (as a values event does), a custom
// event and a reasoning chunk; the last run is still running.
func longThread(n int) (*countingStore, db.Thread) {
	f := &countingStore{}
	var msgs []string
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		msgs = append(msgs, fmt.Sprintf(`{"id":"h%d","type":"human","content":"question %d %s"}`, i, i, strings.Repeat("x", 200)),
			fmt.Sprintf(`{"id":"a%d","type":"ai","content":"answer %d %s"}`, i, i, strings.Repeat("y", 400)))
		f.add(id, fmt.Sprintf(`{"input":{"messages":[{"type":"human","content":"question %d"}]}}`, i),
			"values", `{"messages":[`+strings.Join(msgs[:len(msgs)-1], ",")+`]}`,
			"custom", `{"kind":"step_started","title":"look it up"}`,
			"messages", fmt.Sprintf(`[{"id":"a%d","additional_kwargs":{"reasoning_content":"think %d"}},{}]`, i, i),
			"values", `{"messages":[`+strings.Join(msgs, ",")+`]}`)
		f.runs[i].UpdatedAt = f.runs[i].CreatedAt.Add(time.Second)
	}
	f.runs[n-1].Status = db.RunRunning
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[` + strings.Join(msgs, ",") + `]}`)}
	return f, th
}

// A refresh of a long thread's transcript reads the logs of its finished
// runs once: the second build reads only the run under way, and a run
// whose status changed is read again; the transcript is the same as one
// built without keeping anything.
func TestBuildKeepsFinishedRunsLogs(t *testing.T) {
	f, th := longThread(50)
	ctx := context.Background()
	first, err := Build(ctx, f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range f.reads {
		if n != 1 {
			t.Fatalf("run %s's log was read %d times in one build", id, n)
		}
	}
	f.reads = nil
	second, err := Build(ctx, f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.reads, map[string]int{"r49": 1}) {
		t.Errorf("the second build read %v, want only the running run r49", f.reads)
	}
	if !reflect.DeepEqual(first, second) {
		t.Error("the transcript built from kept logs differs from the first")
	}
	// The running run finishes: its log is read once more, then kept.
	f.runs[49].Status, f.runs[49].UpdatedAt = db.RunSuccess, f.runs[49].UpdatedAt.Add(time.Second)
	for range 2 {
		f.reads = nil
		if _, err := Build(ctx, f, nil, "x", th); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.reads) != 0 {
		t.Errorf("after the run finished a build read %v", f.reads)
	}
	// Another store holding the same run IDs is not served this one's logs.
	g, th2 := longThread(2)
	g.events["r00"][0].Data = json.RawMessage(`{"messages":[{"id":"other"}]}`)
	if _, err := Build(ctx, g, nil, "x", th2); err != nil || g.reads["r00"] != 1 {
		t.Errorf("another store's run r00 was read %d times (%v)", g.reads["r00"], err)
	}
}

// The cache is bounded: past its size the least recently used logs go,
// and a log larger than the bound is not kept.
func TestLogCacheIsBounded(t *testing.T) {
	c := newLogCache(3 * sizeOf([]logItem{{text: "abc"}}))
	key := func(i int) logKey { return logKey{run: fmt.Sprint(i)} }
	for i := range 5 {
		c.put(key(i), []logItem{{text: "abc"}})
		c.get(key(0)) // 0 stays the most recent
	}
	if c.len() != 3 {
		t.Fatalf("%d logs kept, want 3", c.len())
	}
	for i, want := range []bool{true, false, false, true, true} {
		if _, ok := c.get(key(i)); ok != want {
			t.Errorf("log %d kept: %v, want %v", i, ok, want)
		}
	}
	c.put(key(9), []logItem{{text: strings.Repeat("z", 1000)}})
	if _, ok := c.get(key(9)); ok {
		t.Error("a log larger than the bound was kept")
	}
}

// BenchmarkBuild50Runs is a refresh of a 50-run thread's transcript:
// "kept" with the finished runs' logs kept from the first build,
// "uncached" reading and parsing every run's log each time (as before).
func BenchmarkBuild50Runs(b *testing.B) {
	ctx := context.Background()
	for _, kept := range []bool{false, true} {
		name := "uncached"
		if kept {
			name = "kept"
		}
		b.Run(name, func(b *testing.B) {
			saved := logs
			defer func() { logs = saved }()
			logs = newLogCache(0)
			if kept {
				logs = newLogCache(CacheBytes)
			}
			f, th := longThread(50)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(ctx, f, nil, "x", th); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
