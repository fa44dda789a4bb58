package checkpoint

import (
	"bytes"
	"fmt"
	"slices"
)

// CheckBlobs validates the blobs of a Put as every Saver must, with the
// messages the conformance suite expects: a key must not be empty, the kind
// must be Full or Delta, a delta's base must be an older version, and two
// blobs of one Put with the same key and version must be identical. It
// returns the blobs without repeats, in their order (blobs itself when
// none repeats; callers only read it).
func CheckBlobs(blobs []Blob) ([]Blob, error) {
	if len(blobs) <= smallBlobs {
		return checkFewBlobs(blobs)
	}
	type id struct {
		key     string
		version uint64
	}
	seen := make(map[id]Blob, len(blobs))
	out := make([]Blob, 0, len(blobs))
	for _, b := range blobs {
		if err := checkBlob(&b); err != nil {
			return nil, err
		}
		k := id{b.Key, b.Version}
		if old, ok := seen[k]; ok {
			if !old.Equal(b) {
				return nil, fmt.Errorf("two different blobs for key %q version %d", b.Key, b.Version)
			}
			continue
		}
		seen[k] = b
		out = append(out, b)
	}
	return out, nil
}

// smallBlobs is how many blobs CheckBlobs compares pairwise instead of
// through a map: a step's checkpoint usually carries one or two.
const smallBlobs = 8

// checkFewBlobs is CheckBlobs for a few blobs, without allocating when no
// blob repeats: it then returns blobs itself.
func checkFewBlobs(blobs []Blob) ([]Blob, error) {
	repeats := false
	for i, b := range blobs {
		if err := checkBlob(&b); err != nil {
			return nil, err
		}
		for _, old := range blobs[:i] {
			if old.Key == b.Key && old.Version == b.Version {
				if !old.Equal(b) {
					return nil, fmt.Errorf("two different blobs for key %q version %d", b.Key, b.Version)
				}
				repeats = true
				break
			}
		}
	}
	if !repeats {
		return blobs, nil
	}
	out := make([]Blob, 0, len(blobs))
	for i, b := range blobs {
		if !slices.ContainsFunc(blobs[:i], func(o Blob) bool { return o.Key == b.Key && o.Version == b.Version }) {
			out = append(out, b)
		}
	}
	return out, nil
}

// checkBlob checks one blob's key, kind and base.
func checkBlob(b *Blob) error {
	if b.Key == "" {
		return fmt.Errorf("blob version %d has an empty key", b.Version)
	}
	switch b.Kind {
	case Full:
	case Delta:
		if b.Base >= b.Version {
			return fmt.Errorf("delta blob of key %q version %d has base %d; a delta's base must be an older version", b.Key, b.Version, b.Base)
		}
	default:
		return fmt.Errorf("blob of key %q version %d has unknown kind %s", b.Key, b.Version, b.Kind)
	}
	return nil
}

// Equal reports whether two blobs are identical, data included. A Saver
// refuses a Put whose blob reuses a stored key and version with other
// content.
func (b Blob) Equal(o Blob) bool {
	return b.Key == o.Key && b.Version == o.Version && b.Kind == o.Kind && b.Base == o.Base && bytes.Equal(b.Data, o.Data)
}
