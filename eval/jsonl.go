package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// MaxLineBytes bounds one line of a Trellis JSONL dataset (and of an
// experiment journal): a longer line is an error naming it, not an
// unbounded read.
const MaxLineBytes = 8 << 20

// header is the first line of a Trellis JSONL dataset.
type header struct {
	Name        string      `json:"name"`
	Version     string      `json:"version,omitempty"`
	Description string      `json:"description,omitempty"`
	Criteria    []Criterion `json:"criteria,omitempty"`
}

// LineError is a dataset line that does not read: Line counts from 1.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Path != "" {
		where = e.Path + ":" + fmt.Sprint(e.Line)
	}
	return where + ": " + e.Err.Error()
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadDataset reads a dataset in the Trellis JSONL format: the first
// non-blank line is a header object {"name", "version", "description",
// "criteria"}, every further non-blank line one Case. Unknown fields are
// errors (a misspelt "expect" would otherwise silently check nothing), as
// are a case with no ID, a duplicate ID, an input with both or neither of
// message and state, and an empty dataset. Errors are *LineError.
func ReadDataset(r io.Reader) (*Dataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var ds *Dataset
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if ds == nil {
			var h header
			if err := strictDecode(b, &h); err != nil {
				return nil, &LineError{Line: line, Err: fmt.Errorf("the header: %w", err)}
			}
			if h.Name == "" {
				return nil, &LineError{Line: line, Err: errors.New(`the header has no "name"; the first line is {"name": ..., "version": ..., "criteria": [...]}`)}
			}
			ds = &Dataset{Name: h.Name, Version: h.Version, Description: h.Description, Criteria: h.Criteria}
			continue
		}
		var c Case
		if err := strictDecode(b, &c); err != nil {
			return nil, &LineError{Line: line, Err: err}
		}
		if err := c.check(); err != nil {
			return nil, &LineError{Line: line, Err: err}
		}
		if prev, dup := seen[c.ID]; dup {
			return nil, &LineError{Line: line, Err: fmt.Errorf("case %q repeats the ID of line %d", c.ID, prev)}
		}
		seen[c.ID] = line
		ds.Cases = append(ds.Cases, c)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes", MaxLineBytes)
		}
		return nil, &LineError{Line: line + 1, Err: err}
	}
	if ds == nil {
		return nil, &LineError{Line: line, Err: errors.New("the dataset is empty; its first line is a header object")}
	}
	if len(ds.Cases) == 0 {
		return nil, &LineError{Line: line, Err: fmt.Errorf("dataset %q has no cases", ds.Name)}
	}
	return ds, nil
}

// LoadDataset reads a Trellis JSONL dataset file; errors name the file and
// line.
func LoadDataset(path string) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ds, err := ReadDataset(f)
	var le *LineError
	if errors.As(err, &le) {
		le.Path = path
	}
	return ds, err
}

// WriteDataset writes ds in the Trellis JSONL format ReadDataset reads:
// the header, then one case per line.
func WriteDataset(w io.Writer, ds *Dataset) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(header{Name: ds.Name, Version: ds.Version, Description: ds.Description, Criteria: ds.Criteria}); err != nil {
		return err
	}
	for i := range ds.Cases {
		if err := enc.Encode(&ds.Cases[i]); err != nil {
			return fmt.Errorf("case %q: %w", ds.Cases[i].ID, err)
		}
	}
	return nil
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// check reports what makes c unrunnable.
func (c *Case) check() error {
	if strings.TrimSpace(c.ID) == "" {
		return errors.New(`the case has no "id"`)
	}
	hasMsg, hasState := c.Input.Message != "", len(c.Input.State) > 0 && string(c.Input.State) != "null"
	if c.User != nil {
		if err := c.User.check(c.ID, len(c.Turns)); err != nil {
			return err
		}
	}
	if hasMsg && hasState || !hasMsg && !hasState && c.User == nil {
		return fmt.Errorf("case %q: the input needs exactly one of \"message\" and \"state\"", c.ID)
	}
	if hasState && !bytes.HasPrefix(bytes.TrimSpace(c.Input.State), []byte("{")) {
		return fmt.Errorf("case %q: input.state must be a JSON object", c.ID)
	}
	for i, a := range append(append([]Answer(nil), c.Answers...), turnAnswers(c.Turns)...) {
		if len(a.Value) == 0 {
			return fmt.Errorf("case %q: answer %d has no \"value\"", c.ID, i+1)
		}
		if _, err := a.compile(); err != nil {
			return fmt.Errorf("case %q: answer %d: %w", c.ID, i+1, err)
		}
	}
	for i, t := range c.Turns {
		if t.Message == "" {
			return fmt.Errorf("case %q: turn %d has no message", c.ID, i+1)
		}
	}
	return nil
}

func turnAnswers(ts []Turn) []Answer {
	var out []Answer
	for _, t := range ts {
		out = append(out, t.Answers...)
	}
	return out
}

var (
	formatsMu sync.RWMutex
	formats   = map[string]func(path string) (*Dataset, error){}
)

// RegisterFormat makes Load read files whose name ends with suffix (for
// example ".evalset.json") with load; eval/adk registers Google ADK's eval
// sets this way. It panics on a duplicate suffix or a nil load.
func RegisterFormat(suffix string, load func(path string) (*Dataset, error)) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	if load == nil || suffix == "" {
		panic("eval: RegisterFormat needs a suffix and a loader")
	}
	if _, dup := formats[suffix]; dup {
		panic("eval: RegisterFormat called twice for " + suffix)
	}
	formats[suffix] = load
}

// HasFormat reports whether a loader is registered for suffix.
func HasFormat(suffix string) bool {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	_, ok := formats[suffix]
	return ok
}

// Load reads a dataset file: with the loader registered for the end of
// its name (RegisterFormat), else as Trellis JSONL (LoadDataset).
func Load(path string) (*Dataset, error) {
	formatsMu.RLock()
	var load func(string) (*Dataset, error)
	best := 0
	for suffix, l := range formats {
		if strings.HasSuffix(path, suffix) && len(suffix) > best {
			load, best = l, len(suffix)
		}
	}
	formatsMu.RUnlock()
	if load != nil {
		return load(path)
	}
	return LoadDataset(path)
}

// DecodeCase reads one case as ReadDataset reads a line of a dataset:
// unknown fields are errors, and the case must be runnable (an ID, exactly
// one of input.message and input.state, answers with values). The
// service checks the cases it stores with it.
func DecodeCase(b []byte) (Case, error) {
	var c Case
	if err := strictDecode(bytes.TrimSpace(b), &c); err != nil {
		return Case{}, err
	}
	if err := c.check(); err != nil {
		return Case{}, err
	}
	return c, nil
}

// DecodeCriterion reads one criterion with unknown fields refused and
// checks that its evaluator is registered and accepts its params
// (New).
func DecodeCriterion(b []byte) (Criterion, error) {
	var c Criterion
	if err := strictDecode(bytes.TrimSpace(b), &c); err != nil {
		return Criterion{}, err
	}
	if _, err := New(c); err != nil {
		return Criterion{}, err
	}
	return c, nil
}
