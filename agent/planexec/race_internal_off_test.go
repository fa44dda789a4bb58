//go:build !race

package planexec

// raceEnabled: the race detector allocates on its own, so allocation
// counts are not checked under it.
const raceEnabled = false
