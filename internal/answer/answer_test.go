package answer

import "testing"

func TestConfirm(t *testing.T) {
	for _, c := range []struct {
		in        string
		value, ok bool
	}{
		{`true`, true, true}, {`false`, false, true},
		{`"approve"`, true, true}, {`" Accept. "`, true, true}, {`"YES"`, true, true}, {`"确认"`, true, true}, {`"是"`, true, true},
		{`"reject"`, false, true}, {`"否"`, false, true}, {`"拒绝"`, false, true}, {`"No!"`, false, true},
		{`"maybe"`, false, false}, {`1`, false, false}, {`{"action":"approve"}`, false, false}, {`null`, false, false},
	} {
		v, ok := Confirm([]byte(c.in))
		if v != c.value || ok != c.ok {
			t.Errorf("Confirm(%s) = %v, %v; want %v, %v", c.in, v, ok, c.value, c.ok)
		}
	}
	if s, ok := String([]byte(` "x" `)); !ok || s != "x" {
		t.Errorf("String = %q %v", s, ok)
	}
	if !Object([]byte(` {"a":1}`)) || Object([]byte(`[1]`)) || !HasKey([]byte(`{"a":1}`), "b", "a") || HasKey([]byte(`{"a":1}`), "b") {
		t.Error("Object/HasKey")
	}
}
