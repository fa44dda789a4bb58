package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/checkpoint"
	teval "github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/report"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// reportGraph answers each message with "you said: <message>", or, when
// broken is set, with "sorry" for messages that mention a refund.
func reportGraph(t *testing.T, broken bool) *graph.Graph {
	t.Helper()
	msgs := llm.NewMessagesKey("messages")
	b := graph.New(msgs)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		ms := msgs.Get(s)
		text := ms[len(ms)-1].Text()
		out := "you said: " + text
		if broken && strings.Contains(text, "refund") {
			out = "sorry"
		}
		return graph.Writes(graph.Append(msgs, llm.Assistant(out))), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The HTML report of an experiment compared with a baseline, in the
// browser: its plots draw, the per-case table lists every case, a failing
// case shows the evaluator's explanation, and axe finds nothing serious.
func TestBrowserEvalReport(t *testing.T) {
	ctx := context.Background()
	ds := &teval.Dataset{Name: "echo", Version: "1",
		Criteria: []teval.Criterion{{Evaluator: "contains", Params: []byte(`{"values":["you said"]}`)}},
		Cases: []teval.Case{
			{ID: "greeting", Input: teval.Input{Message: "hello"}},
			{ID: "refund", Tags: []string{"billing"}, Input: teval.Input{Message: "I want a refund"}},
			{ID: "weather", Input: teval.Input{Message: "is it sunny"}},
		}}
	run := func(name string, broken bool) *teval.Experiment {
		exp, err := (&teval.Runner{Target: &teval.GraphTarget{Graph: reportGraph(t, broken), Saver: checkpoint.NewMemory(), Label: "echo (" + name + ")"}, Experiment: name, Repeat: 2}).Run(ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		return exp
	}
	base := run("baseline", false)
	cur := run("candidate", true)
	cur.Comparison = teval.Compare(base, cur, 1)
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(f, cur, "http://127.0.0.1:8123"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.do("opening the report", chromedp.Navigate("file://"+path))
	b.waitFor("the report", `document.getElementById('cases')`)
	if n := eval[int](b, `[...document.querySelectorAll('svg.hist')].filter((s) => s.getBoundingClientRect().width > 0 && s.querySelectorAll('rect').length > 0).length`); n == 0 {
		t.Error("no score distribution drew")
	}
	if n := eval[int](b, `document.querySelectorAll('svg.cmp g.case').length`); n != 3 {
		t.Errorf("the baseline comparison draws %d cases, want 3", n)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#cases tr[data-case]')].map((r) => r.dataset.case + ':' + r.className)`); strings.Join(got, ",") != "greeting:pass,refund:fail,weather:pass" {
		t.Errorf("the per-case table: %q", got)
	}
	why := eval[string](b, `document.querySelector('#cases tr[data-case=refund] .why').textContent`)
	if !strings.Contains(why, "contains") || !strings.Contains(why, "you said") {
		t.Errorf("the failing case's explanation: %q", why)
	}
	if got := eval[string](b, `document.body.innerText`); !strings.Contains(got, "1 regression(s) refund") {
		t.Errorf("the comparison does not name the regression: %s", got)
	}
	b.screenshot("eval-report")
	b.checkA11y("eval report")
}
