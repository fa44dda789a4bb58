package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// assistantIDs maps each graph ID to its assistant's ID, read through
// the API as a client would.
func assistantIDs(t *testing.T, url string) map[string]string {
	t.Helper()
	res, err := http.Post(url+"assistants/search", "application/json", strings.NewReader(`{"limit":100}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var as []struct {
		AssistantID string `json:"assistant_id"`
		GraphID     string `json:"graph_id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&as); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("searching the assistants: %v (HTTP %d)", err, res.StatusCode)
	}
	ids := map[string]string{}
	for _, a := range as {
		ids[a.GraphID] = a.AssistantID
	}
	return ids
}

// Every app's input schema is JSON Schema all the way down: a field that
// holds raw JSON (the testplanner's tool input_schema) is any JSON value,
// not the byte array its Go type is, so a page can build a form from it.
func TestAssistantInputSchemasHaveNoByteArrays(t *testing.T) {
	url := serve(t)
	ids := assistantIDs(t, url)
	for _, id := range []string{"testplanner", "builder", "planner", "scheduler", "sqlrouter"} {
		res, err := http.Get(url + "assistants/" + ids[id] + "/schemas")
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			InputSchema map[string]any `json:"input_schema"`
		}
		err = json.NewDecoder(res.Body).Decode(&s)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v (HTTP %d)", id, err, res.StatusCode)
		}
		if s.InputSchema["type"] != "object" {
			t.Fatalf("%s: input_schema %v is not an object schema", id, s.InputSchema)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if strings.Contains(fmt.Sprint(m["type"]), "array") {
				if it, ok := m["items"].(map[string]any); ok && it["type"] == "integer" && it["maximum"] == 255.0 {
					t.Errorf("%s: %s is a byte array: %v", id, path, m)
				}
			}
			for k, c := range m {
				switch c := c.(type) {
				case map[string]any:
					walk(path+"."+k, c)
				case []any:
					for _, e := range c {
						walk(path+"."+k, e)
					}
				}
			}
		}
		walk(id, s.InputSchema)
	}
	// The testplanner's tools carry their own input_schema, any JSON value.
	res, err := http.Get(url + "assistants/" + ids["testplanner"] + "/schemas")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var s struct {
		InputSchema struct {
			Properties map[string]struct {
				Items struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"input_schema"`
	}
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if got := string(s.InputSchema.Properties["tools"].Items.Properties["input_schema"]); got != "{}" && got != "true" {
		t.Errorf("the tools' input_schema is %s, want any JSON value", got)
	}
}

// An assistant whose input is not a chat starts from a form built from its
// input schema: the testplanner's first run, from the page, plans the
// sample shop's tools with no "no state key messages" error; a chat
// assistant keeps the message box; at phone width nothing overflows.
func TestBrowserInputFormStartsANonChatAssistant(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("planner")
	b.waitFor("the message box of a chat assistant", `!document.getElementById('input').hidden && document.getElementById('input-form').hidden`)

	b.pick("testplanner")
	b.waitFor("the input form", `!document.getElementById('input-form').hidden && document.querySelector('#input-form label')`)
	if !eval[bool](b, `document.getElementById('input').hidden`) {
		t.Error("the message box shows beside the input form")
	}
	// Only the input the app declares (its thread), labelled and described
	// for a person; not the graph's other state keys.
	labels := eval[[]string](b, `[...document.querySelectorAll('#input-form .field label')].map((l) => l.textContent.trim())`)
	if !slices.Equal(labels, []string{"Thread"}) {
		t.Fatalf("the form's labels are %q, want the declared input only", labels)
	}
	field := func(label string) string {
		return fmt.Sprintf(`//*[@id=(//*[@id='input-form']//label[normalize-space()=%q]/@for)]`, label)
	}
	if got := eval[string](b, `document.querySelector('#input-form [name=thread]').tagName + ':' + document.querySelector('#input-form [name=thread]').type`); got != "INPUT:text" {
		t.Errorf("the thread field is a %s, want a single-line text box", got)
	}
	b.darkAndNarrow("input form")

	b.do("filling the form", chromedp.SendKeys(field("Thread"), "web-plan"))
	b.do("sending the form", chromedp.Click(`#send`))
	b.waitFor("the run's end", `/done|failed|waiting for you/.test(document.getElementById('run-summary').textContent) && location.hash.startsWith('#/thread/')`)
	b.screenshot("input-form-done")
	text := eval[string](b, `document.body.innerText`)
	if strings.Contains(text, "no state key") || !strings.Contains(eval[string](b, `document.getElementById('run-summary').textContent`), "done") {
		t.Fatalf("the run did not finish: %s", text)
	}
	threadID := strings.TrimPrefix(eval[string](b, `location.hash`), "#/thread/")
	st := threadState(t, url, threadID)
	if st["thread"] != "web-plan" {
		t.Errorf("the run's thread input is %v", st["thread"])
	}
	if plans, _ := st["plans"].([]any); len(plans) == 0 {
		t.Errorf("the run planned nothing: %v", st)
	}
	b.darkAndNarrow("input form after a run")
}
