//go:build race

package server

// raceEnabled: the race detector allocates on its own, so allocation
// bounds are not checked under it.
const raceEnabled = true
