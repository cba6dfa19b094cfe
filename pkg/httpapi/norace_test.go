//go:build !race

package httpapi

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
