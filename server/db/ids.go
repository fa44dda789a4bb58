package db

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength is the longest ID (assistant, thread, cron, run, checkpoint)
// in bytes.
const MaxIDLength = 256

// IDProblem says what is wrong with an ID a client chose ("" when it is
// fine). The rule is one for every ID that a path names later: non-empty,
// at most MaxIDLength bytes of valid UTF-8, no control character (C0, DEL,
// C1: they cannot be carried in a path, or are mangled on the way), and
// not "." or ".." (a path cleans them away). Every wire checks IDs with it
// at create and in paths, and the stores refuse to create a row under an
// ID that breaks it (CheckID), so no object is made that no route reaches.
func IDProblem(id string) string {
	switch {
	case id == "":
		return "is empty"
	case len(id) > MaxIDLength:
		return fmt.Sprintf("is %d bytes long; IDs are at most %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return "is not valid UTF-8"
	case id == "." || id == "..":
		return fmt.Sprintf("is %q, which a URL path cannot carry", id)
	}
	for _, c := range id {
		if unicode.IsControl(c) {
			return fmt.Sprintf("contains the control character %U; IDs are printable text", c)
		}
	}
	return ""
}

// CheckID returns an error wrapping ErrInvalid when id breaks the ID rule
// (IDProblem); what names the kind of object ("thread", "assistant").
func CheckID(what, id string) error {
	if p := IDProblem(id); p != "" {
		return fmt.Errorf("db: the %s ID %q %s: %w", what, id, p, ErrInvalid)
	}
	return nil
}
