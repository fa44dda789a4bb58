package queue

import (
	"context"
	"testing"
	"time"
)

// A sample enqueued twice (a retried hook, two replicas) is scored once;
// bad samples are refused.
func TestOnlineSampleIsScoredOnce(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		scored := make(chan OnlineJob, 10)
		cfg := b.open(t)
		cfg.Advance = func(context.Context, string, string) (Result, error) { return Result{}, nil }
		cfg.Online = func(_ context.Context, j OnlineJob) error { scored <- j; return nil }
		q := start(t, cfg)
		job := OnlineJob{Tenant: "t", ThreadID: "th", RunID: "r", Key: "k"}
		for range 2 {
			if err := q.EnqueueOnline(context.Background(), job); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case got := <-scored:
			if got != job {
				t.Fatalf("scored %+v, want %+v", got, job)
			}
		case <-time.After(wait):
			t.Fatal("the sample was not scored")
		}
		if err := q.EnqueueOnline(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-scored:
			t.Fatalf("scored again: %+v", got)
		case <-time.After(500 * time.Millisecond):
		}
		if err := q.EnqueueOnline(context.Background(), OnlineJob{Tenant: "t", RunID: "r", Key: "k"}); err == nil {
			t.Error("a sample without its thread was accepted")
		}
	})
}
