package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/tool"
)

type forecastArgs struct {
	City  string   `json:"city" jsonschema:"the city to forecast"`
	Days  int      `json:"days,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Place *struct {
		Lat float64 `json:"lat"`
	} `json:"place,omitempty"`
}

type forecast struct {
	City string `json:"city"`
	Days int    `json:"days"`
}

func forecastTool(t *testing.T, ran *int) tool.Tool {
	t.Helper()
	f, err := tool.Func("forecast", "Forecast the weather.", func(_ context.Context, a forecastArgs) (forecast, error) {
		*ran++
		if a.City == "nowhere" {
			return forecast{}, errors.New("no such city")
		}
		return forecast{City: a.City, Days: a.Days}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFuncSchema(t *testing.T) {
	var ran int
	info := forecastTool(t, &ran).Info()
	if info.Name != "forecast" || info.Description != "Forecast the weather." || info.ReadOnly {
		t.Errorf("info = %+v", info)
	}
	var got, want any
	if err := json.Unmarshal(info.Parameters, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(`{
		"type": "object",
		"properties": {
			"city": {"type": "string", "description": "the city to forecast"},
			"days": {"type": "integer"},
			"tags": {"type": ["null", "array"], "items": {"type": "string"}},
			"place": {"type": ["null", "object"], "properties": {"lat": {"type": "number"}}, "required": ["lat"], "additionalProperties": false}
		},
		"required": ["city"],
		"additionalProperties": false
	}`), &want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema (-want +got):\n%s", d)
	}
	if spec := info.Spec(); spec.Name != "forecast" || string(spec.Parameters) != string(info.Parameters) {
		t.Errorf("spec = %+v", spec)
	}
	ro := tool.MustFunc("ro", "", func(context.Context, struct{}) (string, error) { return "", nil }, tool.ReadOnly())
	if !ro.Info().ReadOnly {
		t.Error("ReadOnly() did not mark the tool")
	}
}

func TestFuncArguments(t *testing.T) {
	cases := []struct {
		args    string
		problem string // empty: the call succeeds
		result  string
	}{
		{`{"city":"Oslo","days":3}`, "", `{"city":"Oslo","days":3}`},
		{`{"city":"Oslo","tags":null,"place":{"lat":59.9}}`, "", `{"city":"Oslo","days":0}`},
		{`{}`, `missing required field "city" (a string)`, ""},
		{``, `missing required field "city" (a string)`, ""},
		{`{"city":5}`, `"city" must be a string, not an integer (5)`, ""},
		{`{"city":"Oslo","days":"3"}`, `"days" must be an integer, not a string ("3")`, ""},
		{`{"city":"Oslo","days":1.5}`, `"days" must be an integer, not a number (1.5)`, ""},
		{`{"city":"Oslo","days":1e30}`, `"days": the value (number 1e30) is out of range`, ""},
		{`{"city":"Oslo","citty":"x"}`, `unknown field "citty"; the allowed fields are "city", "days", "tags", "place"`, ""},
		{`{"city":"Oslo","tags":["a",2]}`, `"tags[1]" must be a string, not an integer (2)`, ""},
		{`{"city":"Oslo","place":{}}`, `missing required field "place.lat" (a number)`, ""},
		{`{"city":"Oslo","place":{"lat":1,"lon":2}}`, `unknown field "lon" in "place"; the allowed fields are "lat"`, ""},
		{`{"city":"Oslo","place":"here"}`, `"place" must be an object or null, not a string ("here")`, ""},
		{`{"city":`, `the arguments are not valid JSON`, ""},
		{`"Oslo"`, `the arguments must be a JSON object, not a string`, ""},
		{`{"city":null,"days":"x"}`, `"city" must be a string, not null; "days" must be an integer, not a string ("x")`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			var ran int
			f := forecastTool(t, &ran)
			res, err := f.Call(context.Background(), json.RawMessage(tc.args))
			v := f.(tool.Validator).ValidateArguments(json.RawMessage(tc.args))
			if tc.problem == "" {
				if err != nil || v != nil || res != tc.result || ran != 1 {
					t.Fatalf("Call = %q, %v (validate %v, ran %d); want %q", res, err, v, ran, tc.result)
				}
				return
			}
			ae, ok := errors.AsType[*tool.ArgumentError](err)
			if !ok || ae.Tool != "forecast" || !strings.Contains(ae.Problem, tc.problem) {
				t.Fatalf("Call error = %v; want an ArgumentError saying %q", err, tc.problem)
			}
			if !tool.IsArgumentError(v) {
				t.Errorf("ValidateArguments = %v; want an ArgumentError", v)
			}
			if ran != 0 {
				t.Error("the function ran on bad arguments")
			}
		})
	}
}

func TestFuncResultsAndErrors(t *testing.T) {
	var ran int
	f := forecastTool(t, &ran)
	if _, err := f.Call(context.Background(), json.RawMessage(`{"city":"nowhere"}`)); err == nil || err.Error() != "no such city" {
		t.Errorf("error = %v; want the function's error as is", err)
	}
	s := tool.MustFunc("s", "", func(context.Context, struct{}) (string, error) { return `"not re-encoded"`, nil })
	if got, _ := s.Call(context.Background(), nil); got != `"not re-encoded"` {
		t.Errorf("string result = %s", got)
	}
	bad := tool.MustFunc("bad", "", func(context.Context, struct{}) (func(), error) { return func() {}, nil })
	if _, err := bad.Call(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "encode the result") {
		t.Errorf("unencodable result: err = %v", err)
	}
}

func TestFuncSummary(t *testing.T) {
	send := tool.MustFunc("send", "", func(context.Context, forecastArgs) (string, error) { return "", nil },
		tool.Summary(func(a forecastArgs) string { return "Forecast for " + a.City }))
	if got := send.(tool.Summarizer).Summarize(json.RawMessage(`{"city":"Oslo"}`)); got != "Forecast for Oslo" {
		t.Errorf("summary = %q", got)
	}
	plain := tool.MustFunc("plain", "", func(context.Context, forecastArgs) (string, error) { return "", nil })
	if got := plain.(tool.Summarizer).Summarize(json.RawMessage(`{"days":2, "city":"Oslo"}`)); got != `Call plain with {"city":"Oslo","days":2}` {
		t.Errorf("default summary = %q", got)
	}
}

func TestFuncRefusesBadDefinitions(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	cases := []struct {
		name string
		make func() (tool.Tool, error)
		want string
	}{
		{"empty name", func() (tool.Tool, error) { return tool.Func("", "", noop) }, "empty name"},
		{"bad character", func() (tool.Tool, error) { return tool.Func("read file", "", noop) }, `contains ' '`},
		{"too long", func() (tool.Tool, error) { return tool.Func(strings.Repeat("a", 65), "", noop) }, "at most 64"},
		{"nil function", func() (tool.Tool, error) {
			return tool.Func[struct{}, string]("f", "", nil)
		}, "function is nil"},
		{"string args", func() (tool.Tool, error) {
			return tool.Func("f", "", func(context.Context, string) (string, error) { return "", nil })
		}, "is not a JSON object"},
		{"pointer args", func() (tool.Tool, error) {
			return tool.Func("f", "", func(context.Context, *forecastArgs) (string, error) { return "", nil })
		}, "is a pointer"},
		{"interface args", func() (tool.Tool, error) {
			return tool.Func("f", "", func(context.Context, any) (string, error) { return "", nil })
		}, "no fixed shape"},
		{"channel field", func() (tool.Tool, error) {
			return tool.Func("f", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
		}, "infer the JSON schema"},
		{"summary type", func() (tool.Tool, error) {
			return tool.Func("f", "", noop, tool.Summary(func(forecastArgs) string { return "" }))
		}, "the Summary option's function is func(tool_test.forecastArgs) string"},
		{"nil option", func() (tool.Tool, error) { return tool.Func("f", "", noop, nil) }, "option is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.make()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want it to say %q", err, tc.want)
			}
		})
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "empty name") {
			t.Errorf("MustFunc panic = %v", r)
		}
	}()
	tool.MustFunc("", "", noop)
}

func TestArgumentError(t *testing.T) {
	err := tool.BadArguments("t", "%q is %d", "n", 3)
	if err.Error() != `invalid arguments for tool "t": "n" is 3` || !tool.IsArgumentError(err) {
		t.Errorf("err = %v", err)
	}
	if tool.IsArgumentError(errors.New("x")) {
		t.Error("a plain error counted as an argument error")
	}
}
