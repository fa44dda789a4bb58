package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The page with the keyboard alone: the skip link leads to the message
// box, Enter sends, and Tab reaches every region's controls (assistant,
// new thread, search, the thread and its delete, the message box, Send,
// the history's checkpoints), each with a visible focus ring.
func TestBrowserKeyboardOnly(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("echo", echoGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("echo")
	b.do("tabbing to the skip link", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent(kb.Tab))
	if got := eval[string](b, `document.activeElement.textContent`); got != "Skip to the message box" {
		t.Fatalf("the first Tab lands on %q, want the skip link", got)
	}
	b.do("following it", chromedp.KeyEvent(kb.Enter))
	b.waitFor("the message box focused", `document.activeElement.id === 'input'`)
	b.do("typing and sending with Enter", chromedp.KeyEvent("hello by keyboard"), chromedp.KeyEvent(kb.Enter))
	b.waitFor("the reply", `document.getElementById('messages').innerText.includes('You said: hello by keyboard') && !document.body.classList.contains('running')`)
	b.waitFor("the checkpoints", `document.querySelectorAll('#timeline .cp-open').length >= 2 && document.querySelector('#threads a')`)

	// Tab through the whole page once, from the top.
	b.do("back to the top", chromedp.Evaluate[chromedp.Void](`document.querySelector('.skip').focus()`))
	seen := []string{"skip"}
	var unringed []string
	for i := 0; i < 40; i++ {
		b.do("tabbing", chromedp.KeyEvent(kb.Tab))
		id := eval[string](b, `(() => { const e = document.activeElement;
			return e.id ? '#' + e.id : e.closest('#threads') ? (e.tagName === 'A' ? 'thread' : 'delete') : e.closest('#timeline') ? 'checkpoint' : e.className || e.tagName; })()`)
		if id == "checkpoint" && slices.Contains(seen, id) {
			break
		}
		seen = append(seen, id)
		if ring := eval[string](b, `getComputedStyle(document.activeElement).outlineStyle`); ring == "none" {
			unringed = append(unringed, id)
		}
	}
	want := []string{"skip", "#assistant", "#new-thread", "#thread-search", "thread", "delete", "#input", "#send", "checkpoint"}
	pos := 0
	for _, s := range seen {
		if pos < len(want) && s == want[pos] {
			pos++
		}
	}
	if pos != len(want) {
		t.Errorf("Tab went through %q; it misses %q in order", seen, want[pos:])
	}
	if len(unringed) > 0 {
		t.Errorf("no visible focus ring on %s", strings.Join(unringed, ", "))
	}

	// A checkpoint opens with Enter, the focus on its heading.
	b.do("opening the checkpoint", chromedp.KeyEvent(kb.Enter))
	b.waitFor("the checkpoint's detail", `document.querySelector('#checkpoint h3') && document.activeElement === document.querySelector('#checkpoint h3')`)
}
