package putbatch

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
)

func entry(id string) checkpoint.Entry {
	return checkpoint.Entry{Checkpoint: checkpoint.Checkpoint{ID: id}}
}

func TestPrepare(t *testing.T) {
	ref := checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: "0"}
	var outs []checkpoint.Ref
	ps, err := Prepare(context.Background(), ref, []checkpoint.Entry{entry("1"), entry("2")}, func(out checkpoint.Ref, e checkpoint.Entry) (string, error) {
		outs = append(outs, out)
		return "p" + e.Checkpoint.ID, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0] != "p1" || ps[1] != "p2" {
		t.Errorf("prepared %q, want [p1 p2]", ps)
	}
	want := []checkpoint.Ref{{ThreadID: "t", Namespace: "ns", ID: "1"}, {ThreadID: "t", Namespace: "ns", ID: "2"}}
	if len(outs) != 2 || outs[0] != want[0] || outs[1] != want[1] {
		t.Errorf("prepare saw %v, want %v", outs, want)
	}
}

func TestPrepareRefuses(t *testing.T) {
	never := func(checkpoint.Ref, checkpoint.Entry) (int, error) {
		t.Error("prepare was called for a refused batch")
		return 0, nil
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	ref := checkpoint.Ref{ThreadID: "t"}
	cases := []struct {
		name    string
		ctx     context.Context
		ref     checkpoint.Ref
		entries []checkpoint.Entry
		want    string
	}{
		{"done context", done, ref, []checkpoint.Entry{entry("1")}, "context canceled"},
		{"empty thread", context.Background(), checkpoint.Ref{}, []checkpoint.Entry{entry("1")}, "thread ID is empty"},
		{"empty batch", context.Background(), ref, nil, "the batch is empty"},
		{"empty ID", context.Background(), ref, []checkpoint.Entry{entry("")}, "ID of checkpoint 0 is empty"},
		{"IDs not growing", context.Background(), ref, []checkpoint.Entry{entry("2"), entry("1")}, "does not sort after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := Prepare(c.ctx, c.ref, c.entries, never)
			if err == nil || !strings.Contains(err.Error(), c.want) || ps != nil {
				t.Errorf("Prepare = %v, %v; want nil and an error containing %q", ps, err, c.want)
			}
		})
	}
}

func TestPrepareStopsAtTheFirstError(t *testing.T) {
	bad := errors.New("bad entry")
	calls := 0
	ps, err := Prepare(context.Background(), checkpoint.Ref{ThreadID: "t"}, []checkpoint.Entry{entry("1"), entry("2"), entry("3")}, func(_ checkpoint.Ref, e checkpoint.Entry) (int, error) {
		calls++
		if e.Checkpoint.ID == "2" {
			return 0, bad
		}
		return 1, nil
	})
	if !errors.Is(err, bad) || ps != nil || calls != 2 {
		t.Errorf("Prepare = %v, %v after %d calls; want nil, the entry's error, 2 calls", ps, err, calls)
	}
}
