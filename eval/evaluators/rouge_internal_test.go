package evaluators

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestPorterStem(t *testing.T) {
	for w, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "tie", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "skies": "sky", "dying": "die",
		"relational": "relat", "conditional": "condit", "rational": "ration", "digitizer": "digit",
		"conformabli": "conform", "radicalli": "radic", "differentli": "differ", "vileli": "vile",
		"analogousli": "analog", "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
		"feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope", "callousness": "callous",
		"formaliti": "formal", "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
		"formative": "form", "formalize": "formal", "electriciti": "electr", "electrical": "electr",
		"hopeful": "hope", "goodness": "good", "revival": "reviv", "allowance": "allow", "inference": "infer",
		"airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
		"irritant": "irrit", "replacement": "replac", "adjustment": "adjust", "dependent": "depend",
		"adoption": "adopt", "communism": "commun", "activate": "activ", "angulariti": "angular",
		"homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler", "probate": "probat",
		"rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
		"generalizations": "gener", "oscillators": "oscil", "hopelessly": "hopelessli", "biology": "biolog", "carefully": "care", "cried": "cri", "tied": "tie",
	} {
		if got := porterStem(w); got != want {
			t.Errorf("porterStem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestRouge1(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Punctuation and case do not count; "rolled"/"roll" stem alike.
	p, r, f := Rouge1("I rolled a 16-sided die: 13!", "Rolling a 16 sided die gave 13.")
	// candidate: i roll a 16 side die 13 (7); reference: roll a 16 side die gave 13 (7); overlap 6
	if !near(p, 6.0/7) || !near(r, 6.0/7) || !near(f, 6.0/7) {
		t.Fatalf("got p=%v r=%v f=%v, want 6/7 each", p, r, f)
	}
	// Repeated words are clipped to the reference's count.
	if _, _, f := Rouge1("yes yes yes", "yes"); !near(f, 0.5) {
		t.Fatalf("clipped f = %v, want 0.5 (p 1/3, r 1)", f)
	}
	if _, _, f := Rouge1("", ""); f != 0 {
		t.Fatalf("empty f = %v, want 0", f)
	}
	// Non-Latin text has no a-z tokens, as in ADK's scorer.
	if _, _, f := Rouge1("東京です", "東京です"); f != 0 {
		t.Fatalf("CJK f = %v, want 0", f)
	}
	// Stemming is off when either text is mostly non-Latin.
	if _, _, f := Rouge1("meetings Привет мир друзья", "meeting"); f != 0 {
		t.Fatalf("mixed script f = %v, want 0 (no stemming)", f)
	}
}

// TestPorterStemMatchesNLTK compares the stemmer with NLTK's output on a
// sample of words (testdata/porter_nltk.tsv says how it was made).
func TestPorterStemMatchesNLTK(t *testing.T) {
	data, err := os.ReadFile("testdata/porter_nltk.tsv")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		w, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		n++
		if got := porterStem(w); got != want {
			t.Errorf("porterStem(%q) = %q, NLTK says %q", w, got, want)
		}
	}
	if n < 1000 {
		t.Fatalf("only %d words checked", n)
	}
}
