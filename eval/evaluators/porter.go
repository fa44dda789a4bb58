package evaluators

import "strings"

// porterStem stems an English word (lower case, a-z) with Porter's
// algorithm in the variant NLTK's PorterStemmer uses by default (its
// "NLTK extensions" mode), which the ROUGE scorer behind ADK's
// response_match_score calls: a few irregular forms, "ies"/"ied" on
// four-letter words, y→i after a consonant, and Martin Porter's later
// step 2 changes (bli→ble, logi→log) plus fulli and alli.
func porterStem(w string) string {
	if len(w) <= 2 {
		return w
	}
	if s, ok := porterIrregular[w]; ok {
		return s
	}
	w = step1a(w)
	w = step1b(w)
	w = step1c(w)
	w = step2(w)
	w = step3(w)
	w = step4(w)
	w = step5(w)
	return w
}

var porterIrregular = map[string]string{
	"skies": "sky", "sky": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"news": "news", "innings": "inning", "inning": "inning", "outings": "outing",
	"outing": "outing", "cannings": "canning", "canning": "canning", "howe": "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// consonant reports whether w[i] is a consonant: not a vowel, and y only
// when at the start or after a vowel.
func consonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(w, i-1)
	}
	return true
}

// measure is m in [C](VC)^m[V].
func measure(s string) int {
	m, i, n := 0, 0, len(s)
	for i < n && consonant(s, i) {
		i++
	}
	for i < n {
		for i < n && !consonant(s, i) {
			i++
		}
		if i >= n {
			break
		}
		for i < n && consonant(s, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(s string) bool {
	for i := range len(s) {
		if !consonant(s, i) {
			return true
		}
	}
	return false
}

func endsDoubleConsonant(s string) bool {
	n := len(s)
	return n >= 2 && s[n-1] == s[n-2] && consonant(s, n-1)
}

// endsCVC is Porter's *o: consonant, vowel, consonant other than w, x, y
// (and, as NLTK extends it, a two-letter vowel-consonant word).
func endsCVC(s string) bool {
	n := len(s)
	if n >= 3 && consonant(s, n-3) && !consonant(s, n-2) && consonant(s, n-1) {
		c := s[n-1]
		return c != 'w' && c != 'x' && c != 'y'
	}
	return n == 2 && !consonant(s, 0) && consonant(s, 1)
}

func step1a(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) == 4:
		return w[:len(w)-1]
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "ies"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

func step1b(w string) string {
	if strings.HasSuffix(w, "ied") {
		if len(w) == 4 {
			return w[:len(w)-1]
		}
		return w[:len(w)-2]
	}
	if strings.HasSuffix(w, "eed") {
		if measure(w[:len(w)-3]) > 0 {
			return w[:len(w)-1]
		}
		return w
	}
	var stem string
	switch {
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]):
		stem = w[:len(w)-2]
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]):
		stem = w[:len(w)-3]
	default:
		return w
	}
	switch {
	case strings.HasSuffix(stem, "at"), strings.HasSuffix(stem, "bl"), strings.HasSuffix(stem, "iz"):
		return stem + "e"
	case endsDoubleConsonant(stem):
		c := stem[len(stem)-1]
		if c != 'l' && c != 's' && c != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	case measure(stem) == 1 && endsCVC(stem):
		return stem + "e"
	}
	return stem
}

func step1c(w string) string {
	n := len(w)
	if n > 2 && w[n-1] == 'y' && consonant(w, n-2) {
		return w[:n-1] + "i"
	}
	return w
}

type porterRule struct{ suffix, repl string }

// applyFirst applies the first rule whose suffix w ends with, when the
// stem's measure exceeds min; a matching rule whose condition fails ends
// the step.
func applyFirst(w string, rules []porterRule, min int) string {
	for _, r := range rules {
		if strings.HasSuffix(w, r.suffix) {
			stem := w[:len(w)-len(r.suffix)]
			if measure(stem) > min {
				return stem + r.repl
			}
			return w
		}
	}
	return w
}

var step2Rules = []porterRule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"fulli", "ful"},
}

func step2(w string) string {
	// NLTK: "alli" becomes "al" and the step runs again on the result.
	if strings.HasSuffix(w, "alli") && measure(w[:len(w)-4]) > 0 {
		return step2(w[:len(w)-4] + "al")
	}
	// NLTK: "logi" becomes "log" when the word without "ogi" has a
	// positive measure (the "l" counts).
	if strings.HasSuffix(w, "logi") {
		if measure(w[:len(w)-3]) > 0 {
			return w[:len(w)-1]
		}
		return w
	}
	return applyFirst(w, step2Rules, 0)
}

var step3Rules = []porterRule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func step3(w string) string { return applyFirst(w, step3Rules, 0) }

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func step4(w string) string {
	for _, s := range step4Suffixes {
		if !strings.HasSuffix(w, s) {
			continue
		}
		stem := w[:len(w)-len(s)]
		if measure(stem) <= 1 {
			return w
		}
		if s == "ion" && !(strings.HasSuffix(stem, "s") || strings.HasSuffix(stem, "t")) {
			return w
		}
		return stem
	}
	return w
}

func step5(w string) string {
	if strings.HasSuffix(w, "e") {
		stem := w[:len(w)-1]
		m := measure(stem)
		if m > 1 || (m == 1 && !endsCVC(stem)) {
			w = stem
		}
	}
	if strings.HasSuffix(w, "ll") && measure(w[:len(w)-1]) > 1 {
		w = w[:len(w)-1]
	}
	return w
}
