package testenv

import (
	"strings"
	"testing"
)

func TestNameIsSafeAndBounded(t *testing.T) {
	t.Run("Weird/Name With-Symbols!", func(t *testing.T) {
		got := Name(t, "ABC-123", 40)
		if len(got) > 40 {
			t.Fatalf("Name = %q (%d bytes), want at most 40", got, len(got))
		}
		if strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("Name = %q has unsafe characters", got)
		}
		if !strings.HasSuffix(got, "_abc_123") {
			t.Errorf("Name = %q lost its suffix", got)
		}
	})
}
