// Package jsonmatch compares JSON documents the way store filters do:
// top-level field equality, with numbers compared by value (1 == 1.0) and
// strings never equal to numbers ("1" != 1). The memory and SQLite stores
// share it so their filters agree to the digit.
package jsonmatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"slices"
)

// Decode decodes one JSON value keeping numbers as json.Number, so that
// they compare exactly.
func Decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// Matches reports whether value is a JSON object whose fields equal every
// entry of filter (already decoded with Decode).
func Matches(value json.RawMessage, filter map[string]any) bool {
	if len(filter) == 0 {
		return true
	}
	v, err := Decode(value)
	if err != nil {
		return false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for field, want := range filter {
		got, ok := obj[field]
		if !ok || !Equal(got, want) {
			return false
		}
	}
	return true
}

// numberPrec is the precision in bits numbers are compared at: exact for
// integers and decimals of up to about 150 digits.
const numberPrec = 512

// Equal compares two values decoded by Decode; numbers compare by
// value.
func Equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case string:
		b, ok := b.(string)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, _, errA := big.ParseFloat(a.String(), 10, numberPrec, big.ToNearestEven)
		fb, _, errB := big.ParseFloat(b.String(), 10, numberPrec, big.ToNearestEven)
		if errA != nil || errB != nil {
			return a == b
		}
		return fa.Cmp(fb) == 0
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, Equal)
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !Equal(va, vb) {
				return false
			}
		}
		return true
	}
	return false
}
