package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxProblems bounds the problems a DecodeError lists: past that, one more
// says there are others.
const maxProblems = 20

// checker validates a decoded JSON value (numbers as json.Number) against a
// schema and collects every problem with the path of the value at fault.
// jsonschema-go's validator stops at the first problem and locates it by
// schema path, which a model cannot act on; the checker covers the keywords
// inferred schemas use (see checkerCovers) and the contract runs
// jsonschema-go after it for schemas that use others.
type checker struct {
	c        *contract
	problems []Problem
	full     bool
}

func (k *checker) add(path []byte, format string, args ...any) {
	if !k.full {
		k.addMsg(path, subject(path)+" "+fmt.Sprintf(format, args...))
	}
}

func (k *checker) addMsg(path []byte, msg string) {
	switch {
	case k.full:
	case len(k.problems) == maxProblems:
		k.problems = append(k.problems, Problem{Message: "there are more problems; fix these first"})
		k.full = true
	default:
		k.problems = append(k.problems, Problem{Path: string(path), Message: msg})
	}
}

// subject names the value at path in a message.
func subject(path []byte) string {
	if len(path) == 0 {
		return "the JSON value"
	}
	return "field `" + string(path) + "`"
}

func appendKey(path []byte, key string) []byte {
	if !isIdent(key) {
		return append(strconv.AppendQuote(append(path, '['), key), ']')
	}
	if len(path) > 0 {
		path = append(path, '.')
	}
	return append(path, key...)
}

func appendIndex(path []byte, i int) []byte {
	path = strconv.AppendInt(append(path, '['), int64(i), 10)
	return append(path, ']')
}

func (k *checker) check(v any, s *jsonschema.Schema, path []byte) {
	if k.full || s == nil || s.Ref != "" || s.DynamicRef != "" {
		return
	}
	if isFalse(s) {
		k.add(path, "is not allowed here")
		return
	}
	inf := k.c.info[s]
	kind := jsonKind(v)
	if !typeMatches(kind, s) {
		k.add(path, "must be %s, got %s", typeWords(s), describe(v))
		return
	}
	if inf != nil && s.Enum != nil && !slices.ContainsFunc(inf.enum, func(e any) bool { return jsonEqual(e, v) }) {
		k.add(path, "must be one of %s, got %s", enumWords(s.Enum), literalOf(v))
		return
	}
	if s.Const != nil {
		if cv, err := canonical(*s.Const); err == nil && !jsonEqual(cv, v) {
			k.add(path, "must be %s, got %s", literal(*s.Const), literalOf(v))
			return
		}
	}
	switch v := v.(type) {
	case json.Number:
		k.checkNumber(v, s, path)
	case string:
		k.checkString(v, s, inf, path)
	case []any:
		k.checkArray(v, s, inf, path)
	case map[string]any:
		k.checkObject(v, s, inf, path)
	}
}

func (k *checker) checkNumber(n json.Number, s *jsonschema.Schema, path []byte) {
	f, _ := strconv.ParseFloat(string(n), 64) // ±Inf when out of range, still comparable
	switch {
	case s.Minimum != nil && f < *s.Minimum:
		k.add(path, "must be at least %s, got %s", num(*s.Minimum), n)
	case s.Maximum != nil && f > *s.Maximum:
		k.add(path, "must be at most %s, got %s", num(*s.Maximum), n)
	case s.ExclusiveMinimum != nil && f <= *s.ExclusiveMinimum:
		k.add(path, "must be greater than %s, got %s", num(*s.ExclusiveMinimum), n)
	case s.ExclusiveMaximum != nil && f >= *s.ExclusiveMaximum:
		k.add(path, "must be less than %s, got %s", num(*s.ExclusiveMaximum), n)
	case s.MultipleOf != nil && *s.MultipleOf != 0:
		if _, frac := math.Modf(f / *s.MultipleOf); frac != 0 {
			k.add(path, "must be a multiple of %s, got %s", num(*s.MultipleOf), n)
		}
	}
}

func (k *checker) checkString(v string, s *jsonschema.Schema, inf *schemaInfo, path []byte) {
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(v)
		if s.MinLength != nil && n < *s.MinLength {
			k.add(path, "must be at least %s long, got %d", plural(*s.MinLength, "character"), n)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			k.add(path, "must be at most %s long, got %d", plural(*s.MaxLength, "character"), n)
		}
	}
	if inf != nil && inf.pattern != nil && !inf.pattern.MatchString(v) {
		k.add(path, "must match the regular expression %s, got %s", strconv.Quote(s.Pattern), literalOf(v))
	}
	if s.Format == "date-time" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			k.add(path, "must be an RFC 3339 date-time such as \"2025-03-14T15:09:26Z\", got %s", literalOf(v))
		}
	}
}

func (k *checker) checkArray(v []any, s *jsonschema.Schema, inf *schemaInfo, path []byte) {
	switch {
	case s.MinItems != nil && s.MaxItems != nil && *s.MinItems == *s.MaxItems && len(v) != *s.MinItems:
		k.add(path, "must have exactly %s, got %d", items(*s.MinItems), len(v))
	case s.MinItems != nil && len(v) < *s.MinItems:
		k.add(path, "must have at least %s, got %d", items(*s.MinItems), len(v))
	case s.MaxItems != nil && len(v) > *s.MaxItems:
		k.add(path, "must have at most %s, got %d", items(*s.MaxItems), len(v))
	}
	if inf != nil && inf.openItems || inf == nil && (s.Items == nil || isTrue(s.Items)) {
		return
	}
	for i, item := range v {
		k.check(item, s.Items, appendIndex(path, i))
	}
}

