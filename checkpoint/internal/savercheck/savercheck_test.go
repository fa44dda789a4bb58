package savercheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type ref string

func (r ref) String() string { return string(r) }

func TestPrune(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		keep    int
		older   time.Duration
		run     bool
		wantErr string
	}{
		{"keep", ctx, 3, 0, true, ""},
		{"older", ctx, 0, time.Hour, true, ""},
		{"nothing", ctx, 0, 0, false, ""},
		{"negative keep", ctx, -1, 0, false, "p: prune: negative limit (keep latest -1, older than 0s)"},
		{"negative age", ctx, 1, -time.Second, false, "negative limit"},
		{"done", done, 3, 0, false, context.Canceled.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, err := Prune(c.ctx, "p", c.keep, c.older)
			if run != c.run || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("Prune = %v, %v; want %v and an error containing %q", run, err, c.run, c.wantErr)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	empty := errors.New("empty thread")
	if run, err := Remove(ctx, "p", ref("t/ns"), "t", empty, []string{"a", "b"}); !run || err != nil {
		t.Errorf("two IDs: %v, %v; want true, nil", run, err)
	}
	if run, err := Remove(ctx, "p", ref("t/ns"), "t", empty, nil); run || err != nil {
		t.Errorf("no IDs: %v, %v; want false, nil", run, err)
	}
	if _, err := Remove(ctx, "p", ref("t/ns"), "", empty, []string{"a"}); !errors.Is(err, empty) {
		t.Errorf("no thread: %v; want the empty-thread error", err)
	}
	if _, err := Remove(ctx, "p", ref("t/ns"), "t", empty, []string{"a", ""}); err == nil || err.Error() != "p: remove checkpoints of t/ns: an ID is empty" {
		t.Errorf("an empty ID: %v", err)
	}
}
