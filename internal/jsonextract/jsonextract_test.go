package jsonextract

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestObject(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain object", `{"a":1}`, `{"a":1}`},
		{"whitespace trimmed", " \n\t {\"a\": 1} \r\n ", `{"a": 1}`},
		{"prose before and after", `Sure! Here it is: {"name":"x","n":2} Hope that helps.`, `{"name":"x","n":2}`},
		{"json fence", "Here:\n```json\n{\"a\": [1, 2]}\n```\nDone.", `{"a": [1, 2]}`},
		{"JSON fence upper case", "```JSON\n  {\"a\":true}  \n```", `{"a":true}`},
		{"plain fence", "Result:\n```\n{\"ok\": false}\n```", `{"ok": false}`},
		{"json fence preferred over earlier bare object", "Example {\"a\":0}\n```json\n{\"a\":1}\n```", `{"a":1}`},
		{"json fence preferred over earlier plain fence", "```\n{\"a\":0}\n```\n```json\n{\"a\":1}\n```", `{"a":1}`},
		{"plain fence preferred over earlier bare object", "{\"a\":0}\n```\n{\"a\":1}\n```", `{"a":1}`},
		{"fence with array skipped", "```json\n[1]\n```\n```json\n{\"b\":2}\n```", `{"b":2}`},
		{"other language fence skipped", "```python\nx = {}\n```\n```\n{\"c\":3}\n```", `{"c":3}`},
		{"invalid fence falls back to scan", "```json\n{a: 1}\n```\nor {\"a\": 1}", `{"a": 1}`},
		{"crlf fence", "```json\r\n{\"a\":1}\r\n```\r\n", `{"a":1}`},
		{"nested objects", `x {"a":{"b":{"c":{}}},"d":[{"e":1}]} y`, `{"a":{"b":{"c":{}}},"d":[{"e":1}]}`},
		{"string with braces", `{"s":"}{ }} {{"} trailing }`, `{"s":"}{ }} {{"}`},
		{"string with escaped quote", `{"s":"say \"}\" now"}`, `{"s":"say \"}\" now"}`},
		{"string with escaped backslash", `{"s":"C:\\dir\\"} and }`, `{"s":"C:\\dir\\"}`},
		{"escaped backslash then quote then brace", `{"s":"\\\"}\\"}`, `{"s":"\\\"}\\"}`},
		{"two objects first wins", `{"first":1} {"second":2}`, `{"first":1}`},
		{"invalid balanced span then valid", `Use {name} as a placeholder. Answer: {"name":"Ada"}`, `{"name":"Ada"}`},
		{"invalid outer valid inner", `{ note: {"a":1} }`, `{"a":1}`},
		{"array skipped then object", `[1, 2, {"a": 3}] and then {"b": 4}`, `{"b": 4}`},
		{"invalid bracket prose", `see [1] and [x {"a":1}`, `{"a":1}`},
		{"unicode around", "Voilà 🎉 ça marche: {\"clé\":\"日本語\"} — fin ✓", `{"clé":"日本語"}`},
		{"invalid utf8 around", "\xff\xfe{\"a\":1}\xc3", `{"a":1}`},
		{"unclosed before valid", `{"a": {"b": 1}`, `{"b": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Object(tt.in)
			if err != nil {
				t.Fatalf("Object(%q) error: %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Object(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestObjectErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error message
	}{
		{"empty", "", []string{"no JSON object found", "contains no '{'"}},
		{"no brace", "I cannot help with that.", []string{"contains no '{'"}},
		{"only array", `[{"a":1}, {"b":2}]`, []string{"JSON array at byte offset 0", "object {...} is required"}},
		{"unterminated", `Here: {"a": 1, "b": `, []string{"not complete", "byte offset 6", "never closed"}},
		{"unterminated string", `{"a": "}`, []string{"byte offset 0", "never closed"}},
		{"invalid span", `Fill in {name} please`, []string{"found {...} at byte offset 8", "not valid JSON", "invalid character"}},
		{"lone backslash", `{\}`, []string{"byte offset 0", "not valid JSON"}},
		{"too deep", strings.Repeat("{", MaxDepth+5), []string{"more than 10000 levels"}},
		{"too deep arrays", strings.Repeat("[", MaxDepth+1), []string{"more than 10000 levels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Object(tt.in)
			if err == nil {
				t.Fatalf("Object(%.40q) = %s, want error", tt.in, got)
			}
			if !errors.Is(err, ErrNoObject) {
				t.Errorf("error %v does not wrap ErrNoObject", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestObjectPathological checks that adversarial inputs finish quickly.
func TestObjectPathological(t *testing.T) {
	inputs := []string{
		strings.Repeat("{", 200_000),
		strings.Repeat("{", MaxDepth-1) + strings.Repeat("}", MaxDepth-1),
		"{" + strings.Repeat(`\"{`, 100_000),
		strings.Repeat(`{"{"`, 100_000),
		strings.Repeat("[", 5000) + strings.Repeat("{}", 50_000),
		strings.Repeat("{x}", 100_000) + `{"a":1}`,
	}
	for _, in := range inputs {
		start := time.Now()
		_, _ = Object(in)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Object on %d bytes starting %.20q took %v", len(in), in, d)
		}
	}
}

func FuzzObject(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`{"a":1}`,
		"text ```json\n{\"a\":[1,{}]}\n``` more",
		"```\n{\"x\":\"}\"}\n```",
		`{"s":"\\\"{"} {"t":2}`,
		`[{"a":1}] {"b":2}`,
		`{"a": {"b": 1}`,
		`{\}`,
		"\xff{\"\xfe\":1}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Object(in)
		if err == nil {
			if !json.Valid(got) {
				t.Fatalf("Object(%q) = %q, not valid JSON", in, got)
			}
			if len(got) < 2 || got[0] != '{' || got[len(got)-1] != '}' {
				t.Fatalf("Object(%q) = %q, not an object", in, got)
			}
			if !strings.Contains(in, string(got)) {
				t.Fatalf("Object(%q) = %q, not a substring of the input", in, got)
			}
		} else if !errors.Is(err, ErrNoObject) {
			t.Fatalf("Object(%q) error %v does not wrap ErrNoObject", in, err)
		}
		trimmed := strings.TrimSpace(in)
		if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
			if err != nil {
				t.Fatalf("Object(%q) error %v for a valid JSON object", in, err)
			}
			if string(got) != trimmed {
				t.Fatalf("Object(%q) = %q, want the whole input %q", in, got, trimmed)
			}
		}
	})
}

// TestObjectFuncAsksOnlyAboutObjects checks that ObjectFunc's test sees
// only trimmed candidates starting with '{', that the returned object is
// the last candidate it passed, and that arrays are still judged by
// json.Valid.
func TestObjectFuncAsksOnlyAboutObjects(t *testing.T) {
	text := "```json\n{\"a\":0}\n```\n```\n {\"b\":1} \n```\n[{\"x\":1}] then {\"c\":2} and {\"d\":3}"
	var asked []string
	last := ""
	got, err := ObjectFunc(text, func(s string) bool {
		asked = append(asked, s)
		if s[0] != '{' || strings.TrimSpace(s) != s {
			t.Errorf("asked about %q", s)
		}
		ok := json.Valid([]byte(s)) && !strings.Contains(s, `"a"`) && !strings.Contains(s, `"b"`) && !strings.Contains(s, `"c"`)
		if ok {
			last = s
		}
		return ok
	})
	if err != nil || string(got) != `{"d":3}` || last != `{"d":3}` {
		t.Fatalf("ObjectFunc = %s, %v (last passed %q)", got, err, last)
	}
	// The fences' objects, then the scan's (the fences again; the array
	// and the object in it skipped whole).
	want := []string{`{"a":0}`, `{"b":1}`, `{"a":0}`, `{"b":1}`, `{"c":2}`, `{"d":3}`}
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked about %q, want %q", asked, want)
	}
}
