package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// Point 8 of issue 22: a fork gets its own title. After forking from
// step 0, the chat's header names the thread and the branch shown
// ("· fork from step 0"); the thread list's row keeps the thread's title
// alone. Before the fork the header is the title alone.
func TestBrowserForkTitle(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("echo", echoGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("echo")
	b.send("first question")
	b.waitFor("the echo", `document.getElementById('messages').innerText.includes('You said: first question')`)
	b.waitFor("the timeline", `document.querySelectorAll('#timeline button[data-checkpoint]').length === 3`)
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	const header = `document.getElementById('thread-title').innerText`
	const row = `[...document.querySelectorAll('#threads .thread-title')].map((e) => e.innerText).join('|')`
	// The thread list is refreshed after the run ends, a moment after the
	// header: wait for the two to agree rather than read the list once.
	b.waitFor("the thread list's title", `(() => { const h = `+header+`; return h !== '' && h !== 'New thread' && `+row+` === h; })()`)
	title := eval[string](b, header)

	b.do("opening step 0", chromedp.Click(chromedp.CSS(`#timeline li.cp:nth-child(2) button[data-checkpoint]`)))
	b.waitFor("the checkpoint's state", `document.querySelector('#checkpoint h3')?.textContent === 'Checkpoint: Step 0 · step'`)
	eval[bool](b, `(() => { const ta = document.getElementById('fork-values'); ta.value = ta.value.replace('first question', 'edited question'); return true; })()`)
	b.do("forking", chromedp.Click(`//*[@id='checkpoint']//button[normalize-space()='Fork and run from here']`))
	b.waitFor("the forked answer", `document.getElementById('messages').innerText.includes('You said: edited question')`)
	b.waitFor("the header naming the fork", header+` === `+jsonArgs(title+" · fork from step 0"))
	if got := eval[string](b, row); got != title {
		t.Errorf("the thread list's row reads %q, want the title %q", got, title)
	}
	// A reload shows the same branch, so the same header.
	b.do("reloading", chromedp.Reload())
	b.waitFor("the header naming the fork after a reload", header+` === `+jsonArgs(title+" · fork from step 0"))
}
