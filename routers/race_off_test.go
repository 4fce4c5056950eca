//go:build !race

package routers

const raceEnabled = false
