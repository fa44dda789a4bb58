package graph

import (
	"bytes"
	"encoding/json"
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

// value appends v's JSON encoding.
func (e *wireEncoder) value(v any) error {
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
// writes. It reports false, without copying, when the data would be longer
// than limit bytes (the caller then saves the full value).
func deltaData(k keyImpl, ws []Write, limit int) ([]byte, bool, error) {
	e := getWireEncoder()
	defer e.release()
	e.buf.WriteByte('[')
	for j, w := range ws {
		if j > 0 {
			e.buf.WriteByte(',')
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
