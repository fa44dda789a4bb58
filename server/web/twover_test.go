package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// colourGraph answers every message with its run context's "answer": an
// assistant version's context decides what it says.
func colourGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "answers with its context's colour", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("answer", func(ctx context.Context, s graph.State) (graph.Output, error) {
			rc, err := graph.RunContext[map[string]any](ctx)
			if err != nil {
				return nil, err
			}
			msg := llm.Assistant(fmt.Sprint(rc["answer"]))
			msg.ID = fmt.Sprintf("msg_colour_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("answer")
		b.AddEdge("answer", graph.END)
		return b.Compile()
	}}
}

// post sends a JSON or JSONL request and decodes the answer, failing the
// test on another status than want.
func post(t *testing.T, method, url, ctype, body string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(res.Body).Decode(&raw)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, url, res.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, raw)
		}
	}
}

// Two versions of one assistant side by side: from a dataset's view a
// person runs version 1 and asks to compare it with version 2. Both
// experiments start, the second's view opens with the first as its
// baseline, both progress bars follow their streams to the end, and the
// comparison shows on its own: version 2 answers "red" where version 1
// answered "blue", so every case regresses.
func TestBrowserExperimentTwoVersions(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("colour", colourGraph()) })
	const cases, reps = 2, 10
	var ds struct {
		DatasetID string `json:"dataset_id"`
	}
	post(t, "POST", url+"datasets/import", "application/x-ndjson", `{"name": "colours", "criteria": [{"evaluator": "exact"}]}
{"id": "sky", "input": {"message": "What colour is the sky?"}, "expect": {"output": "blue"}}
{"id": "sea", "input": {"message": "What colour is the sea?"}, "expect": {"output": "blue"}}
`, 200, &ds)
	post(t, "POST", url+"assistants", "application/json", `{"assistant_id": "colourist", "graph_id": "colour", "name": "Colourist", "context": {"answer": "blue"}}`, 200, nil)
	post(t, "PATCH", url+"assistants/colourist", "application/json", `{"context": {"answer": "red"}}`, 200, nil)

	b.do("opening the dataset", chromedp.Navigate(url+"#/datasets/"+ds.DatasetID))
	b.waitFor("the dataset", `document.querySelector('#datasets-view .case')`)
	b.do("asking to run", chromedp.Click(`//*[@id='datasets-view']//button[.='Run an experiment']`))
	b.waitFor("the form", `document.querySelector('#datasets-view .exp-run-form')?.dataset.ready`)
	b.do("picking the assistant", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('#datasets-view .exp-run-form');
		const who = f.querySelector('select.exp-who'); who.value = 'colourist'; who.dispatchEvent(new Event('change')); })()`))
	b.waitFor("its versions", `document.querySelector('#datasets-view .exp-run-form').dataset.ready === 'colourist'`)
	offered := eval[[]string](b, `[...document.querySelectorAll('#datasets-view .exp-run-form select.exp-twin option')].map((o) => (o.parentElement.label || '') + ': ' + o.textContent)`)
	if len(offered) < 4 || strings.Join(offered[:3], "|") != ": Nothing|Another version of Colourist: Colourist version 2|Another version of Colourist: Colourist version 1" ||
		!strings.HasPrefix(offered[3], "Another assistant: ") {
		t.Fatalf("Compare with offers %q", offered)
	}
	b.do("filling the form", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.querySelector('#datasets-view .exp-run-form');
		f.querySelector('select.exp-version').value = '1';
		f.querySelector('select.exp-twin').value = 'colourist\n2';
		f.querySelector('input[type=number]').value = '%d';
		f.querySelector('input[type=text]').value = 'colours';
		// Record every progress line both bars show, to see them follow their streams.
		window.__own = []; window.__base = [];
		const log = (sel, into) => { const p = document.querySelector(sel); if (p && into[into.length - 1] !== p.textContent) into.push(p.textContent); };
		new MutationObserver(() => { log('#experiments-view .exp-live:not(.exp-base-live) .exp-progress', window.__own); log('#experiments-view .exp-base-live .exp-progress', window.__base); })
			.observe(document.getElementById('experiments-view'), { subtree: true, childList: true, characterData: true });
	})()`, reps)))
	b.screenshot("web-twover-form")
	b.checkA11y("the experiment form with Compare with")
	b.do("starting", chromedp.Click(`//*[@id='datasets-view']//button[.='Start the experiment']`))
	b.waitFor("the second experiment's view", `/^#\/experiments\/[\w-]+$/.test(location.hash) && document.querySelector('#experiments-view .exp-base-live')`)

	ctx, cancel := context.WithTimeout(b.ctx, 4*time.Minute)
	defer cancel()
	done := `document.querySelector('#experiments-view .exp-cmp-table tbody tr')`
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](done, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("waiting for the comparison: %v; the page says: %s", err, eval[string](b, "document.body.innerText"))
	}
	total := cases * reps
	own, base := eval[[]string](b, `window.__own`), eval[[]string](b, `window.__base`)
	wantOwn, wantBase := fmt.Sprintf("success · %d of %d recorded · 0 passed, %d failed", total, total, total), fmt.Sprintf("success · %d of %d recorded · %d passed, 0 failed", total, total, total)
	if len(own) == 0 || own[len(own)-1] != wantOwn {
		t.Errorf("the experiment's progress lines %q, want the last %q", own, wantOwn)
	}
	if len(base) < 2 || base[len(base)-1] != wantBase || strings.HasPrefix(base[0], "success") {
		t.Errorf("the baseline's progress lines %q: want a live one, then %q", base, wantBase)
	}
	if got := eval[string](b, `document.getElementById('experiments-title').textContent`); got != "colours · Colourist v2" {
		t.Errorf("the opened experiment is %q, want the second, on version 2", got)
	}
	if got := eval[string](b, `document.querySelector('#experiments-view .exp-facts').textContent`); !strings.Contains(got, "Colourist v2 ·") {
		t.Errorf("the facts: %q", got)
	}
	if got := eval[string](b, `document.querySelector('#experiments-view .exp-base-label').textContent`); got != "Baseline colours · Colourist v1" {
		t.Errorf("the baseline's label: %q", got)
	}
	verdict := eval[string](b, `document.querySelector('#experiments-view .exp-verdict').innerText`)
	if !strings.Contains(verdict, fmt.Sprintf("%d regressions, 0 improvements", cases)) {
		t.Errorf("the comparison's verdict: %q", verdict)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#experiments-view .exp-cmp-table tbody tr')].map((r) => r.dataset.case + ' ' + r.querySelector('.exp-change').textContent)`); strings.Join(got, ",") != "sky regression,sea regression" {
		t.Errorf("the compared cases: %q", got)
	}
	b.do("showing the top", chromedp.Evaluate[chromedp.Void](`document.getElementById('experiments-view').scrollTop = 0; undefined`))
	b.screenshot("web-twover-compare")
	b.checkA11y("two versions side by side")
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	b.darkMode(true)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the two experiments are %dpx wide at 390px", w)
	}
	b.screenshot("web-twover-phone-dark")
	b.checkA11y("dark phone-width two versions side by side")
	b.darkMode(false)
	b.do("widening", chromedp.EmulateViewport(1200, 900))

	// The list names each experiment's version.
	b.do("listing", chromedp.Click(`//*[@id='experiments-view']//a[.='All experiments']`))
	b.waitFor("the list", `document.querySelectorAll('#experiments-view .exp-table tbody tr').length === 2`)
	rows := eval[[]string](b, `[...document.querySelectorAll('#experiments-view .exp-table tbody tr')].map((r) => r.cells[2].innerText.trim())`)
	if strings.Join(rows, "|") != "Colourist v2|Colourist v1" {
		t.Errorf("the list's assistants: %q", rows)
	}
}
