package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	teval "github.com/trellis-agents/trellis/eval"
)

// plannerThread drives the planner's booked case over HTTP (as a client
// would) and returns the thread's ID.
func plannerThread(t *testing.T, url string) string {
	t.Helper()
	exp, err := (&teval.Runner{Target: &teval.ServerTarget{URL: url, Assistant: "planner"}, Experiment: "page"}).Run(context.Background(),
		&teval.Dataset{Name: "p", Cases: []teval.Case{plannerCase(t)}})
	if err != nil {
		t.Fatal(err)
	}
	tr := exp.Cases[0].Trials[0]
	if !tr.Pass {
		t.Fatalf("the planner thread failed: %s", tr.Error)
	}
	return tr.ThreadID
}

// runFeedback lists the feedback on every run of the thread, over HTTP.
func runFeedback(t *testing.T, url, thread string) []struct {
	RunID     string   `json:"run_id"`
	Score     *float64 `json:"score"`
	Comment   string   `json:"comment"`
	MessageID string   `json:"message_id"`
	Source    string   `json:"source"`
} {
	t.Helper()
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if code := getJSON(t, url+"threads/"+thread+"/runs?limit=100", &runs); code != http.StatusOK {
		t.Fatalf("listing runs: %d", code)
	}
	var out []struct {
		RunID     string   `json:"run_id"`
		Score     *float64 `json:"score"`
		Comment   string   `json:"comment"`
		MessageID string   `json:"message_id"`
		Source    string   `json:"source"`
	}
	for _, r := range runs {
		var fs []struct {
			RunID     string   `json:"run_id"`
			Score     *float64 `json:"score"`
			Comment   string   `json:"comment"`
			MessageID string   `json:"message_id"`
			Source    string   `json:"source"`
		}
		if code := getJSON(t, url+"threads/"+thread+"/runs/"+r.RunID+"/feedback", &fs); code != http.StatusOK {
			t.Fatalf("listing feedback: %d", code)
		}
		out = append(out, fs...)
	}
	return out
}

// darkMode asks for the dark colour scheme (or the light one).
func (b *browser) darkMode(on bool) {
	b.t.Helper()
	v := "light"
	if on {
		v = "dark"
	}
	b.do("asking for "+v, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
		})
		return err
	}))
}

// showAnswer scrolls the chat's log (only it) to the planner's answer.
func (b *browser) showAnswer() {
	b.t.Helper()
	eval[bool](b, `(() => { const l = document.getElementById('log'); const e = `+bookedAnswer+`;
		l.scrollTop += e.getBoundingClientRect().top - l.getBoundingClientRect().top - 80; return true; })()`)
}

// The answer the planner ended with.
const bookedAnswer = `[...document.querySelectorAll('#messages .msg.ai')].find((e) => e.innerText.includes('Your offsite is booked'))`

