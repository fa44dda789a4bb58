package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/apps/deep"
)

// todoLines reads the to-do card as "status:content" lines, in order.
func (b *browser) todoLines() string {
	b.t.Helper()
	return eval[string](b, `[...document.querySelectorAll('#work .todo')].map((li) => li.dataset.status + ':' + li.querySelector('.todo-text').textContent).join('\n')`)
}

// The deep assistant's demo, as a person plays it: the to-do list shows
// while the run goes and ends all done, the write of the brief waits for
// an approval, the file list shows the brief and the researcher's notes
// with their sizes, and opening the brief shows it rendered; after a
// reload the list and the files come back from the thread.
func TestBrowserDeepWork(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.pick(deep.Name)
	b.waitFor("no work shown before a thread", `getComputedStyle(document.getElementById('work')).display === 'none'`)
	// Every count the to-do card shows, in order: a list drawn only when
	// the run stops would skip the first two.
	eval[bool](b, `(() => { window.__counts = [];
		new MutationObserver((records) => { for (const r of records) {
			if (!r.target.classList || !r.target.classList.contains('work-count') || !r.target.closest('.todos')) continue;
			for (const n of r.addedNodes) if (window.__counts.at(-1) !== n.data) window.__counts.push(n.data);
		} }).observe(document.getElementById('work'), { subtree: true, childList: true });
		return true; })()`)
	b.send(deep.Task)

	// The run stops before writing /brief.md: by then the list has been
	// written three times, the last with the write in progress.
	b.waitFor("the approval of the write", fmt.Sprintf(`document.evaluate(%q, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue`, approvalCard("write_file")))
	b.waitFor("the to-do list", `document.querySelectorAll('#work .todo').length === 3`)
	want := "completed:Load the brief-writing skill\ncompleted:Research tea and coffee (researcher sub-agent)\nin_progress:Write the brief to /brief.md"
	if got := b.todoLines(); got != want {
		t.Errorf("the to-dos while the write waits:\n%s\nwant\n%s", got, want)
	}
	// The status is said in words, not by colour alone.
	if got := eval[string](b, `[...document.querySelectorAll('#work .todo-status')].map((s) => s.textContent).join(',')`); got != "Done,Done,In progress" {
		t.Errorf("the statuses in words: %q", got)
	}
	if got := eval[string](b, `window.__counts.join(', ')`); got != "0 of 3 done, 1 of 3 done, 2 of 3 done" {
		t.Errorf("the counts shown while the run went: %q, want each list the agent wrote", got)
	}
	// The researcher's notes are already saved; the brief is not.
	b.waitFor("the notes in the file list", fmt.Sprintf(`document.querySelector('#work .file-open[data-path=%q]')`, deep.Notes))
	if n := eval[int](b, `document.querySelectorAll('#work .file-open[data-path="/brief.md"]').length`); n != 0 {
		t.Errorf("/brief.md is listed before the write was approved")
	}
	b.screenshot("deep-approval")

	b.do("approving the write", chromedp.Click(approvalCard("write_file")+`//button[normalize-space()='Approve']`))
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').textContent.includes(%q)`, "The brief is saved in /brief.md"))
	b.waitFor("every to-do done", `[...document.querySelectorAll('#work .todo')].length === 3 && [...document.querySelectorAll('#work .todo')].every((li) => li.dataset.status === 'completed')`)
	if got := eval[string](b, `document.querySelector('#work .todos .work-count').textContent`); got != "3 of 3 done" {
		t.Errorf("the count at the end: %q", got)
	}
	files := `[...document.querySelectorAll('#work .file-open')].map((f) => f.querySelector('.file-path').textContent + ' ' + f.querySelector('.file-size').textContent).join('\n')`
	wantFiles := fmt.Sprintf("%s %s\n%s %s", deep.Brief, size(len(deep.BriefText)), deep.Notes, size(len(deep.NotesText)))
	b.waitFor("the brief in the file list", `document.querySelectorAll('#work .file-open').length === 2`)
	if got := eval[string](b, files); got != wantFiles {
		t.Errorf("the file list:\n%s\nwant\n%s", got, wantFiles)
	}

	// Opening the brief: its Markdown rendered, read-only, in a dialog.
	b.do("opening /brief.md", chromedp.Click(chromedp.CSS(`#work .file-open[data-path="/brief.md"]`)))
	b.waitFor("the brief", `document.getElementById('file-dialog').open && document.querySelector('#file-dialog .file-body h1')`)
	if got := eval[string](b, `document.querySelector('#file-dialog .file-body h1').textContent + ' | ' + document.querySelector('#file-dialog .file-body strong').textContent`); got != "Tea or coffee for the office kitchen | Stock both, with tea as the everyday default." {
		t.Errorf("the brief as shown: %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#file-dialog :is(textarea, input, [contenteditable])').length`); n != 0 {
		t.Errorf("the file dialog has %d editable fields; files are read-only", n)
	}
	b.checkA11y("deep file")
	b.screenshot("deep-file")
	b.do("closing the file", chromedp.Click(chromedp.CSS(`#file-dialog button[type=submit]`)))
	b.waitFor("the focus back on the file", `!document.getElementById('file-dialog').open && document.activeElement.dataset.path === '/brief.md'`)

	b.checkA11y("deep work")
	b.screenshot("deep-work")
	b.darkAndNarrow("deep work")

	// After a reload, the thread's state and store give both back.
	b.do("reloading", chromedp.Reload())
	b.waitFor("the to-dos after a reload", `document.querySelectorAll('#work .todo.completed').length === 3`)
	b.waitFor("the files after a reload", `document.querySelectorAll('#work .file-open').length === 2`)

	// A new thread shows no work.
	b.do("a new thread", chromedp.Click(chromedp.ID("new-thread")))
	b.waitFor("no work on a new thread", `getComputedStyle(document.getElementById('work')).display === 'none'`)
}

// size is the page's wording of a size in bytes (files.js sizeText).
func size(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1000)
}
