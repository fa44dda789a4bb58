package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Embedder turns texts into vectors for semantic search. Implementations
// are safe for concurrent use; an OpenAI-compatible one is in
// provider/openai, a deterministic one for tests in store/embedtest.
type Embedder interface {
	// Embed returns one vector of Dims() numbers per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dims is the length of every vector Embed returns.
	Dims() int
}

// ErrNoIndex means a Search asked for a semantic query on a store that was
// opened without an index (see IndexConfig).
var ErrNoIndex = errors.New("store: semantic search needs an index; open the store with an IndexConfig (an embedder and the fields to embed)")

// MaxIndexTexts is the most texts one item's fields may yield for
// embedding; a Put over it fails rather than send an unbounded batch.
const MaxIndexTexts = 256

// IndexConfig makes a store embed chosen fields of the items put into it
// and answer Query.Text by similarity, like LangGraph's store `index`
// setting {dims, embed, fields}.
type IndexConfig struct {
	// Embedder makes the vectors; required.
	Embedder Embedder
	// Fields are the paths of the value to embed by default, each path
	// embedded on its own: "$" is the whole value, "a.b" a nested field,
	// "tags[*]" every element of an array and "tags[0]" one element (a
	// negative index counts from the end). A string is embedded as it is,
	// any other value as its JSON. A path that is missing in a value
	// yields nothing. Empty means ["$"].
	Fields []string
}

// Validate reports a missing embedder, a non-positive dimension or a
// malformed field path.
func (c IndexConfig) Validate() error {
	if c.Embedder == nil {
		return errors.New("store: index: no embedder; set IndexConfig.Embedder")
	}
	if d := c.Embedder.Dims(); d <= 0 {
		return fmt.Errorf("store: index: the embedder has %d dimensions; it must have at least one", d)
	}
	for _, f := range c.Fields {
		if _, err := parsePath(f); err != nil {
			return err
		}
	}
	return nil
}

// FieldsFor returns the paths a Put with opts embeds: none when
// opts.NoIndex, opts.Index when set, else the config's fields (["$"] when
// empty).
func (c IndexConfig) FieldsFor(opts PutOptions) []string {
	switch {
	case opts.NoIndex:
		return nil
	case opts.Index != nil:
		return opts.Index
	case len(c.Fields) > 0:
		return c.Fields
	}
	return []string{"$"}
}

// Vector is one embedded text of an item: the path it came from (with
// array indices resolved, e.g. "tags[2]") and its vector.
type Vector struct {
	Path   string
	Vector []float32
}

// EmbedItem extracts the texts at the given paths of value and embeds
// them in one call. It returns no vectors (and makes no call) when the
// paths yield no text. Backends call it on Put before writing, so a
// failing embedder leaves the item as it was.
func (c IndexConfig) EmbedItem(ctx context.Context, value json.RawMessage, paths []string) ([]Vector, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	texts, err := IndexTexts(value, paths)
	if err != nil || len(texts) == 0 {
		return nil, err
	}
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = t.Text
	}
	vecs, err := c.embed(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]Vector, len(texts))
	for i, t := range texts {
		out[i] = Vector{Path: t.Path, Vector: Normalize(vecs[i])}
	}
	return out, nil
}

// EmbedQuery embeds a search query, scaled to length 1 like the stored
// vectors (see Normalize).
func (c IndexConfig) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := c.embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return Normalize(vecs[0]), nil
}

// Normalize scales v in place to length 1 (an all-zero v stays zero) and
// returns it. Stores keep vectors normalized, so a cosine similarity is a
// dot product (Dot) at search time.
func Normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	s := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return v
}

// Dot returns the dot product of a and b, which must have the same
// length: the cosine similarity of normalized vectors.
func Dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0 + s1 + s2 + s3)
}

