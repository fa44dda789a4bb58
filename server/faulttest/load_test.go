package faulttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/tool"
)

// unit is one unit of work of a load client: one or more runs/wait calls
// through hc, the k-th of them to urls[(i+k)%len(urls)] (i counts the
// units of all clients, so any replica serves any call). It returns each
// call's latency, or what went wrong.
type unit func(hc *http.Client, urls []string, i int, thread string) ([]time.Duration, error)

// figures are what a load measured.
type figures struct {
	units   int             // units of work done
	calls   []time.Duration // every runs/wait call's latency, sorted
	each    []time.Duration // every unit's latency, sorted
	elapsed time.Duration
}

func (f figures) unitsPerSec() float64 { return float64(f.units) / f.elapsed.Seconds() }
func (f figures) callsPerSec() float64 { return float64(len(f.calls)) / f.elapsed.Seconds() }

func pct(d []time.Duration, p int) time.Duration { return d[len(d)*p/100].Round(time.Millisecond) }

// load runs do from clients concurrent clients, each starting units until
// d has passed (a unit started finishes); every unit must succeed.
func load(t *testing.T, urls []string, clients int, d time.Duration, prefix string, do unit) figures {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	var n atomic.Int64
	var mu sync.Mutex
	var f figures
	var bad atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			var calls, each []time.Duration
			for j := 0; time.Now().Before(stop); j++ {
				t0 := time.Now()
				lat, err := do(hc, urls, i+j, fmt.Sprintf("%s-%d-%d", prefix, i, j))
				if err != nil {
					if bad.Add(1) == 1 {
						t.Errorf("%s: %v", prefix, err)
					}
					continue
				}
				each = append(each, time.Since(t0))
				calls = append(calls, lat...)
				n.Add(1)
			}
			mu.Lock()
			f.calls = append(f.calls, calls...)
			f.each = append(f.each, each...)
			mu.Unlock()
		})
	}
	wg.Wait()
	f.elapsed = time.Since(start)
	f.units = int(n.Load())
	if bad.Load() > 0 {
		t.Errorf("%s: %d failed units", prefix, bad.Load())
	}
	if len(f.calls) == 0 {
		t.Fatalf("%s: no run answered", prefix)
	}
	slices.Sort(f.calls)
	slices.Sort(f.each)
	return f
}

// wait posts a runs/wait to url/threads/thread and returns the answer's
// JSON (its values, with "__interrupt__" when the run waits).
func wait(hc *http.Client, url, thread string, body any) (map[string]json.RawMessage, time.Duration, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	resp, err := hc.Post(url+"/threads/"+thread+"/runs/wait", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, 0, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	lat := time.Since(t0)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("runs/wait on %s: %d %s", thread, resp.StatusCode, out)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, 0, fmt.Errorf("runs/wait on %s: %w: %s", thread, err, out)
	}
	return v, lat, nil
}

// echo is one runs/wait of the one-node echo graph on a new thread.
func echo(hc *http.Client, urls []string, i int, thread string) ([]time.Duration, error) {
	v, lat, err := wait(hc, urls[i%len(urls)], thread, map[string]any{"assistant_id": "echo", "input": map[string]any{}, "if_not_exists": "create"})
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(v["steps"], []byte(`"echo"`)) {
		return nil, fmt.Errorf("echo on %s answered %s", thread, v["steps"])
	}
	return []time.Duration{lat}, nil
}

// plannerFlow is the scripted planner's whole conversation on a new
// thread, each turn one runs/wait: the request, then one command resume
// answering the interrupts that wait (the city, the form, the plan review,
// the booking's approval), until the run ends with the delivered summary.
// Consecutive turns go to different replicas.
func plannerFlow(hc *http.Client, urls []string, i int, thread string) ([]time.Duration, error) {
	body := map[string]any{"assistant_id": "planner", "input": map[string]any{}, "if_not_exists": "create"}
	var lats []time.Duration
	for turn := 0; ; turn++ {
		if turn == 10 {
			return nil, fmt.Errorf("planner on %s: still waiting after %d turns", thread, turn)
		}
		v, lat, err := wait(hc, urls[(i+turn)%len(urls)], thread, body)
		if err != nil {
			return nil, err
		}
		lats = append(lats, lat)
		raw, ok := v["__interrupt__"]
		if !ok {
			delivered := false
			for _, val := range v {
				delivered = delivered || bytes.Contains(val, []byte(strings.SplitN(planner.DeliveredText, ",", 2)[0]))
			}
			if !delivered {
				return nil, fmt.Errorf("planner on %s ended after %d turns without the delivered summary", thread, turn+1)
			}
			if turn < 4 {
				return nil, fmt.Errorf("planner on %s ended after %d turns, want the city, form, review and approval first", thread, turn+1)
			}
			return lats, nil
		}
		var ins []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &ins); err != nil || len(ins) == 0 {
			return nil, fmt.Errorf("planner on %s: __interrupt__ %s: %v", thread, raw, err)
		}
		answers := map[string]any{}
		for _, in := range ins {
			a, err := answer(in.Value)
			if err != nil {
				return nil, fmt.Errorf("planner on %s, turn %d: %w", thread, turn+1, err)
			}
			answers[in.ID] = a
		}
		body = map[string]any{"assistant_id": "planner", "command": map[string]any{"resume": answers}}
	}
}

