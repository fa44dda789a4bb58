package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
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
