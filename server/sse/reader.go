package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// DefaultMaxLine is the longest line a Reader accepts unless told
// otherwise.
const DefaultMaxLine = 16 << 20

// Reader parses an SSE stream by the WHATWG rules (the "event stream
// interpretation" of the HTML standard): lines end at CRLF, CR or LF; a
// leading byte-order mark is dropped; lines starting with ':' are
// comments; "field: value" loses one space after the colon; data lines
// are joined with LF; an id containing NUL is ignored; the last id
// carries over to later events; a blank line dispatches the event unless
// its data buffer is empty; a partial event at the end of input is
// dropped.
type Reader struct {
	br *bufio.Reader
	// OnComment, when set, is called with the text of each comment line
	// (without the colon and one following space).
	OnComment func(text string)
	// MaxLine bounds one line; a longer line is an error. 0 means
	// DefaultMaxLine.
	MaxLine int
	// Retry is the last valid retry: value seen (0 if none).
	Retry time.Duration

	lastID   string
	started  bool
	skipLF   bool
	line     []byte
	eventBuf string
	dataBuf  bytes.Buffer
	hasData  bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReader(r)} }

// Next returns the next dispatched event, with ID set to the last event
// id seen so far (as clients report it) and Event to the type field ("" if
// the event had none, which EventSource calls "message"). At the end of
// input it returns io.EOF.
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !r.hasData {
				r.eventBuf = ""
				continue
			}
			e := Event{ID: r.lastID, Event: r.eventBuf, Data: bytes.Clone(r.dataBuf.Bytes())}
			r.eventBuf, r.hasData = "", false
			r.dataBuf.Reset()
			return e, nil
		}
		r.field(line)
	}
}

func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		if r.OnComment != nil {
			r.OnComment(string(bytes.TrimPrefix(line[1:], []byte(" "))))
		}
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(name) {
	case "event":
		r.eventBuf = string(value)
	case "data":
		if r.hasData {
			r.dataBuf.WriteByte('\n')
		}
		r.dataBuf.Write(value)
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.lastID = string(value)
		}
	case "retry":
		if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 && isDigits(value) {
			r.Retry = time.Duration(n) * time.Millisecond
		}
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine returns the next line without its terminator. A CR at the end
// of one read is a complete line; an LF right after it is skipped on the
// next read, so the Reader never waits for a byte to decide where a line
// ends.
func (r *Reader) readLine() ([]byte, error) {
	max := r.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	r.line = r.line[:0]
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A line without a terminator at the end is discarded with
				// any event in progress.
				return nil, io.EOF
			}
			return nil, err
		}
		if r.skipLF {
			r.skipLF = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return r.bom(), nil
		case '\r':
			r.skipLF = true
			return r.bom(), nil
		}
		r.line = append(r.line, c)
		if len(r.line) > max {
			return nil, fmt.Errorf("sse: line longer than %d bytes", max)
		}
	}
}

// bom drops a UTF-8 byte-order mark at the very start of the stream.
func (r *Reader) bom() []byte {
	if !r.started {
		r.started = true
		return bytes.TrimPrefix(r.line, []byte("\xEF\xBB\xBF"))
	}
	return r.line
}
