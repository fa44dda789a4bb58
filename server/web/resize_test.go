package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Resizing the window across the drawer breakpoints (1100 px: the run
// panel, 700 px: the thread list) moves the panels without animating
// them: no transition of a drawer starts while the window is resized.
// Opening a drawer with its button still slides it in.
func TestBrowserResizeDoesNotSlideTheDrawers(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url), chromedp.EmulateViewport(1280, 800))
	b.waitFor("the assistants", `document.querySelectorAll('#assistant option').length > 0`)
	// Every transition a drawer starts is noted (transitionrun fires when
	// one is created, however short the test's look at the page).
	eval[bool](b, `(window.slid = [], document.addEventListener('transitionrun', (e) => {
		if (e.target.id === 'inspector' || e.target.id === 'sidebar') window.slid.push(e.target.id + ' ' + e.propertyName);
	}), true)`)
	const running = `document.getAnimations().filter((a) => ['inspector', 'sidebar'].includes(a.effect && a.effect.target && a.effect.target.id)).length`
	for _, w := range []int64{1000, 600, 390, 1000, 1280, 390} {
		b.do("resizing", chromedp.EmulateViewport(w, 800))
		if n := eval[int](b, running); n != 0 {
			t.Errorf("at %d px, %d drawer animations run right after the resize", w, n)
		}
		time.Sleep(300 * time.Millisecond) // longer than a drawer's transition
	}
	if got := eval[string](b, `window.slid.join(', ')`); got != "" {
		t.Errorf("resizing slid the drawers: %s", got)
	}
	// At 390 px the thread list opens from its button, sliding.
	b.do("opening the threads", chromedp.Click(chromedp.ID("sidebar-open")))
	b.waitFor("the drawer open", `document.body.classList.contains('sidebar-open')`)
	// (transitionrun is dispatched with the next frame.)
	b.waitFor("the thread list sliding in", `window.slid.includes('sidebar transform')`)
}
