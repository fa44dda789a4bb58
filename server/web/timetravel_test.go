package web_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// echoGraph answers each message with "You said: " and its text, so a
// fork with an edited message shows in the answer.
func echoGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "echoes the last message", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("echo", func(ctx context.Context, s graph.State) (graph.Output, error) {
			msgs := react.Messages.Get(s)
			last := ""
			if len(msgs) > 0 {
				last = msgs[len(msgs)-1].Text()
			}
			msg := llm.Assistant("You said: " + last)
			msg.ID = fmt.Sprintf("msg_echo_%d_%s", len(msgs), strings.ReplaceAll(last, " ", "_"))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("echo")
		b.AddEdge("echo", graph.END)
		return b.Compile()
	}}
}

// historyState is a checkpoint of POST /threads/{id}/history.
type historyState struct {
	Values struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	} `json:"values"`
	Checkpoint struct {
		ID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	Parent *struct {
		ID string `json:"checkpoint_id"`
	} `json:"parent_checkpoint"`
}

func (h historyState) texts() []string {
	var out []string
	for _, m := range h.Values.Messages {
		out = append(out, fmt.Sprint(m.Content))
	}
	return out
}

// Issue #4: fork from an earlier checkpoint with an edited message,
// continue on the new branch, and see both branches listed — in the page
// and in the API's history. The timeline is worked with the keyboard.
func TestBrowserTimeTravelFork(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("echo", echoGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("echo")
	b.send("first question")
	b.waitFor("the echo", `document.getElementById('messages').innerText.includes('You said: first question')`)
	b.waitFor("the timeline", `document.querySelectorAll('#timeline button[data-checkpoint]').length === 3`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#timeline .cp-head')].map((e) => e.textContent)`); !slices.Equal(got, []string{"Step -1 · input", "Step 0 · step", "Step 1 · step"}) {
		t.Errorf("the timeline lists %q", got)
	}

	// Keyboard only: focus the latest checkpoint, Up to the one with the
	// input applied (the oldest is the pre-input checkpoint, as
	// LangGraph's), Enter opens it.
	eval[bool](b, `([...document.querySelectorAll('#timeline button[data-checkpoint]')].at(-1).focus(), true)`)
	b.do("moving up and opening", chromedp.KeyEvent(kb.ArrowUp), chromedp.KeyEvent("\r"))
	b.waitFor("the checkpoint's state", `document.querySelector('#checkpoint h3')?.textContent === 'Checkpoint: Step 0 · step'`)
	if got := eval[string](b, `document.activeElement.textContent`); got != "Checkpoint: Step 0 · step" {
		t.Errorf("the focus is on %q after opening a checkpoint", got)
	}
	if got := eval[string](b, `document.querySelector('#checkpoint .cp-facts dd').textContent`); got != "echo" {
		t.Errorf("the checkpoint's next reads %q", got)
	}
	// A broken edit is refused in the page, on the field.
	b.do("breaking the JSON", chromedp.SetValue(chromedp.ID("fork-values"), `{"messages": [`), chromedp.Click(`//*[@id='checkpoint']//button[normalize-space()='Fork and run from here']`))
	b.waitFor("the page's verdict", `document.getElementById('fork-values').getAttribute('aria-invalid') === 'true' && document.getElementById('fork-problem').textContent.startsWith('Not JSON')`)

	// Edit the message and fork.
	b.do("opening it again", chromedp.Click(chromedp.CSS(`#timeline li.cp:nth-child(2) button[data-checkpoint]`)))
	eval[bool](b, `(() => { const ta = document.getElementById('fork-values'); ta.value = ta.value.replace('first question', 'edited question'); return true; })()`)
	b.do("forking", chromedp.Click(`//*[@id='checkpoint']//button[normalize-space()='Fork and run from here']`))
	b.waitFor("the forked answer", `document.getElementById('messages').innerText.includes('You said: edited question')`)
	b.waitFor("two branches", `document.getElementById('timeline').dataset.branches === '2' && !document.body.classList.contains('running')`)
	if got := eval[string](b, `document.getElementById('messages').innerText`); strings.Contains(got, "first question") {
		t.Errorf("the chat still shows the first branch: %q", got)
	}

	// Continue on the new branch.
	b.send("and then?")
	b.waitFor("the answer on the branch", `document.getElementById('messages').innerText.includes('You said: and then?')`)
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	b.waitFor("the timeline after it", `document.querySelectorAll('#timeline .branch').length === 2 && [...document.querySelectorAll('#timeline .branch')][1].querySelectorAll('button[data-checkpoint]').length >= 4`)
	branches := eval[[]string](b, `[...document.querySelectorAll('#timeline .branch-label')].map((e) => e.textContent)`)
	if !slices.Equal(branches, []string{"Branch 1 of 2", "Branch 2 of 2"}) {
		t.Errorf("the branches read %q", branches)
	}
	b.screenshot("timeline-branches")
	b.checkA11y("timeline")
	b.darkAndNarrow("timeline")

	// The API agrees: the input checkpoint has two children, one branch
	// ends with the first answer, the other with the edited one and the
	// follow-up.
	thread := eval[string](b, `location.hash.slice('#/thread/'.length)`)
	var hist []historyState
	call(t, url, "POST", "/threads/"+thread+"/history", map[string]any{"limit": 100}, &hist, 200)
	children := map[string]int{}
	var leaves [][]string
	for _, h := range hist {
		if h.Parent != nil {
			children[h.Parent.ID]++
		}
	}
	for _, h := range hist {
		if children[h.Checkpoint.ID] == 0 {
			leaves = append(leaves, h.texts())
		}
	}
	forks := 0
	for _, n := range children {
		if n > 1 {
			forks++
		}
	}
	wantOld := []string{"first question", "You said: first question"}
	wantNew := []string{"edited question", "You said: edited question", "and then?", "You said: and then?"}
	if forks != 1 || len(leaves) != 2 || !slices.ContainsFunc(leaves, func(l []string) bool { return slices.Equal(l, wantOld) }) ||
		!slices.ContainsFunc(leaves, func(l []string) bool { return slices.Equal(l, wantNew) }) {
		t.Errorf("the API's history: %d forks, branch tips %q", forks, leaves)
	}
	if got := hist[0].texts(); !slices.Equal(got, wantNew) {
		t.Errorf("the thread's latest state is %q, not the new branch", got)
	}
}

// The thread list: search by title (any case) and by metadata, delete
// with a confirmation (Keep keeps it), the API agreeing.
func TestBrowserThreadSearchDelete(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	ids := map[string]string{}
	for _, title := range []string{"Plan the offsite", "Budget review", "Offsite catering"} {
		var th struct {
			ID string `json:"thread_id"`
		}
		call(t, url, "POST", "/threads", map[string]any{"metadata": map[string]any{"title": title, "team": strings.Fields(title)[0]}}, &th, 200)
		ids[title] = th.ID
	}
	b.do("opening the page", chromedp.Navigate(url))
	titles := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('#threads .thread-title')].map((e) => e.textContent).sort()`)
	}
	b.waitFor("the threads", `document.querySelectorAll('#threads .thread-title').length === 3`)
	b.do("searching", chromedp.SendKeys(chromedp.ID("thread-search"), "OFFSITE\r"))
	b.waitFor("the matches", `document.querySelectorAll('#threads .thread-title').length === 2`)
	if got := titles(); !slices.Equal(got, []string{"Offsite catering", "Plan the offsite"}) {
		t.Errorf("searching offsite lists %q", got)
	}
	clearSearch := func() { eval[bool](b, `(document.getElementById('thread-search').value = '', true)`) }
	clearSearch()
	b.do("searching metadata", chromedp.SendKeys(chromedp.ID("thread-search"), "team=Budget\r"))
	b.waitFor("the metadata match", `document.querySelectorAll('#threads .thread-title').length === 1`)
	if got := titles(); !slices.Equal(got, []string{"Budget review"}) {
		t.Errorf("searching team=Budget lists %q", got)
	}
	clearSearch()
	b.do("searching nothing", chromedp.SendKeys(chromedp.ID("thread-search"), "zzz\r"))
	b.waitFor("no match", `document.querySelector('#threads .hint')?.textContent === 'No thread matches.'`)
	clearSearch()
	b.do("clearing the search", chromedp.SendKeys(chromedp.ID("thread-search"), "\r"))
	b.waitFor("all threads", `document.querySelectorAll('#threads .thread-title').length === 3`)

	del := `//*[@id='threads']//button[@aria-label='Delete Budget review']`
	b.do("asking to delete", chromedp.Click(del))
	b.waitFor("the confirmation", `document.getElementById('delete-dialog').open`)
	if got := eval[string](b, `document.getElementById('delete-text').textContent`); !strings.Contains(got, "Budget review") {
		t.Errorf("the confirmation reads %q", got)
	}
	b.screenshot("delete-confirm")
	b.checkA11y("delete confirmation")
	if got := eval[string](b, `document.activeElement.textContent`); got != "Keep it" {
		t.Errorf("the confirmation's focus is on %q, not Keep it", got)
	}
	b.do("keeping it", chromedp.Click(`//*[@id='delete-dialog']//button[normalize-space()='Keep it']`))
	b.waitFor("the dialog closed", `!document.getElementById('delete-dialog').open`)
	call(t, url, "GET", "/threads/"+ids["Budget review"], nil, nil, 200)

	b.do("deleting", chromedp.Click(del), chromedp.Click(chromedp.ID("delete-confirm")))
	b.waitFor("the list without it", `document.querySelectorAll('#threads .thread-title').length === 2`)
	if got := titles(); slices.Contains(got, "Budget review") {
		t.Errorf("after the delete the list is %q", got)
	}
	call(t, url, "GET", "/threads/"+ids["Budget review"], nil, nil, 404)
	call(t, url, "GET", "/threads/"+ids["Plan the offsite"], nil, nil, 200)
}
