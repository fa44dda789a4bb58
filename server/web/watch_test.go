package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// call sends a request to the server's API and decodes the JSON answer
// into out (when not nil); a status other than want fails the test.
func call(t *testing.T, base, method, path string, body, out any, want int) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// flakyGraph's one node, "fetch", fails on its first call and answers on
// the next: a scripted failure to retry.
func flakyGraph() runs.GraphSpec {
	var calls atomic.Int32
	return runs.GraphSpec{Description: "fails once, then answers", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("fetch", func(ctx context.Context, s graph.State) (graph.Output, error) {
			if calls.Add(1) == 1 {
				return nil, errors.New("the weather service is down (scripted)")
			}
			msg := llm.Assistant("Sunny, 24 °C.")
			msg.ID = fmt.Sprintf("msg_flaky_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("fetch")
		b.AddEdge("fetch", graph.END)
		return b.Compile()
	}}
}

// While the gate holds a run, its graph shows the running node
// highlighted; once it ends, the run's status and usage show; a second
// held run is cancelled with the Cancel button.
func TestBrowserGraphUsageCancel(t *testing.T) {
	b := newBrowser(t)
	gate, gate2 := make(chan struct{}), make(chan struct{})
	open1, open2 := true, true
	t.Cleanup(func() {
		if open1 {
			close(gate)
		}
		if open2 {
			close(gate2)
		}
	})
	url := serve(t, func(s register) error {
		if err := s.Register("gated", gatedGraph(gate)); err != nil {
			return err
		}
		return s.Register("gated2", gatedGraph(gate2))
	})
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("gated")
	b.waitFor("the graph", `document.querySelectorAll('#graph .graph-node').length === 3`)
	if got := eval[string](b, `document.querySelector('#graph svg title').textContent`); got != "The graph of gated: start, reply, end" {
		t.Errorf("the graph's title reads %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#graph .graph-node.active').length`); n != 0 {
		t.Errorf("%d nodes highlighted before any run", n)
	}
	b.send("stream something")
	b.waitFor("the running node", `document.querySelector('#graph .graph-node[data-node=reply]').classList.contains('active')`)
	if got := eval[string](b, `document.getElementById('graph-running').textContent`); got != "Running: reply" {
		t.Errorf("the graph's status line reads %q", got)
	}
	if got := eval[string](b, `document.querySelector('#run-summary .badge').textContent`); got != "running" {
		t.Errorf("the run's status reads %q while it runs", got)
	}
	b.waitFor("the thread listed as running", `document.querySelector('#threads a[aria-current=page] .badge')?.textContent === 'running'`)
	// The history follows the run: its pre-input checkpoint shows while
	// the run is still held.
	b.waitFor("the input checkpoint mid-run", `document.querySelector('#timeline .cp-head')?.textContent === 'Step -1 · input' && document.body.classList.contains('running')`)
	b.screenshot("graph-running")
	b.checkA11y("graph")
	// A reload rejoins the run, and its replayed task events light the
	// node again.
	b.do("reloading mid-run", chromedp.Reload())
	b.waitFor("the running node after the reload", `document.body.classList.contains('running') && document.querySelector('#graph .graph-node[data-node=reply]')?.classList.contains('active')`)

	close(gate)
	open1 = false
	b.waitFor("the run's usage", `document.querySelector('#run-summary .usage')`)
	if got := eval[string](b, `document.querySelector('#run-summary .badge').textContent`); got != "done" {
		t.Errorf("the finished run's status reads %q", got)
	}
	usage := eval[string](b, `document.querySelector('#run-summary .usage').textContent`)
	if !strings.Contains(usage, "1 model call ·") || !strings.HasSuffix(usage, "\u00a0s") {
		t.Errorf("the usage reads %q", usage)
	}
	if n := eval[int](b, `document.querySelectorAll('#graph .graph-node.active').length`); n != 0 {
		t.Errorf("%d nodes still highlighted after the run", n)
	}
	// The page shows what the API says.
	var runList []struct {
		Status string `json:"status"`
		Usage  struct {
			ModelCalls int `json:"model_calls"`
		} `json:"usage"`
	}
	thread := eval[string](b, `location.hash.slice('#/thread/'.length)`)
	call(t, url, "GET", "/threads/"+thread+"/runs", nil, &runList, 200)
	if len(runList) != 1 || runList[0].Status != "success" || runList[0].Usage.ModelCalls != 1 {
		t.Errorf("the API's runs: %+v", runList)
	}

	// A second held run, cancelled from the page.
	b.do("a new thread", chromedp.Click(chromedp.ID("new-thread")))
	b.pick("gated2")
	b.waitFor("the second graph", `document.querySelector('#graph svg title').textContent.includes('gated2')`)
	b.send("stream again")
	b.waitFor("the second running node", `document.querySelector('#graph .graph-node[data-node=reply]')?.classList.contains('active')`)
	b.do("cancelling", chromedp.Click(chromedp.ID("cancel")))
	b.waitFor("the cancelled run", `!document.body.classList.contains('running') && document.querySelector('#run-summary')?.dataset.status !== 'running'`)
	status := eval[string](b, `document.getElementById('run-summary').dataset.status`)
	thread2 := eval[string](b, `location.hash.slice('#/thread/'.length)`)
	call(t, url, "GET", "/threads/"+thread2+"/runs", nil, &runList, 200)
	if len(runList) != 1 || runList[0].Status != status || status != "interrupted" {
		t.Errorf("the page's cancelled run is %q; the API's runs: %+v", status, runList)
	}
	if got := eval[string](b, `document.querySelector('#run-summary .badge').textContent`); got != "cancelled" {
		t.Errorf("the cancelled run's status reads %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#graph .graph-node.active').length`); n != 0 {
		t.Errorf("%d nodes still highlighted after the cancel", n)
	}
	b.screenshot("cancelled")
}

// A step that fails shows its error once, at the end of the conversation
// where it happened, with Retry inside it; Retry runs the thread again from
// its last checkpoint and the answer arrives.
func TestBrowserRetryAfterFailure(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("flaky", flakyGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("flaky")
	b.send("What is the weather?")
	const failure = `document.querySelector('#messages .msg.run-error')`
	b.waitFor("the failure", failure+` && !document.body.classList.contains('running')`)
	if got := eval[string](b, failure+`.querySelector('.failure-title').textContent`); got != "The step fetch failed" {
		t.Errorf("the failure's title reads %q", got)
	}
	if got := eval[string](b, failure+`.querySelector('pre').textContent`); !strings.Contains(got, "the weather service is down") {
		t.Errorf("the failure reads %q", got)
	}
	// One display of the failure, not one per module: the error line and
	// its Retry, in the line's retry slot.
	if got := eval[string](b, `document.querySelectorAll('.msg.run-error, .failure').length + ' ' + document.querySelectorAll('.msg.run-error .retry-slot button').length`); got != "1 1" {
		t.Errorf("failure displays, Retry buttons in the line's slot = %q, want one display with its Retry", got)
	}
	b.waitFor("the thread's error status", `document.getElementById('thread-status').textContent === 'error' && document.querySelector('#threads a[aria-current=page] .badge')?.textContent === 'error'`)
	// The failure shows after the question it failed on.
	if after := eval[bool](b, `!!(document.querySelector('#messages .msg.human').compareDocumentPosition(`+failure+`) & Node.DOCUMENT_POSITION_FOLLOWING)`); !after {
		t.Error("the failure is not shown after the question")
	}
	b.screenshot("failure")
	b.checkA11y("failure")

	// The failure is still there after a reload, once, named by the state's task.
	b.do("reloading", chromedp.Reload())
	b.waitFor("the failure after the reload", failure+`?.querySelector('.failure-title')?.textContent === 'The step fetch failed'`)
	b.waitFor("the run's status after the reload", `document.querySelector('#run-summary .badge')`)
	if n := eval[int](b, `document.querySelectorAll('.msg.run-error').length`); n != 1 {
		t.Errorf("%d failure lines after the reload, want 1", n)
	}

	b.do("retrying", chromedp.Click(`//*[@id='messages']//*[contains(@class,'run-error')]//*[contains(@class,'retry-slot')]//button[normalize-space()='Retry']`))
	b.waitFor("the answer", `document.getElementById('messages').innerText.includes('Sunny, 24 °C.')`)
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if gone := eval[bool](b, `!document.querySelector('.msg.run-error')`); !gone {
		t.Error("the failure still shows after the retry succeeded")
	}
	// Via the API: two runs, the failed one and the retry with no input;
	// the question is in the state once.
	thread := eval[string](b, `location.hash.slice('#/thread/'.length)`)
	var runList []struct {
		Status string `json:"status"`
	}
	call(t, url, "GET", "/threads/"+thread+"/runs", nil, &runList, 200)
	if len(runList) != 2 || runList[0].Status != "success" || runList[1].Status != "error" {
		t.Errorf("the runs after the retry: %+v", runList)
	}
	var st struct {
		Values struct {
			Messages []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"messages"`
		} `json:"values"`
	}
	call(t, url, "GET", "/threads/"+thread+"/state", nil, &st, 200)
	if m := st.Values.Messages; len(m) != 2 || m[0].Content != "What is the weather?" || m[1].Content != "Sunny, 24 °C." {
		t.Errorf("the messages after the retry: %+v", m)
	}
}