// embed calls the embedder and checks the shape of its answer.
func (c IndexConfig) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := c.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("store: embed %d texts: %w", len(texts), err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("store: the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	d := c.Embedder.Dims()
	for i, v := range vecs {
		if len(v) != d {
			return nil, fmt.Errorf("store: the embedder returned a vector of %d numbers for text %d; its Dims() is %d", len(v), i, d)
		}
	}
	return vecs, nil
}

// IndexedText is one text found at a path of a value.
type IndexedText struct {
	Path string
	Text string
}

// IndexTexts returns the texts at paths in value (see IndexConfig.Fields),
// at most MaxIndexTexts of them.
func IndexTexts(value json.RawMessage, paths []string) ([]IndexedText, error) {
	var doc any
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("store: index: value is not valid JSON: %w", err)
	}
	var out []IndexedText
	for _, p := range paths {
		steps, err := parsePath(p)
		if err != nil {
			return nil, err
		}
		if err := collect(doc, steps, "", &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pathStep is one step of a field path: a field name, an array index, or
// every element (wildcard).
type pathStep struct {
	field    string
	index    int
	isIndex  bool
	wildcard bool
}

// ValidateFieldPath reports a malformed index field path (see
// IndexConfig.Fields).
func ValidateFieldPath(p string) error {
	_, err := parsePath(p)
	return err
}

// parsePath parses "$", "a.b", "a[*].b", "a[0]", "a[-1]".
func parsePath(p string) ([]pathStep, error) {
	bad := func(why string) error {
		return fmt.Errorf("store: index: field path %q: %s; write paths like \"$\", \"text\", \"a.b\", \"tags[*]\" or \"tags[0]\"", p, why)
	}
	if p == "$" {
		return nil, nil
	}
	if p == "" {
		return nil, bad("it is empty")
	}
	var steps []pathStep
	for _, part := range strings.Split(p, ".") {
		name, rest, bracket := strings.Cut(part, "[")
		if name == "" && (len(steps) == 0 || !bracket) {
			return nil, bad("a field name is empty")
		}
		if bracket && rest == "" {
			return nil, bad("a '[' is not closed")
		}
		if name != "" {
			steps = append(steps, pathStep{field: name})
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return nil, bad("a '[' is not closed")
			}
			switch {
			case idx == "*":
				steps = append(steps, pathStep{wildcard: true})
			default:
				n, err := strconv.Atoi(idx)
				if err != nil {
					return nil, bad("an index is neither a number nor *")
				}
				steps = append(steps, pathStep{index: n, isIndex: true})
			}
			if after == "" {
				break
			}
			if after[0] != '[' {
				return nil, bad("text follows a ']'")
			}
			rest = after[1:]
		}
	}
	return steps, nil
}

// collect appends the texts at steps under v; at names the path so far.
func collect(v any, steps []pathStep, at string, out *[]IndexedText) error {
	if len(steps) == 0 {
		if len(*out) >= MaxIndexTexts {
			return fmt.Errorf("store: index: the value yields more than %d texts to embed; index fewer fields", MaxIndexTexts)
		}
		text, ok := v.(string)
		if !ok {
			if v == nil {
				return nil // null has nothing to embed
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			text = string(b)
		}
		*out = append(*out, IndexedText{Path: cmpOr(at, "$"), Text: text})
		return nil
	}
	s := steps[0]
	switch {
	case s.wildcard || s.isIndex:
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		if s.wildcard {
			for i, e := range arr {
				if err := collect(e, steps[1:], at+"["+strconv.Itoa(i)+"]", out); err != nil {
					return err
				}
			}
			return nil
		}
		i := s.index
		if i < 0 {
			i += len(arr)
		}
		if i < 0 || i >= len(arr) {
			return nil
		}
		return collect(arr[i], steps[1:], at+"["+strconv.Itoa(i)+"]", out)
	default:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		e, ok := obj[s.field]
		if !ok {
			return nil
		}
		if at != "" {
			at += "."
		}
		return collect(e, steps[1:], at+s.field, out)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Cosine returns the cosine similarity of a and b, in [-1, 1]; 0 when
// either is all zeros. a and b must have the same length.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// EncodeVector encodes v as little-endian float32s, the form the SQL
// backends keep vectors in.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector decodes EncodeVector's output into dst (reusing its
// memory) and reports a length that is not a multiple of four.
func DecodeVector(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("store: a stored vector has %d bytes, not a multiple of 4", len(b))
	}
	dst = dst[:0]
	for i := 0; i+4 <= len(b); i += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return dst, nil
}