// answer answers one of the planner's interrupts as a person accepting
// every proposal would: the first option, a form filled within its
// bounds, the plan approved, the booking approved.
func answer(value json.RawMessage) (any, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(value, &head); err != nil {
		return nil, fmt.Errorf("interrupt %s: %w", value, err)
	}
	switch head.Kind {
	case planexec.AskKind:
		var q planexec.Ask
		if err := json.Unmarshal(value, &q); err != nil {
			return nil, err
		}
		switch q.Mode {
		case planexec.AskText:
			return planexec.AskAnswer{Text: "as you see fit"}, nil
		case planexec.AskSelect:
			return planexec.ChoiceAnswer(q.Options[0]), nil
		case planexec.AskForm:
			values := map[string]any{}
			for _, f := range q.Fields {
				switch f.Type {
				case planexec.FieldNumber:
					n := 12.0
					if f.Max != nil && n > *f.Max {
						n = *f.Max
					}
					values[f.Key] = n
				case planexec.FieldSelect:
					values[f.Key] = f.Options[0]
				case planexec.FieldBoolean:
					values[f.Key] = false
				}
			}
			return planexec.FormAnswer(values), nil
		}
		return nil, fmt.Errorf("a question of mode %q", q.Mode)
	case planexec.ReviewKind:
		return planexec.ApprovePlan(), nil
	case tool.ApprovalKind:
		return tool.Approve(), nil
	}
	return nil, fmt.Errorf("an interrupt of kind %q: %s", head.Kind, value)
}

// Throughput of runs/wait with 50 clients on 1, 2 and 3 replicas of one
// PostgreSQL, and on one process on the embedded SQLite: the one-node echo
// graph (a unit is one runs/wait) and the scripted planner (a unit is its
// whole conversation, five runs/wait). Figures only: the replicas share
// this machine's two cores.
func TestThroughputByReplicas(t *testing.T) {
	c := newCluster(t)
	const clients = 50
	// A planner flow takes seconds under this load, so each client does
	// one or two in planFor; the window bounds the step's time.
	const echoFor, planFor = 8 * time.Second, 3 * time.Second
	report := func(db string, replicas int, graph string, f figures) {
		per := "—"
		if replicas > 0 {
			per = fmt.Sprintf("%.0f", f.callsPerSec()/float64(replicas))
		}
		t.Logf("FIGURES load: %s replicas=%d clients=%d graph=%s units=%d units/s=%.1f runs/s=%.0f per-replica=%s p50=%v p99=%v unit-p50=%v unit-p99=%v",
			db, max(replicas, 1), clients, graph, f.units, f.unitsPerSec(), f.callsPerSec(), per, pct(f.calls, 50), pct(f.calls, 99), pct(f.each, 50), pct(f.each, 99))
	}
	// One flow through each replica builds its planner app before the
	// clock runs.
	warmPlanner := func(urls []string, prefix string) {
		hc := &http.Client{Timeout: 30 * time.Second}
		defer hc.CloseIdleConnections()
		for i := range urls {
			if _, err := plannerFlow(hc, urls, i, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// measured is a load with the CPU time each part of it used, per
	// runs/wait call: where a run's cost goes as replicas are added.
	measured := func(db string, replicas int, graph string, urls []string, d time.Duration, prefix string, do unit) {
		before, err := c.cpuNow()
		if err != nil {
			t.Fatal(err)
		}
		f := load(t, urls, clients, d, prefix, do)
		after, err := c.cpuNow()
		if err != nil {
			t.Fatal(err)
		}
		report(db, replicas, graph, f)
		cpu, n := after.since(before), len(f.calls)
		t.Logf("FIGURES cpu: %s replicas=%d graph=%s runs=%d cpu-µs/run: replicas=%s pg-backends=%s pg-aux=%s redis=%s clients=%s total=%s",
			db, max(replicas, 1), graph, n, perRun(cpu.replicas, n), perRun(cpu.backends, n), perRun(cpu.pgAux, n),
			perRun(cpu.redis, n), perRun(cpu.clients, n), perRun(cpu.total(), n))
	}
	var urls []string
	for k, name := range []string{"r1", "r2", "r3"} {
		urls = append(urls, c.start(name))
		load(t, urls, clients, time.Second, fmt.Sprintf("warm%d", k), echo) // connections, assistants, caches
		measured("postgres", k+1, "echo", urls, echoFor, fmt.Sprintf("pg%d", k+1), echo)
		warmPlanner(urls[k:], fmt.Sprintf("warmp%d", k))
		measured("postgres", k+1, "planner", urls, planFor, fmt.Sprintf("pgp%d", k+1), plannerFlow)
	}
	for _, name := range []string{"r1", "r2", "r3"} {
		c.signal(name, 15) // SIGTERM
	}
	lite := []string{c.startWith("lite", filepath.Join(c.dir, "lite.db"))}
	load(t, lite, clients, time.Second, "warml", echo)
	measured("sqlite", 0, "echo", lite, echoFor, "lite", echo)
	warmPlanner(lite, "warmlp")
	measured("sqlite", 0, "planner", lite, planFor, "litep", plannerFlow)
}
