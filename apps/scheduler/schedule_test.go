package scheduler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/tool"
)

func TestOperations(t *testing.T) {
	cases := []struct {
		name string
		op   func(*Schedule) (*Schedule, error)
		err  string         // wanted error text; empty: success
		want map[int][3]int // id → day, start, host after success
	}{
		{name: "place in a free run", op: func(s *Schedule) (*Schedule, error) { return s.Place(20, 2, 1) }, want: map[int][3]int{20: {2, 1, 0}}},
		{name: "place inside a study hall embeds", op: func(s *Schedule) (*Schedule, error) { return s.Place(23, 3, 5) }, want: map[int][3]int{23: {3, 5, 3}}},
		{name: "place over an event conflicts", op: func(s *Schedule) (*Schedule, error) { return s.Place(20, 1, 2) }, err: `Monday slots 2-3 is taken by "Linear algebra lecture" (#1) at Monday slots 1-2 and "Algebra exercises, set 4" (#10) at Monday slots 3-4`},
		{name: "place over an embedded task conflicts", op: func(s *Schedule) (*Schedule, error) { return s.Place(23, 3, 6) }, err: `taken by "Study hall" (#3) at Wednesday slots 5-7 and "Read history chapter 5" (#12)`},
		{name: "place past the day's end", op: func(s *Schedule) (*Schedule, error) { return s.Place(21, 1, 7) }, err: "slots 7-9 do not fit in a day (slots 1-8"},
		{name: "place an event", op: func(s *Schedule) (*Schedule, error) { return s.Place(1, 2, 1) }, err: "is an event; only tasks are placed"},
		{name: "place a placed task", op: func(s *Schedule) (*Schedule, error) { return s.Place(10, 2, 1) }, err: "already placed at Monday slots 3-4; use move"},
		{name: "unknown item", op: func(s *Schedule) (*Schedule, error) { return s.Place(99, 2, 1) }, err: "there is no item #99"},
		{name: "move a locked lab", op: func(s *Schedule) (*Schedule, error) { return s.Move(2, 1, 7) }, err: "is locked and cannot be moved"},
		{name: "move a host with a guest", op: func(s *Schedule) (*Schedule, error) { return s.Move(3, 4, 5) }, err: "holds the embedded task"},
		{name: "move into an embeddable event", op: func(s *Schedule) (*Schedule, error) { return s.Move(11, 5, 3) }, want: map[int][3]int{11: {5, 3, 5}}},
		{name: "move out of an embedding", op: func(s *Schedule) (*Schedule, error) { return s.Move(12, 5, 8) }, want: map[int][3]int{12: {5, 8, 0}}},
		{name: "swap equal durations", op: func(s *Schedule) (*Schedule, error) { return s.Swap(10, 11) }, want: map[int][3]int{10: {2, 7, 0}, 11: {1, 3, 0}}},
		{name: "swap unequal durations", op: func(s *Schedule) (*Schedule, error) { return s.Swap(10, 12) }, err: "must have the same duration"},
		{name: "swap with a locked lab", op: func(s *Schedule) (*Schedule, error) { return s.Swap(2, 3) }, err: "cannot swap, nothing changed: \"Physics lab\" (#2) is locked"},
		{name: "batch into each other's old slots", op: func(s *Schedule) (*Schedule, error) {
			return s.BatchMove([]Move{{ID: 10, Day: 4, Start: 3}, {ID: 4, Day: 1, Start: 3}})
		}, want: map[int][3]int{10: {4, 3, 0}, 4: {1, 3, 0}}},
		{name: "batch with one conflict moves nothing", op: func(s *Schedule) (*Schedule, error) {
			return s.BatchMove([]Move{{ID: 10, Day: 4, Start: 5}, {ID: 11, Day: 1, Start: 1}})
		}, err: "nothing was moved: move 2 of 2"},
		{name: "batch moving one item twice", op: func(s *Schedule) (*Schedule, error) {
			return s.BatchMove([]Move{{ID: 10, Day: 4, Start: 5}, {ID: 10, Day: 4, Start: 7}})
		}, err: "moved twice"},
		{name: "unplace an embedded task", op: func(s *Schedule) (*Schedule, error) { return s.Unplace(12) }, want: map[int][3]int{12: {0, 0, 0}}},
		{name: "unplace a pending task", op: func(s *Schedule) (*Schedule, error) { return s.Unplace(20) }, err: "already pending"},
		{name: "unplace an event", op: func(s *Schedule) (*Schedule, error) { return s.Unplace(1) }, err: "events cannot be unplaced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Sample()
			before := s.Clone()
			out, err := c.op(s)
			if d := cmp.Diff(before, s); d != "" {
				t.Fatalf("the operation changed its input:\n%s", d)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			changes := s.Diff(out)
			if len(changes) != len(c.want) {
				t.Fatalf("changed %d items, want %d: %+v", len(changes), len(c.want), changes)
			}
			for id, w := range c.want {
				it := out.Items[id]
				if got := [3]int{it.Day, it.Start, it.Host}; got != w {
					t.Errorf("item #%d at day/start/host %v, want %v", id, got, w)
				}
			}
		})
	}
}

// testScope is the data scope the store tests use.
const testScope = "t"

func openStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "schedule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if seeded, err := st.Seed(context.Background(), testScope, Sample()); err != nil || !seeded {
		t.Fatalf("seed: %v, %v", seeded, err)
	}
	return st
}

func TestStoreAppliesDiffsOncePerCall(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	if again, err := st.Seed(ctx, testScope, Sample()); err != nil || again {
		t.Fatalf("second seed: %v, %v; want no-op", again, err)
	}
	swap := func(s *Schedule) (*Schedule, error) { return s.Swap(10, 11) }
	res, err := st.Apply(ctx, testScope, "swap", "call_1", swap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res, `moved "Algebra exercises, set 4" (#10) from Monday slots 3-4 to Tuesday slots 7-8`) {
		t.Errorf("result = %q", res)
	}
	// The same call again (a re-run after a crash): the saved result, no
	// second swap.
	again, err := st.Apply(ctx, testScope, "swap", "call_1", swap)
	if err != nil || again != res {
		t.Fatalf("re-run = %q, %v; want the first result", again, err)
	}
	s, err := st.Load(ctx, testScope)
	if err != nil {
		t.Fatal(err)
	}
	if it := s.Items[10]; it.Day != 2 || it.Start != 7 {
		t.Errorf("item 10 at %d/%d after one swap, want 2/7", it.Day, it.Start)
	}
	// A failing operation writes nothing.
	if _, err := st.Apply(ctx, testScope, "place", "call_2", func(s *Schedule) (*Schedule, error) { return s.Place(20, 1, 1) }); err == nil {
		t.Fatal("a conflicting place succeeded")
	}
	log, err := st.ChangeLog(ctx, testScope)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].CallID != "call_1" || log[0].Before.Start != 3 || log[0].After.Start != 7 {
		t.Errorf("change log = %+v; want the swap's two rows only", log)
	}
	if _, err := st.Apply(ctx, testScope, "place", "call_2", func(s *Schedule) (*Schedule, error) { return s.Place(20, 1, 7) }); err != nil {
		t.Fatalf("the failed call's ID must stay usable: %v", err)
	}
}

func TestToolsOverTheStore(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	tools := map[string]tool.Tool{}
	for _, tl := range Tools(st, testScope, nil) {
		tools[tl.Info().Name] = tl
	}
	if len(tools) != 13 {
		t.Fatalf("%d tools, want 13", len(tools))
	}
	for name, want := range map[string]bool{"get_overview": true, "query_range": true, "find_free": true, "list_tasks": true, "get_task_info": true, DiagnoseName: true,
		"place": false, "move": false, "swap": false, "batch_move": false, "unplace": false, UpsertClassName: false, OptimizeName: false} {
		if got := tools[name].Info().ReadOnly; got != want {
			t.Errorf("%s read-only = %v, want %v", name, got, want)
		}
	}
	call := func(name, args string) (string, error) {
		return tools[name].Call(ctx, json.RawMessage(args))
	}
	checks := []struct{ tool, args, want string }{
		{"get_overview", `{}`, "Pending tasks (4):"},
		{"get_overview", `{}`, `"Study hall" (#3) at Wednesday slots 5-7`},
		{"query_range", `{"day":3,"from":5,"to":6}`, `slot 6: "Study hall" (#3), "Read history chapter 5" (#12) embedded in #3`},
		{"find_free", `{"duration":2,"day":1}`, "free: Monday (day 1) slots 7-8"},
		{"find_free", `{"duration":2}`, "free: Tuesday (day 2) slots 1-2"},
		{"find_free", `{"duration":4,"day":1}`, "No free run of 4 slots"},
		{"list_tasks", `{"status":"pending","category":"cs"}`, `#21 "Programming assignment 3": task, 3 slots, pending`},
		{"get_task_info", `{"id":3}`, `holds embedded "Read history chapter 5" (#12)`},
		{"place", `{"id":21,"day":4,"start":5}`, "Done: placed"},
		{"batch_move", `{"moves":[{"id":10,"day":4,"start":3},{"id":4,"day":1,"start":3}]}`, "Done: moved"},
	}
	for _, c := range checks {
		got, err := call(c.tool, c.args)
		if err != nil || !strings.Contains(got, c.want) {
			t.Errorf("%s(%s) = %q, %v; want it to contain %q", c.tool, c.args, got, err, c.want)
		}
	}
	if got, _ := call("find_free", `{"duration":1,"day":1}`); strings.Contains(got, "Monday (day 1) slots 3") {
		t.Errorf("find_free still offers a taken run: %q", got)
	}
	for _, bad := range []struct{ tool, args string }{
		{"query_range", `{"day":9}`},
		{"find_free", `{"duration":0}`},
		{"list_tasks", `{"status":"done"}`},
		{"get_task_info", `{"id":77}`},
		{"place", `{"id":"x"}`},
	} {
		if _, err := call(bad.tool, bad.args); !tool.IsArgumentError(err) {
			t.Errorf("%s(%s): err = %v, want an argument error", bad.tool, bad.args, err)
		}
	}
	if _, err := call("move", `{"id":2,"day":1,"start":7}`); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("moving the locked lab: err = %v", err)
	}
}
