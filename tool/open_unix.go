//go:build unix

package tool

import (
	"os"
	"syscall"
)

// openNoBlock opens p for reading without blocking, even if p has become a
// named pipe with no writer since it was checked.
func openNoBlock(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
