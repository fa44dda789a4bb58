package graph

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
)

// wireEncoder encodes writes for checkpoints into a reused buffer: the JSON
// is the same, byte for byte, as json.Marshal's (json.Encoder shares its
// encoder and escapes HTML the same way), but the only allocation left is
// the copy the caller keeps.
type wireEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var wireEncoders = sync.Pool{New: func() any {
	e := &wireEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledWire is the largest buffer put back in the pool: a one-off huge
// value does not stay in memory.
const maxPooledWire = 64 << 10

func getWireEncoder() *wireEncoder {
	e := wireEncoders.Get().(*wireEncoder)
	e.buf.Reset()
	return e
}

func (e *wireEncoder) release() {
	if e.buf.Cap() <= maxPooledWire {
		wireEncoders.Put(e)
	}
}

// value appends v's JSON encoding. Integers, booleans and strings with
// nothing to escape are written directly, byte for byte what
// encoding/json writes: a counter's or a label's value is then encoded
// without reflection (about a tenth of a step saved in memory).
func (e *wireEncoder) value(v any) error {
	if b, ok := appendScalar(e.buf.AvailableBuffer(), v); ok {
		e.buf.Write(b)
		return nil
	}
	if err := e.enc.Encode(v); err != nil {
		return err // Encode writes nothing when it fails
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode ends with a newline
	return nil
}

// write appends the wire form of a write whose value op and JSON are given:
// what json.Marshal makes of wireWrite{Op: op, Value: val}, where op is
// one of writeOp's names (no character to escape).
func (e *wireEncoder) writeHead(op string) {
	if op == "" {
		e.buf.WriteString(`{"v":`)
		return
	}
	e.buf.WriteString(`{"o":"`)
	e.buf.WriteString(op)
	e.buf.WriteString(`","v":`)
}

// deltaData encodes a step's writes to key k as a delta blob's data: the
// JSON array of their wire forms, as json.Marshal made it of the encoded
// writes. A write whose encoding encs holds (encs nil, or an entry nil:
// none) is copied from there: its task's pending write, which
// k.appendWrite made. It reports false, without copying, when the data
// would be longer than limit bytes (the caller then saves the full value).
func deltaData(k keyImpl, ws []Write, encs [][]byte, limit int) ([]byte, bool, error) {
	e := getWireEncoder()
	defer e.release()
	e.buf.WriteByte('[')
	for j, w := range ws {
		if j > 0 {
			e.buf.WriteByte(',')
		}
		if encs != nil && encs[j] != nil {
			e.buf.Write(encs[j]) // the write's pending write: the same bytes
			continue
		}
		if err := k.appendWrite(e, w); err != nil {
			return nil, false, err
		}
	}
	e.buf.WriteByte(']')
	if e.buf.Len() > limit {
		return nil, false, nil
	}
	return carveBytes(e.buf.Bytes()), true, nil
}

// appendScalar appends v's JSON encoding to b when v is an integer, a
// boolean or a string of printable ASCII that encoding/json leaves as it
// is (no quote, backslash or HTML character), and reports whether it did.
// Only those exact types: a named type may have its own MarshalJSON.
func appendScalar(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		if len(v) > 256 {
			return b, false
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return b, false
			}
		}
		b = append(b, '"')
		b = append(b, v...)
		return append(b, '"'), true
	}
	return b, false
}
