package scheduler

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// A task class's excluded days keep its tasks off them: place and move
// refuse, and the class cannot exclude a day one of its tasks stands on.
func TestClassExcludedDays(t *testing.T) {
	s, err := Sample().UpsertClass(Class{Name: "math", ExcludedDays: []int{2, 2, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Classes["math"]; !slices.Equal(c.ExcludedDays, []int{2, 5}) {
		t.Errorf("excluded days %v, want [2 5]", c.ExcludedDays)
	}
	if _, err := s.Place(20, 2, 1); err == nil || !strings.Contains(err.Error(), `class "math", which excludes Tuesday`) {
		t.Errorf("placing math on Tuesday: %v", err)
	}
	if _, err := s.Place(20, 3, 1); err != nil {
		t.Errorf("placing math on Wednesday: %v", err)
	}
	if _, err := s.Move(10, 5, 1); err == nil || !strings.Contains(err.Error(), "excludes Friday") {
		t.Errorf("moving math to Friday: %v", err)
	}
	for _, c := range []struct {
		class Class
		want  string
	}{
		{Class{Name: "math", ExcludedDays: []int{1}}, "stands on Monday"},
		{Class{Name: "cs", ExcludedDays: []int{9}}, "outside the schedule"},
		{Class{Name: "cs", ExcludedDays: []int{1, 2, 3, 4, 5}}, "exclude every day"},
		{Class{Name: " "}, "no name"},
	} {
		if _, err := Sample().UpsertClass(c.class); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("UpsertClass(%+v) = %v, want %q", c.class, err, c.want)
		}
	}
}

// The three modes: first_full places the pending tasks and keeps the
// rest, global_reopt may move placed tasks too, local_adjust touches only
// what it is given; all respect excluded days and never overlap.
func TestOptimizeModes(t *testing.T) {
	base, err := Sample().UpsertClass(Class{Name: "physics", ExcludedDays: []int{1, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	first, note, err := base.Optimize(FirstFull, nil, nil)
	if err != nil || note != "" {
		t.Fatalf("first_full: %v %q", err, note)
	}
	for id, it := range base.Items {
		if it.Placed() && first.Items[id] != it {
			t.Errorf("first_full moved placed item #%d", id)
		}
		if it.Kind == KindTask && !first.Items[id].Placed() {
			t.Errorf("first_full left #%d pending", id)
		}
	}
	if d := first.Items[22].Day; d != 2 && d != 5 {
		t.Errorf("the physics set is on day %d; its class allows only Tuesday and Friday", d)
	}
	valid(t, first)

	global, _, err := first.Optimize(GlobalReopt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	valid(t, global)
	if global.Items[12] != first.Items[12] || global.Items[2] != first.Items[2] {
		t.Error("global_reopt moved an embedded task or a locked event")
	}

	local, _, err := first.Optimize(LocalAdjust, []int{20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	valid(t, local)
	for id, it := range first.Items {
		if id != 20 && local.Items[id] != it {
			t.Errorf("local_adjust of #20 moved #%d", id)
		}
	}
	if _, _, err := first.Optimize(LocalAdjust, nil, nil); err == nil {
		t.Error("local_adjust without items or days should fail")
	}
	if _, _, err := first.Optimize("sideways", nil, nil); err == nil || !strings.Contains(err.Error(), "first_full") {
		t.Errorf("a bad mode: %v", err)
	}
}

// valid checks that no two placed items overlap unless one is embedded in
// the other, and that no task stands on an excluded day.
func valid(t *testing.T, s *Schedule) {
	t.Helper()
	for _, a := range s.Items {
		if err := s.allowed(a); a.Placed() && err != nil {
			t.Error(err)
		}
		for _, b := range s.Items {
			if a.ID < b.ID && overlaps(a, b) && a.Host != b.ID && b.Host != a.ID {
				t.Errorf("#%d and #%d overlap", a.ID, b.ID)
			}
		}
	}
}

// The class tool writes through the store (confirmed like other writes,
// applied once per call ID), the classes persist, and optimize_schedule
// works on them. DeleteScope then removes the scope's rows, classes
// included, and DeleteConversation the thread's snapshots too.
func TestClassToolPersistsAndDeleteConversation(t *testing.T) {
	ctx := apps.WithScope(context.Background(), testScope)
	st := openStore(t)
	tools := map[string]tool.Tool{}
	for _, tl := range Tools(st, testScope, Sample) {
		tools[tl.Info().Name] = tl
	}
	if tools[UpsertClassName].Info().ReadOnly || tools[OptimizeName].Info().ReadOnly {
		t.Fatal("the class and optimiser tools must be write tools (confirmed)")
	}
	out, err := tools[UpsertClassName].Call(ctx, json.RawMessage(`{"name":"cs","excluded_days":[1,2,3]}`))
	if err != nil || !strings.Contains(out, `task class "cs" saved (excluded: Monday, Tuesday, Wednesday)`) {
		t.Fatalf("upsert: %q, %v", out, err)
	}
	out, err = tools[OptimizeName].Call(ctx, json.RawMessage(`{"mode":"first_full"}`))
	if err != nil || !strings.HasPrefix(out, "Done:") {
		t.Fatalf("optimize: %q, %v", out, err)
	}
	sch, err := st.Load(ctx, testScope)
	if err != nil {
		t.Fatal(err)
	}
	if c := sch.Classes["cs"]; !slices.Equal(c.ExcludedDays, []int{1, 2, 3}) {
		t.Errorf("stored class %+v", c)
	}
	if d := sch.Items[21].Day; d < 4 {
		t.Errorf("the cs assignment is on day %d, which its class excludes", d)
	}
	if out, _ := tools["get_overview"].Call(ctx, json.RawMessage(`{}`)); !strings.Contains(out, "- cs: never on Monday, Tuesday, Wednesday") {
		t.Errorf("the overview does not show the class:\n%s", out)
	}

	saver := checkpoint.NewMemory()
	g, err := NewGraph(Script(), st, testScope, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, planexec.Input(Request), graph.WithCheckpointer(saver), graph.WithThread(testScope)); err != nil && !strings.Contains(err.Error(), "interrupt") {
		t.Fatal(err)
	}
	snapshots := func() int {
		n := 0
		for range saver.List(ctx, checkpoint.Ref{ThreadID: testScope}, checkpoint.ListOptions{}) {
			n++
		}
		return n
	}
	if snapshots() == 0 {
		t.Fatal("the run left no snapshots to delete")
	}
	if err := DeleteConversation(ctx, st, saver, testScope); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, testScope); err != ErrNoSchedule {
		t.Errorf("after DeleteConversation, Load = %v; want ErrNoSchedule", err)
	}
	if n := snapshots(); n != 0 {
		t.Errorf("%d snapshots left", n)
	}
	if again, err := st.DeleteScope(ctx, testScope); err != nil || again {
		t.Errorf("deleting again: %v, %v; want nothing deleted", again, err)
	}
}

// recording remembers the tool names of every request.
type recording struct {
	llm.Model
	mu    sync.Mutex
	tools [][]string
}

func (r *recording) note(req *llm.Request) {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	r.mu.Lock()
	r.tools = append(r.tools, names)
	r.mu.Unlock()
}

func (r *recording) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r.note(req)
	return r.Model.Generate(ctx, req)
}

func (r *recording) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	r.note(req)
	return r.Model.Stream(ctx, req)
}

// With tool groups, a step's model request carries the read tools, the
// active groups and tools_add/tools_remove, never the inactive groups.
func TestToolGroupsNarrowTheRequest(t *testing.T) {
	ctx := apps.WithScope(context.Background(), testScope)
	st := openStore(t)
	rec := &recording{Model: Script()}
	g, err := build(Config{Model: rec, Scope: testScope, Seed: Sample, ToolGroups: true}, st)
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("w")}
	res, err := g.Invoke(ctx, planexec.Input(Request), opts...)
	for i := 0; len(res.Interrupts) > 0 && i < 10; i++ {
		answers := map[string]any{}
		for _, in := range res.Interrupts {
			switch {
			case isAsk(in):
				answers[in.ID] = planexec.FormAnswer(map[string]any{"max_slots": 6, "first": "math"})
			case isReview(in):
				answers[in.ID] = planexec.ApprovePlan()
			default:
				answers[in.ID] = tool.Approve()
			}
		}
		res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	}
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("run: %v, %v", res.Status, err)
	}
	steps := 0
	for _, names := range rec.tools {
		if !slices.Contains(names, planexec.AddPackToolName) {
			continue
		}
		steps++
		for _, want := range []string{"get_overview", "place", DiagnoseName, planexec.RemovePackToolName} {
			if !slices.Contains(names, want) {
				t.Errorf("a step request lacks %s: %v", want, names)
			}
		}
		for _, not := range []string{OptimizeName, UpsertClassName} {
			if slices.Contains(names, not) {
				t.Errorf("a step request offers %s from an inactive group: %v", not, names)
			}
		}
	}
	if steps == 0 {
		t.Fatal("no step request offered tools_add")
	}
	if _, err := build(Config{Model: rec, Scope: testScope, Seed: Sample, ToolGroups: true, ActiveGroups: []string{"nope"}}, st); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a bad group: %v", err)
	}
}

// trellis.yaml's apps.scheduler reaches the app: tool groups and seed
// classes; an unknown key is an error naming it.
func TestEntrySettings(t *testing.T) {
	ctx := apps.WithScope(context.Background(), "s")
	db := t.TempDir() + "/app.db"
	app, err := Entry().Open(ctx, apps.Env{Model: Script(), Database: db, Scope: "s",
		Settings: json.RawMessage(`{"tool_groups": true, "active_groups": ["edit"], "classes": [{"name": "cs", "excluded_days": [5]}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	app.Outcome(ctx, graph.State{}) // reads the week, seeding the scope
	st, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch, err := st.Load(ctx, "s")
	if err != nil || !slices.Equal(sch.Classes["cs"].ExcludedDays, []int{5}) {
		t.Errorf("the seeded week's classes: %+v, %v", sch, err)
	}
	if _, err := Entry().Open(ctx, apps.Env{Model: Script(), Database: db, Settings: json.RawMessage(`{"groups": true}`)}); err == nil || !strings.Contains(err.Error(), "groups") {
		t.Errorf("an unknown key: %v", err)
	}
	if _, err := Entry().Open(ctx, apps.Env{Model: Script(), Database: db, Settings: json.RawMessage(`{"classes": [{"name": "x", "excluded_days": [9]}]}`)}); err == nil || !strings.Contains(err.Error(), "outside the schedule") {
		t.Errorf("a bad class: %v", err)
	}
}
