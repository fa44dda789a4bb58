package graph

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// spaced marshals itself with spaces and HTML characters, which
// json.Marshal compacts and escapes: the wire form must do the same.
type spaced struct{ S string }

func (s spaced) MarshalJSON() ([]byte, error) {
	return []byte(`{ "s" : "` + s.S + `" }`), nil
}

type wireItem struct{ Key, Text string }

func (w wireItem) ID() string { return w.Key }

// TestWireFormUnchanged checks the pooled encoder against the encoding the
// saved checkpoints were written with: json.Marshal of the wire struct, and
// of the array of encoded writes for a delta.
func TestWireFormUnchanged(t *testing.T) {
	list := NewKey("list", Concat[string]())
	byID := NewKey("byid", MergeByID[wireItem]())
	sp := NewKey[spaced]("spaced")
	n := NewKey("n", Sum[int]())
	cases := []struct {
		k keyImpl
		w []Write
	}{
		{list, []Write{Append(list, "a<b>&c", "\u2028"), list.Overwrite([]string{"x"})}},
		{byID, []Write{Append(byID, wireItem{"1", "one"}), Remove(byID, "1")}},
		{sp, []Write{sp.Set(spaced{"<tag>"})}},
		{n, []Write{n.Set(1), n.Set(1 << 40), n.Overwrite(-3)}},
	}
	for _, c := range cases {
		parts := make([]json.RawMessage, len(c.w))
		for i, w := range c.w {
			val, err := json.Marshal(w.val)
			if err != nil {
				t.Fatal(err)
			}
			op := w.op.String()
			if w.op == opReduce {
				op = ""
			}
			want, err := json.Marshal(wireWrite{Op: op, Value: val})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.k.encodeWrite(w)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: encodeWrite = %s, want %s", c.k.Name(), got, want)
			}
			parts[i] = want
		}
		want, err := json.Marshal(parts)
		if err != nil {
			t.Fatal(err)
		}
		got, fits, err := deltaData(c.k, c.w, nil, len(want))
		if err != nil || !fits || !bytes.Equal(got, want) {
			t.Errorf("%s: deltaData = %s, %v, %v; want %s", c.k.Name(), got, fits, err, want)
		}
		if _, fits, _ := deltaData(c.k, c.w, nil, len(want)-1); fits {
			t.Errorf("%s: deltaData fits a limit one byte short", c.k.Name())
		}
		// With the encodings the tasks' pending writes hold, some or all
		// of them: the same bytes.
		for _, every := range []bool{false, true} {
			encs := make([][]byte, len(c.w))
			for i := range encs {
				if every || i%2 == 1 {
					encs[i] = parts[i]
				}
			}
			got, fits, err := deltaData(c.k, c.w, encs, len(want))
			if err != nil || !fits || !bytes.Equal(got, want) {
				t.Errorf("%s: deltaData with encodings (all: %v) = %s, %v, %v; want %s", c.k.Name(), every, got, fits, err, want)
			}
		}
	}
}

// TestWireFormError checks that a value JSON cannot encode fails with the
// key named, and leaves the pooled buffer usable.
func TestWireFormError(t *testing.T) {
	k := NewKey[any]("bad")
	if _, err := k.encodeWrite(k.Set(make(chan int))); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"bad"`)) {
		t.Fatalf("err = %v, want one naming the key", err)
	}
	got, err := k.encodeWrite(k.Set(1))
	if err != nil || string(got) != `{"v":1}` {
		t.Fatalf("after an error: %s, %v", got, err)
	}
}

// TestWireScalars checks the encoder's direct path for integers, booleans
// and plain strings against encoding/json, and that what it does not take
// (escapes, floats, named types) still encodes as encoding/json does.
func TestWireScalars(t *testing.T) {
	type named int
	vals := []any{0, -1, 42, int64(-1 << 63), int32(7), uint64(1<<64 - 1), uint(3), true, false,
		"", "plain text 123", `quote"`, `back\slash`, "<tag>", "a&b", "tab\t", "é", "\x7f",
		strings.Repeat("x", 300), 1.5, named(5), nil, []int{1}}
	for _, v := range vals {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		e := getWireEncoder()
		if err := e.value(v); err != nil {
			t.Fatal(err)
		}
		if got := e.buf.String(); got != string(want) {
			t.Errorf("%T %v encodes as %s, encoding/json as %s", v, v, got, want)
		}
		e.release()
	}
	if _, ok := appendScalar(nil, named(5)); ok {
		t.Error("a named integer type took the direct path; it may have its own MarshalJSON")
	}
}

// FuzzAppendScalar checks the direct scalar encoding against json.Marshal,
// byte for byte, for every type appendScalar takes (and that it declines
// nothing json.Marshal would encode differently).
func FuzzAppendScalar(f *testing.F) {
	f.Add(int64(0), uint64(0), "", false)
	f.Add(int64(-1<<63), uint64(1<<64-1), "a<b>&c", true)
	f.Add(int64(1<<53+1), uint64(1<<53+1), "\u2028\u2029", false)
	f.Add(int64(-0), uint64(7), "\xff\xfe", true)
	f.Add(int64(42), uint64(42), "\x7f\"\\\x00/", false)
	f.Fuzz(func(t *testing.T, i int64, u uint64, s string, b bool) {
		for _, v := range []any{i, int(i), int32(i), u, uint(u), b, s} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendScalar([]byte("prefix"), v)
			if !ok {
				continue // left to the encoder
			}
			if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
				t.Fatalf("appendScalar(%T %#v) = %q, json.Marshal = %q", v, v, got, want)
			}
			e := getWireEncoder()
			if err := e.value(v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(e.buf.Bytes(), want) {
				t.Fatalf("wireEncoder.value(%T %#v) = %q, json.Marshal = %q", v, v, e.buf.Bytes(), want)
			}
			e.release()
		}
	})
}
