package checkpoint

import (
	"bytes"
	"fmt"
)

// CheckBlobs validates the blobs of a Put as every Saver must, with the
// messages the conformance suite expects: a key must not be empty, the kind
// must be Full or Delta, a delta's base must be an older version, and two
// blobs of one Put with the same key and version must be identical. It
// returns the blobs without repeats, in their order.
func CheckBlobs(blobs []Blob) ([]Blob, error) {
	type id struct {
		key     string
		version uint64
	}
	seen := make(map[id]Blob, len(blobs))
	out := make([]Blob, 0, len(blobs))
	for _, b := range blobs {
		if b.Key == "" {
			return nil, fmt.Errorf("blob version %d has an empty key", b.Version)
		}
		switch b.Kind {
		case Full:
		case Delta:
			if b.Base >= b.Version {
				return nil, fmt.Errorf("delta blob of key %q version %d has base %d; a delta's base must be an older version", b.Key, b.Version, b.Base)
			}
		default:
			return nil, fmt.Errorf("blob of key %q version %d has unknown kind %s", b.Key, b.Version, b.Kind)
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

// Equal reports whether two blobs are identical, data included. A Saver
// refuses a Put whose blob reuses a stored key and version with other
// content.
func (b Blob) Equal(o Blob) bool {
	return b.Key == o.Key && b.Version == o.Version && b.Kind == o.Kind && b.Base == o.Base && bytes.Equal(b.Data, o.Data)
}
