package convo

import (
	"slices"
	"testing"
)

func turns(texts ...string) []Turn {
	out := make([]Turn, len(texts))
	for i, s := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = Turn{Role: role, Text: s}
	}
	return out
}

// A fingerprint covers the whole prefix: an edit anywhere before changes
// every later one; whitespace around a text does not count.
func TestFingerprintsChain(t *testing.T) {
	a := Fingerprints(turns("hi", "hello", "bye"))
	b := Fingerprints(turns("hi ", "hello", "bye"))
	c := Fingerprints(turns("HI", "hello", "bye"))
	if !slices.Equal(a, b) {
		t.Errorf("trimmed texts differ: %v %v", a, b)
	}
	for i := range a {
		if a[i] == c[i] {
			t.Errorf("fingerprint %d unchanged by an edit of the first message", i)
		}
	}
	if x, y := Fingerprints([]Turn{{Role: "user", Text: "a"}}), Fingerprints([]Turn{{Role: "assistant", Text: "a"}}); x[0] == y[0] {
		t.Error("the role is not in the fingerprint")
	}
}

// Unseen: after the longest answered prefix; nothing when all of it was
// answered; the last message on a thread that answered no prefix; all of
// it on a new thread.
func TestUnseen(t *testing.T) {
	msgs := turns("one", "ans", "two", "ans2", "three")
	fps := Fingerprints(msgs)
	for _, c := range []struct {
		name     string
		recorded []string
		exists   bool
		want     int // how many trailing messages are unseen
	}{
		{"new thread", nil, false, 5},
		{"answered none", []string{"zzz"}, true, 1},
		{"answered the first turn", []string{fps[1]}, true, 3},
		{"answered both turns", []string{fps[1], fps[3]}, true, 1},
		{"answered it all", []string{fps[1], fps[4]}, true, 0},
	} {
		got := Unseen(c.recorded, c.exists, msgs)
		if !slices.Equal(got, msgs[len(msgs)-c.want:]) {
			t.Errorf("%s: %v; want the last %d", c.name, got, c.want)
		}
	}
}
