package wire

import (
	"errors"
	"io"
)

// Body is a request body already read into memory (by the server's body
// limit, before the handler runs). It reads like any body; Decode takes
// what is left of it without copying it again.
type Body struct {
	b   []byte
	off int
}

// NewBody returns a Body reading b.
func NewBody(b []byte) *Body { return &Body{b: b} }

// Read reads the next bytes of the body.
func (b *Body) Read(p []byte) (int, error) {
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

// Close does nothing: the body is in memory.
func (b *Body) Close() error { return nil }

// rest returns the unread bytes and marks them read, as io.ReadAll would.
func (b *Body) rest() []byte {
	r := b.b[b.off:]
	b.off = len(b.b)
	return r
}

// presize is the most ReadBody allocates on a Content-Length's word before
// the bytes arrive, so a client announcing a large body and sending it
// slowly holds no more memory than it sent.
const presize = 64 << 10

// ReadBody reads r to its end, keeping at most limit+1 bytes (so a caller
// can tell a body over limit), into a buffer sized for size bytes (up to
// 64 KiB) when size (a Content-Length) is known: io.ReadAll starts at
// 512 bytes and copies as it grows.
func ReadBody(r io.Reader, size, limit int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	if size <= 0 || size > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(size, presize)+1) // +1: room for the read that sees the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than presized: grow
		}
	}
}
