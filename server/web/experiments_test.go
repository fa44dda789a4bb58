package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// draftGraph is a planner that claims a booking at once, asking nothing:
// every planner case fails on it, so an experiment on it regresses.
func draftGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "claims the offsite is booked without asking", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Output, error) {
			msg := llm.Assistant("Your offsite is booked.")
			msg.ID = fmt.Sprintf("msg_draft_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("reply")
		b.AddEdge("reply", graph.END)
		return b.Compile()
	}}
}

// importPlannerSet imports the planner's eval set as a dataset over HTTP
// and returns its ID and case count.
func importPlannerSet(t *testing.T, url string) (string, int) {
	t.Helper()
	set, err := os.ReadFile(filepath.Join("..", "..", "apps", "planner", "eval", "planner.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(url+"datasets/import", "application/x-ndjson", bytes.NewReader(set))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ds struct {
		DatasetID string `json:"dataset_id"`
		CaseCount int    `json:"case_count"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ds); err != nil || res.StatusCode != http.StatusOK || ds.CaseCount == 0 {
		t.Fatalf("importing the planner set: %d %v %+v", res.StatusCode, err, ds)
	}
	return ds.DatasetID, ds.CaseCount
}

// startExperiment fills the dataset view's "Run an experiment" form and
// waits for the experiment's view; it returns the experiment's ID.
func (b *browser) startExperiment(url, dataset, name, assistant, reps, baseline string) string {
	b.t.Helper()
	b.do("opening the dataset", chromedp.Navigate(url+"#/datasets/"+dataset))
	b.waitFor("the dataset", `document.querySelector('#datasets-view .case')`)
	b.do("asking to run", chromedp.Click(`//*[@id='datasets-view']//button[.='Run an experiment']`))
	b.waitFor("the form", `document.querySelector('#datasets-view .exp-run-form select')`)
	ok := eval[bool](b, fmt.Sprintf(`(() => { const f = document.querySelector('#datasets-view .exp-run-form');
		const who = f.querySelector('select.exp-who'), base = f.querySelector('select.exp-base');
		const o = [...who.options].find((o) => o.textContent === %q); if (!o) return false; who.value = o.value;
		if (%q) { const p = [...base.options].find((o) => o.value === %q); if (!p) return false; base.value = p.value; }
		f.querySelector('input[type=number]').value = %q;
		f.querySelector('input[type=text]').value = %q;
		// Record every progress line the view shows, to see it follow the stream.
		window.__seen = [];
		new MutationObserver(() => { const p = document.querySelector('#experiments-view .exp-progress');
			if (p && window.__seen[window.__seen.length - 1] !== p.textContent) window.__seen.push(p.textContent); })
			.observe(document.getElementById('experiments-view'), { subtree: true, childList: true, characterData: true });
		return true; })()`, assistant, baseline, baseline, reps, name))
	if !ok {
		b.t.Fatalf("the form offers no assistant %s or baseline %q", assistant, baseline)
	}
	b.screenshot("web-experiment-form")
	b.checkA11y("the experiment form")
	b.do("starting", chromedp.Click(`//*[@id='datasets-view']//button[.='Start the experiment']`))
	b.waitFor("the experiment's view", `/^#\/experiments\/[\w-]+$/.test(location.hash) && !document.getElementById('experiments-view').hidden`)
	return strings.TrimPrefix(eval[string](b, `location.hash`), "#/experiments/")
}

// waitEnded waits for the experiment's view to show it ended with the
// status, its results drawn.
func (b *browser) waitEnded(status string) {
	b.t.Helper()
	// Longer than waitFor's minute: on a loaded machine (or under -race)
	// eight planner threads can take more.
	ctx, cancel := context.WithTimeout(b.ctx, 4*time.Minute)
	defer cancel()
	expr := `document.querySelector('#experiments-view .exp-progress')?.dataset.status === ` + jsString(status) +
		` && document.querySelector('#experiments-view .exp-results h3')`
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for the experiment to end in %s: %v; the page says: %s", status, err, eval[string](b, "document.body.innerText"))
	}
}

// From a dataset of the planner's eval cases a person runs an experiment
// on the planner (two repetitions): the view follows its progress to the
// end, shows the summary and every case × repetition with each
// evaluator's score and explanation, and a case's thread opens in the
// chat. A second experiment, on a planner that claims a booking at once,
// with the first as its baseline, compares as regressions.
func TestBrowserExperiments(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("planner-draft", draftGraph()) })
	dataset, cases := importPlannerSet(t, url)

	first := b.startExperiment(url, dataset, "planner baseline", "planner", "2", "")
	b.waitEnded("success")
	seen := eval[[]string](b, `window.__seen`)
	if len(seen) < 2 || !strings.HasPrefix(seen[len(seen)-1], "success · ") || strings.HasPrefix(seen[0], "success") {
		t.Errorf("the progress lines shown (want a live one before the end): %q", seen)
	}
	if got, want := eval[string](b, `document.querySelector('#experiments-view .exp-progress').textContent`), fmt.Sprintf("success · %d of %d recorded · %d passed, 0 failed", 2*cases, 2*cases, 2*cases); got != want {
		t.Errorf("the progress: %q, want %q", got, want)
	}
	if n := eval[int](b, `document.querySelectorAll('#experiments-view .exp-result').length`); n != 2*cases {
		t.Errorf("%d results, want %d", n, 2*cases)
	}
	summary := eval[string](b, `document.querySelector('#experiments-view .exp-summary').innerText`)
	for _, want := range []string{fmt.Sprintf("%d of %d", cases, cases), "100%", "pass@2"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q: %s", want, summary)
		}
	}
	booked := `document.querySelector('#experiments-view .exp-result[data-case="lisbon-booked"][data-repetition="1"]')`
	res := eval[string](b, booked+`.innerText`)
	for _, want := range []string{"lisbon-booked", "repetition 2", "Passed", "regex", "interrupts", "Open the thread of lisbon-booked"} {
		if !strings.Contains(res, want) {
			t.Errorf("the result lacks %q: %s", want, res)
		}
	}
	if n := eval[int](b, booked+`.querySelectorAll('.exp-why').length`); n == 0 {
		t.Errorf("no evaluator explains its score: %s", res)
	}
	if got := eval[string](b, `document.querySelector('#experiments-view .exp-compare').innerText`); !strings.Contains(got, "No other finished experiment") {
		t.Errorf("the compare control with nothing to compare: %q", got)
	}
	b.checkA11y("an experiment")

	// The case's thread opens in the chat, with the planner's answer.
	thread := eval[string](b, booked+`.querySelector('a.exp-thread').getAttribute('href')`)
	b.do("opening the case's thread", chromedp.Click(`//*[@id='experiments-view']//li[@data-case='lisbon-booked' and @data-repetition='1']//a[contains(@class,'exp-thread')]`))
	b.waitFor("the thread in the chat", `location.hash === `+jsString(thread)+` && document.getElementById('messages').innerText.includes('Your offsite is booked') && !document.body.classList.contains('datasets-mode')`)

	// A second experiment, with the first as its baseline, regresses.
	second := b.startExperiment(url, dataset, "draft planner", "planner-draft", "1", first)
	b.waitEnded("success")
	if second == first {
		t.Fatal("the second experiment has the first's ID")
	}
	b.waitFor("the baseline offered", `document.querySelector('#experiments-view .exp-compare select')?.value === `+jsString(first))
	b.do("comparing", chromedp.Click(`//*[@id='experiments-view']//button[.='Compare']`))
	b.waitFor("the comparison", `document.querySelector('#experiments-view .exp-cmp-table tbody tr')`)
	verdict := eval[string](b, `document.querySelector('#experiments-view .exp-verdict').innerText`)
	if !strings.Contains(verdict, fmt.Sprintf("%d regressions, 0 improvements", cases)) || !strings.Contains(verdict, "p < 0.0005: significant ·") {
		t.Errorf("the comparison's verdict: %q", verdict)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#experiments-view .exp-cmp-table tbody tr')].map((r) => r.dataset.case + ' ' + r.querySelector('.exp-change').textContent)`); len(got) != cases || !strings.Contains(strings.Join(got, ","), "lisbon-booked regression") {
		t.Errorf("the compared cases: %q", got)
	}
	if got := eval[string](b, `document.querySelector('#experiments-view .exp-result .verdict').textContent`); got != "Failed" {
		t.Errorf("the draft planner's first result: %q", got)
	}
	if got := eval[string](b, `document.getElementById('experiments-title').textContent`); got != "draft planner" {
		t.Errorf("the experiment's title: %q", got)
	}
	b.do("showing the summary and comparison", chromedp.Evaluate[chromedp.Void](`document.getElementById('experiments-view').scrollTop = 0; undefined`))
	b.screenshot("web-experiments")
	b.checkA11y("a comparison")

	// The list: both, with dataset, assistant, status and pass rate.
	b.do("listing", chromedp.Click(`//*[@id='experiments-view']//a[.='All experiments']`))
	b.waitFor("the list", `document.querySelectorAll('#experiments-view .exp-table tbody tr').length === 2`)
	rows := eval[[][]string](b, `[...document.querySelectorAll('#experiments-view .exp-table tbody tr')].map((r) => [r.dataset.experiment, ...[...r.cells].map((c) => c.innerText.trim())])`)
	if len(rows) != 2 || rows[0][0] != second || rows[1][0] != first ||
		strings.Join(rows[0][1:], "|") != "draft planner|planner v1|planner-draft|success|0%" || strings.Join(rows[1][1:], "|") != "planner baseline|planner v1|planner|success|100%" {
		t.Errorf("the list's rows: %q", rows)
	}
	b.checkA11y("the experiments list")

	// Phone width and dark.
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	b.darkMode(true)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the experiments list is %dpx wide at 390px", w)
	}
	b.checkA11y("dark phone-width experiments list")
	b.do("opening the second", chromedp.Click(`//*[@id='experiments-view']//tr[@data-experiment='`+second+`']//a`))
	b.waitFor("its results", `document.querySelector('#experiments-view .exp-result') && document.querySelector('#experiments-view .exp-compare select')`)
	b.do("comparing", chromedp.Click(`//*[@id='experiments-view']//button[.='Compare']`))
	b.waitFor("the comparison", `document.querySelector('#experiments-view .exp-cmp-table tbody tr')`)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the experiment is %dpx wide at 390px", w)
	}
	b.screenshot("web-experiments-phone-dark")
	b.checkA11y("dark phone-width experiment")
	b.darkMode(false)
	b.do("widening", chromedp.EmulateViewport(1200, 900))

	// A long experiment cancels from its view: it ends as cancelled, with
	// only the units that had started recorded.
	b.startExperiment(url, dataset, "too long", "planner", "100", "")
	// The view is redrawn when the new experiment opens, so the button may
	// not exist yet at a poll; that is "not yet", not an error.
	b.waitFor("the cancel button", `document.querySelector('#experiments-view .exp-live button')?.hidden === false`)
	b.do("cancelling", chromedp.Click(`//*[@id='experiments-view']//button[.='Cancel the experiment']`))
	b.waitEnded("cancelled")
	if n := eval[int](b, `document.querySelectorAll('#experiments-view .exp-result').length`); n >= 100*cases {
		t.Errorf("%d results after cancelling, want fewer than %d", n, 100*cases)
	}
	if !eval[bool](b, `document.querySelector('#experiments-view .exp-live button').hidden`) {
		t.Error("the cancel button stays after the experiment ended")
	}
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
