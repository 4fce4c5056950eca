//go:build race

package routers

// raceEnabled: the race detector allocates on its own, so allocation counts do not hold.
const raceEnabled = true