// A person gives a thumbs down with a comment on the planner's answer;
// after a reload the page shows the choice, and the API has it, with the
// run and the message. Then they add the thread to a new dataset, editing
// the expected output, and the Datasets view shows the case with its
// answers; it exports as JSONL and a case deletes, making a new version.
func TestBrowserFeedbackAndDatasets(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	thread := plannerThread(t, url)
	b.do("opening the thread", chromedp.Navigate(url+"#/thread/"+thread))
	b.waitFor("the feedback bar on the answer", bookedAnswer+`?.querySelector('.feedback button[aria-label="Bad answer"]')`)
	if got := eval[string](b, bookedAnswer+`.querySelector('.feedback').getAttribute('aria-label')`); got != "Feedback on this answer" {
		t.Errorf("the bar's label: %q", got)
	}
	b.do("thumbs down", chromedp.Click(`//*[@id='messages']//div[contains(@class,'msg') and contains(.,'Your offsite is booked')]//button[@aria-label='Bad answer']`))
	b.waitFor("the choice saved", bookedAnswer+`.querySelector('.fb-note').textContent === 'Thanks, saved.'`)
	b.do("commenting",
		chromedp.Click(`//*[@id='messages']//div[contains(@class,'msg') and contains(.,'Your offsite is booked')]//button[normalize-space()='Comment']`),
		chromedp.SendKeys(`//*[@id='messages']//div[contains(@class,'msg') and contains(.,'Your offsite is booked')]//textarea`, "Too expensive for us"),
		chromedp.Click(`//*[@id='messages']//div[contains(@class,'msg') and contains(.,'Your offsite is booked')]//button[normalize-space()='Save the comment']`))
	b.waitFor("the comment saved", bookedAnswer+`.querySelector('.fb-note').textContent === 'Thanks, saved.' && `+bookedAnswer+`.querySelector('[aria-label="Bad answer"]').getAttribute('aria-pressed') === 'true'`)
	b.showAnswer()
	b.screenshot("web-feedback")
	b.checkA11y("feedback")

	b.do("reloading", chromedp.Reload())
	b.waitFor("the choice after the reload", bookedAnswer+`?.querySelector('[aria-label="Bad answer"]')?.getAttribute('aria-pressed') === 'true'`)
	if got := eval[string](b, bookedAnswer+`.querySelector('[aria-label="Good answer"]').getAttribute('aria-pressed')`); got != "false" {
		t.Errorf("thumbs up shows pressed: %s", got)
	}
	if got := eval[string](b, bookedAnswer+`.querySelector('.fb-form textarea').value`); got != "Too expensive for us" {
		t.Errorf("the comment after the reload: %q", got)
	}
	b.do("narrowing the chat", chromedp.EmulateViewport(390, 844))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the chat with feedback is %dpx wide at 390px", w)
	}
	b.showAnswer()
	b.darkMode(true)
	b.screenshot("web-feedback-phone-dark")
	b.checkA11y("dark phone-width feedback")
	b.darkMode(false)
	b.do("widening the chat", chromedp.EmulateViewport(1200, 900))
	msgID := eval[string](b, bookedAnswer+`.dataset.id`)
	fs := runFeedback(t, url, thread)
	if len(fs) != 1 || fs[0].Score == nil || *fs[0].Score != 0 || fs[0].Comment != "Too expensive for us" || fs[0].MessageID != msgID || fs[0].RunID == "" || fs[0].Source != "person" {
		t.Errorf("the stored feedback (one entry, the latest choice, a person's): %+v", fs)
	}

	// Add the thread to a new dataset, editing the expected output.
	b.do("adding to a dataset", chromedp.Click(chromedp.ID("add-to-dataset")))
	b.waitFor("the case form", `document.querySelector('#case-dialog .case-form')`)
	answers := eval[string](b, `document.querySelector('#case-dialog .case-answers').innerText`)
	if !strings.Contains(answers, "planexec_ask") || !strings.Contains(answers, "Lisbon") || !strings.Contains(answers, "tool_approval") {
		t.Errorf("the dialog's answers: %s", answers)
	}
	if got := eval[string](b, `document.querySelector('#case-dialog textarea.expect-output').value`); !strings.HasPrefix(got, "Your offsite is booked") {
		t.Errorf("the expected output offered: %q", got)
	}
	b.screenshot("web-add-to-dataset")
	b.checkA11y("add-to-dataset dialog")
	b.do("editing and saving",
		chromedp.SetValue(chromedp.CSS(`#case-dialog textarea.expect-output`), "Your offsite is booked (edited)"),
		chromedp.SetValue(chromedp.CSS(`#case-dialog input[type=text]`), "lisbon-offsite"),
		chromedp.SetValue(`//*[@id='case-dialog']//label[.='New dataset name']/following-sibling::input`, "offsite-cases"),
		chromedp.Click(`//*[@id='case-dialog']//button[normalize-space()='Save the case']`))
	b.waitFor("the saved case", `document.querySelector('#case-dialog .case-saved a')`)
	if got := eval[string](b, `document.querySelector('#case-dialog .case-saved').innerText`); !strings.Contains(got, "lisbon-offsite") || !strings.Contains(got, "offsite-cases") {
		t.Errorf("the dialog says %q", got)
	}
	b.do("opening the dataset", chromedp.Click(chromedp.CSS(`#case-dialog .case-saved a`)))
	b.waitFor("the case in the dataset", `document.querySelector('#datasets-view .case[data-case="lisbon-offsite"]')`)
	if eval[bool](b, `document.getElementById('case-dialog').open`) {
		t.Error("the dialog stays open")
	}
	view := eval[string](b, `document.querySelector('#datasets-view .case').innerText`)
	for _, want := range []string{"Plan our", "planexec_ask", "Lisbon", "tool_approval", "Your offsite is booked (edited)"} {
		if want == "Plan our" {
			want = plannerCase(t).Input.Message
		}
		if !strings.Contains(view, want) {
			t.Errorf("the case view lacks %q: %s", want, view)
		}
	}
	if got := eval[string](b, `document.querySelector('#datasets-view .ds-facts').textContent`); got != "Version 1 · 1 case" {
		t.Errorf("the dataset's facts: %q", got)
	}
	b.screenshot("web-datasets")
	b.checkA11y("dataset")

	// The list: name, version, case count.
	b.do("listing", chromedp.Click(`//*[@id='datasets-view']//a[.='All datasets']`))
	b.waitFor("the list", `document.querySelector('#datasets-view .datasets-table tbody tr')`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#datasets-view tbody tr td')].map((e) => e.innerText.trim())`); len(got) != 3 || got[0] != "offsite-cases" || got[1] != "1" || got[2] != "1" {
		t.Errorf("the list's row: %q", got)
	}
	b.checkA11y("datasets list")

	// Export downloads the JSONL trellis eval reads.
	b.do("opening it again", chromedp.Click(`//*[@id='datasets-view']//a[.='offsite-cases']`))
	b.waitFor("the case", `document.querySelector('#datasets-view .case')`)
	dl := t.TempDir()
	b.do("allowing downloads", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl})
		return err
	}))
	b.do("exporting", chromedp.Click(`//*[@id='datasets-view']//button[.='Export JSONL']`))
	var exported []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if data, err := os.ReadFile(filepath.Join(dl, "offsite-cases.jsonl")); err == nil && len(data) > 0 {
			exported = data
			break
		}
	}
	ds, err := teval.ReadDataset(strings.NewReader(string(exported)))
	if err != nil {
		t.Fatalf("the export (%d bytes) does not read as a dataset: %v", len(exported), err)
	}
	if ds.Name != "offsite-cases" || len(ds.Cases) != 1 || ds.Cases[0].ID != "lisbon-offsite" || len(ds.Cases[0].Answers) < 4 {
		t.Errorf("the exported dataset: %+v", ds)
	}

	// Phone width and dark, before the case goes.
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the dataset view is %dpx wide at 390px", w)
	}
	b.checkA11y("phone-width dataset")
	b.darkMode(true)
	b.screenshot("web-datasets-phone-dark")
	b.checkA11y("dark phone-width dataset")
	b.darkMode(false)
	b.do("widening", chromedp.EmulateViewport(1200, 900))

	// Deleting asks, then makes version 2 without the case.
	b.do("deleting the case", chromedp.Click(`//*[@id='datasets-view']//button[@aria-label='Delete the case lisbon-offsite']`))
	b.waitFor("the question", `!document.querySelector('#datasets-view .case-confirm').hidden`)
	b.do("confirming", chromedp.Click(`//*[@id='datasets-view']//button[.='Delete it']`))
	b.waitFor("the new version", `document.querySelector('#datasets-view .ds-facts')?.textContent === 'Version 2 · 0 cases'`)
	if n := eval[int](b, `document.querySelectorAll('#datasets-view .case').length`); n != 0 {
		t.Errorf("%d cases left", n)
	}

	// Back to the chat: the thread is there.
	b.do("back to the thread", chromedp.Navigate(url+"#/thread/"+thread))
	b.waitFor("the chat again", fmt.Sprintf(`!document.querySelector('.chat').offsetParent === false || document.getElementById('messages').innerText.includes(%q)`, "Your offsite is booked"))
	if eval[bool](b, `document.body.classList.contains('datasets-mode')`) {
		t.Error("the datasets view stays after opening a thread")
	}
}
