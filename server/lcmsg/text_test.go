package lcmsg

import "testing"

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":"x"},{"type":"text","text":"b"}]`, "ab"},
		{`[]`, ""},
		{`{"type":"text"}`, ""},
		{`42`, ""},
		{``, ""},
	} {
		if got := Text([]byte(c.in)); got != c.want {
			t.Errorf("Text(%s) = %q; want %q", c.in, got, c.want)
		}
	}
}
