package llm

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// treeParser reads JSON text into the tree the checker walks: the value
// encoding/json's Decoder gives with UseNumber (objects as map[string]any,
// arrays as non-nil []any, numbers as json.Number, strings unescaped with
// invalid UTF-8 and lone surrogates made U+FFFD). It reads the text once,
// where encoding/json scans it and then decodes it.
//
// It accepts only valid JSON; on anything else it reports failure and the
// caller goes back to encoding/json, whose error is the one to show.
type treeParser struct {
	data string
	pos  int
}

// parseTree reads data, which must hold one JSON value and nothing else
// but white space.
func parseTree(data string) (v any, ok bool) {
	p := treeParser{data: data}
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, false
	}
	return v, true
}

// maxTreeDepth is encoding/json's nesting limit.
const maxTreeDepth = 10_000

func (p *treeParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *treeParser) value(depth int) (any, bool) {
	p.space()
	if p.pos >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *treeParser) literal(word string) bool {
	if len(p.data)-p.pos < len(word) || p.data[p.pos:p.pos+len(word)] != word {
		return false
	}
	p.pos += len(word)
	return true
}

func (p *treeParser) object(depth int) (any, bool) {
	if depth > maxTreeDepth {
		return nil, false
	}
	p.pos++ // '{'
	m := make(map[string]any)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, true
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, false
		}
		p.pos++
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[key] = v // a repeated key: the later value wins, as in encoding/json's tree
		end, ok := p.next('}')
		if !ok {
			return nil, false
		}
		if end {
			return m, true
		}
	}
}

func (p *treeParser) array(depth int) (any, bool) {
	if depth > maxTreeDepth {
		return nil, false
	}
	p.pos++ // '['
	a := make([]any, 0)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		end, ok := p.next(']')
		if !ok {
			return nil, false
		}
		if end {
			return a, true
		}
	}
}

// next reads what follows a member or an element: a comma (more follow)
// or close (end: the object or array is done). ok is false on anything
// else.
func (p *treeParser) next(close byte) (end, ok bool) {
	p.space()
	if p.pos >= len(p.data) {
		return false, false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, true
	case close:
		p.pos++
		return true, true
	}
	return false, false
}

// number reads a number as written, checking JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *treeParser) number() (any, bool) {
	d, start := p.data, p.pos
	i := start
	digits := func() bool {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > j
	}
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	p.pos = i
	return json.Number(strings.Clone(d[start:i])), true
}

// str reads a string; p.data[p.pos] is its opening quote.
func (p *treeParser) str() (string, bool) {
	d := p.data
	start := p.pos + 1
	plain, ascii := true, true
	i := start
	for ; i < len(d); i++ {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			body := d[start:i]
			if plain && (ascii || utf8.ValidString(body)) {
				return strings.Clone(body), true // not a piece of the reply, which it would keep alive
			}
			return unescape(body)
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// unescape decodes the body of a JSON string with escapes or bytes that
// are not valid UTF-8, as encoding/json does: each invalid byte becomes
// U+FFFD, and so does a \u escape of a surrogate that is not followed by
// the escape of its other half.
func unescape(s string) (string, bool) {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(s) >= i+6 && s[i] == '\\' && s[i+1] == 'u' {
						if r2, ok := hex4(s[i+2:]); ok {
							if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
								b = utf8.AppendRune(b, pair)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return string(b), true
}

// hex4 reads the four hex digits that start s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
