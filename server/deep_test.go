package server

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/deep"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/runs"
)

// The deep app as a service runs it: the run stops for the approval of
// the brief (its researcher's notes are written without asking, to the
// thread's files in the tenant's store), and the approved run ends with
// the to-do list done, the answer and the brief saved.
func TestDeepAssistantOverTheService(t *testing.T) {
	r := servedApps(t)
	const thread = "5d0c3b2e-8f4f-4a57-9a55-2b7c0e6d1f10"
	if code, out, _ := post(t, r.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, out)
	}
	id := DefaultAssistantID(deep.Name)
	run := func(body string) {
		t.Helper()
		if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", body); code != 200 {
			t.Fatalf("runs/wait %s: %d %s", body, code, out)
		}
	}
	var st struct {
		Values struct {
			Todos    []struct{ Content, Status string } `json:"todos"`
			Messages []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"messages"`
		} `json:"values"`
		Interrupts []struct {
			Value json.RawMessage `json:"value"`
		} `json:"interrupts"`
	}
	state := func() {
		t.Helper()
		_, raw, _ := get(t, r.url+"/threads/"+thread+"/state")
		st.Values.Todos, st.Values.Messages, st.Interrupts = nil, nil, nil
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatalf("state: %v: %s", err, raw)
		}
	}
	file := func(path string) string {
		t.Helper()
		// The run's thread ID, which scopes the files, is the tenant's
		// thread key.
		ns := "deep_files.threads." + runs.ThreadKey(api.DefaultTenant, thread)
		_, raw, _ := get(t, r.url+"/store/items?namespace="+url.QueryEscape(ns)+"&key="+url.QueryEscape(path))
		var it struct {
			Value struct {
				Content string `json:"content"`
			} `json:"value"`
		}
		if raw == "null" || json.Unmarshal([]byte(raw), &it) != nil {
			return ""
		}
		return it.Value.Content
	}

	run(`{"assistant_id":"` + id + `","input":{"messages":[{"role":"user","content":"` + deep.Task + `"}]}}`)
	state()
	if len(st.Interrupts) != 1 || !strings.Contains(string(st.Interrupts[0].Value), `"tool":"write_file"`) || !strings.Contains(string(st.Interrupts[0].Value), deep.Brief) {
		t.Fatalf("want the brief's approval: %+v", st.Interrupts)
	}
	if got := file(deep.Notes); got != deep.NotesText {
		t.Errorf("the researcher's notes in the store: %q", got)
	}
	if file(deep.Brief) != "" {
		t.Fatal("the brief was saved before it was approved")
	}

	run(`{"assistant_id":"` + id + `","command":{"resume":{"action":"approve"}}}`)
	state()
	if len(st.Interrupts) != 0 || len(st.Values.Todos) != 3 {
		t.Fatalf("after approval: %+v", st)
	}
	for _, td := range st.Values.Todos {
		if td.Status != "completed" {
			t.Errorf("to-do %q is %s", td.Content, td.Status)
		}
	}
	if last := st.Values.Messages[len(st.Values.Messages)-1]; toText(last.Content) != deep.DeliveredText {
		t.Errorf("answer %v", last.Content)
	}
	if got := file(deep.Brief); got != deep.BriefText {
		t.Errorf("the brief in the store: %q", got)
	}
}