func (k *checker) checkObject(v map[string]any, s *jsonschema.Schema, inf *schemaInfo, path []byte) {
	if inf == nil {
		return
	}
	found := 0
	for i, name := range inf.order {
		if val, ok := v[name]; ok {
			found++
			k.check(val, inf.props[i], appendKey(path, name))
		} else if inf.required[name] {
			k.add(appendKey(path, name), "is required")
		}
	}
	for _, name := range inf.undeclared {
		if _, ok := v[name]; !ok {
			k.add(appendKey(path, name), "is required")
		}
	}
	if found == len(v) {
		return // every field is a declared property
	}
	var extra []string
	for name := range v {
		if _, declared := s.Properties[name]; !declared {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 || s.AdditionalProperties == nil {
		return
	}
	slices.Sort(extra)
	ap := s.AdditionalProperties
	for _, name := range extra {
		p := appendKey(path, name)
		if !isFalse(ap) {
			k.check(v[name], ap, p)
			continue
		}
		msg := "unknown field `" + string(p) + "`"
		if guess := sameFold(name, inf.order); guess != "" {
			msg += " (did you mean `" + guess + "`?)"
		} else if len(inf.order) > 0 {
			msg += " (the allowed fields are " + fieldList(inf.order) + ")"
		} else {
			msg += " (no fields are allowed there)"
		}
		k.addMsg(p, msg)
	}
}

// sameFold returns the name in names equal to name but for case, or "".
func sameFold(name string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}

// fieldList renders names as `a`, `b`, `c`, eliding past a dozen.
func fieldList(names []string) string {
	const most = 12
	parts := make([]string, 0, min(len(names), most)+1)
	for i, n := range names {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-most))
			break
		}
		parts = append(parts, "`"+n+"`")
	}
	return strings.Join(parts, ", ")
}

// backstop runs jsonschema-go's validator, for schemas using keywords the
// checker does not cover, and words its first error as well as it can.
func (k *checker) backstop(raw json.RawMessage) {
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		k.add(nil, "could not be read: %v", err)
		return
	}
	err := k.c.resolved.Validate(inst)
	if err == nil {
		return
	}
	msg := err.Error()
	// "validating root: validating /properties/x: type: ...": keep where
	// (a schema path) and what.
	where := ""
	for strings.HasPrefix(msg, "validating ") {
		head, rest, ok := strings.Cut(msg, ": ")
		if !ok {
			break
		}
		if loc := strings.TrimPrefix(head, "validating "); loc != "root" {
			where = loc
		}
		msg = rest
	}
	if where != "" {
		msg += " (at schema location " + where + ")"
	}
	k.problems = append(k.problems, Problem{Message: "the JSON does not match the schema: " + msg})
}

// jsonKind is the JSON type of a decoded value; a number is "integer" only
// when written without fraction or exponent, as Go integer fields need.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeMatches(kind string, s *jsonschema.Schema) bool {
	ok := func(t string) bool { return t == kind || t == "number" && kind == "integer" }
	if s.Type != "" {
		return ok(s.Type)
	}
	if s.Types == nil {
		return true
	}
	return slices.ContainsFunc(s.Types, ok)
}

var typeWordsOf = map[string]string{
	"null":    "null",
	"boolean": "true or false",
	"integer": "an integer (no fraction or exponent)",
	"number":  "a number",
	"string":  "a string",
	"array":   "an array",
	"object":  "an object",
}

// typeWords says what types s allows: "a string", "an array or null".
func typeWords(s *jsonschema.Schema) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	words := make([]string, 0, len(types))
	for _, t := range types {
		if t != "null" {
			words = append(words, typeWordsOf[t])
		}
	}
	if len(words) < len(types) {
		words = append(words, "null")
	}
	return strings.Join(words, " or ")
}

// describe names a decoded value for "got ...".
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "the number " + string(v)
	case string:
		return "the string " + literalOf(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

// literalOf renders a decoded scalar as JSON, cut short when long.
func literalOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	s := literal(v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func enumWords(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = literal(v)
	}
	return strings.Join(parts, ", ")
}

// items says "1 item" or "n items".
func items(n int) string { return plural(n, "item") }

// plural says "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// num renders a schema bound without a needless fraction.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// canonical turns a Go value from a schema (an enum or const) into the
// form the checker decodes JSON to.
func canonical(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		return numEqual(a, bn)
	case []any:
		bs, ok := b.([]any)
		return ok && slices.EqualFunc(a, bs, jsonEqual)
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for key, av := range a {
			bv, ok := bm[key]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// numEqual compares two JSON numbers: exactly when both are integers that
// fit in 64 bits, as float64 otherwise.
func numEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	if x, err := a.Int64(); err == nil {
		if y, err := b.Int64(); err == nil {
			return x == y
		}
	}
	x, errx := a.Float64()
	y, erry := b.Float64()
	return errx == nil && erry == nil && x == y
}
