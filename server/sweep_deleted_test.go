package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/api"
)

// A thread's job that runs after the thread was deleted finds nothing to
// start: scheduling its delayed runs is not an error (it was logged as a
// failed job before).
func TestDelayedScheduleOfADeletedThread(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	if err := r.s.scheduleDelayed(context.Background(), nil, api.DefaultTenant, "0c9a4f4e-7d51-4f3e-9a51-2c2d4b1e8a90"); err != nil {
		t.Fatalf("a deleted thread's job: %v, want nothing to do", err)
	}
}
