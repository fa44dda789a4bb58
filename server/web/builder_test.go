package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The builder's texts in the scripted run: the first draft, the reviewer's
// critique of it, the final reply and the reviewer's approval.
const (
	builderDraft    = "Reply with your order number and we will start the return."
	builderCritique = "Accurate, but it should say that return shipping is free for faulty items. Please add that."
	builderFinal    = "We will email you a free prepaid return label; reply with your order number to start."
	builderApproval = "Accurate and kind. No changes needed."
)

// Point 8 of issue 22: the builder's internal chatter is the agent's
// working. After a run (and after a reload), the chat's agent messages
// hold only the final reply; the reviewer's critique, its approval and
// the draft it sent back are lines of the run's "What the agent did"
// block, which is folded. While the run streams, the reviewer's tokens
// are never shown as an agent message either.
func TestBrowserBuilderReviewerIsInTheRunBlock(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("builder")
	// Everything the page shows as an agent message while the run streams.
	eval[bool](b, `(window.streamed = [], new MutationObserver(() => {
		for (const m of document.querySelectorAll('main .msg.ai')) window.streamed.push(m.innerText);
	}).observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true }), true)`)
	b.send("I bought headphones 20 days ago and one side stopped working. Can I still return them?")
	// The agent messages, as a person reads them, once the run is done.
	const agentSaid = `[...document.querySelectorAll('main .msg.ai')].filter((e) => e.checkVisibility()).map((e) => e.innerText).join('\n---\n')`
	const block = `[...document.querySelectorAll('main details.run-log')]`
	check := func(when string) {
		b.t.Helper()
		// The draft is known as one once the run is done and its
		// transcript read: the block then has it as a "Draft:" line.
		b.waitFor("the run done and its transcript shown "+when, `!document.body.classList.contains('running') && `+block+`.some((d) => d.textContent.includes('Draft: '))`)
		b.waitFor("the final reply "+when, agentSaid+`.includes(`+jsonArgs(builderFinal)+`)`)
		b.waitFor("a folded run block holding the critique "+when, block+`.some((d) => !d.open && d.textContent.includes('Reviewer: '+`+jsonArgs(builderCritique)+`))`)
		said := eval[string](b, agentSaid)
		for _, s := range []string{builderDraft, builderCritique, builderApproval} {
			if strings.Contains(said, s) {
				t.Errorf("%s: an agent message shows the agent's working %q:\n%s", when, s, said)
			}
		}
		logText := eval[string](b, block+`.map((d) => d.textContent).join('\n')`)
		for _, s := range []string{"Draft: Yes: faulty items can be returned within 30 days, so you are in time. " + builderDraft, "Reviewer: " + builderApproval} {
			if !strings.Contains(logText, s) {
				t.Errorf("%s: the run block lacks %q:\n%s", when, s, logText)
			}
		}
	}
	check("after the run")
	streamed := eval[string](b, `window.streamed.join('\n---\n')`)
	for _, s := range []string{builderCritique, builderApproval} {
		if strings.Contains(streamed, s) {
			t.Errorf("while the run streamed, an agent message showed the reviewer's %q", s)
		}
	}
	b.do("reloading", chromedp.Reload())
	check("after a reload")
	b.checkA11y("builder run block")
}
