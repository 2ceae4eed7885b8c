//go:build !race

package session

// RaceEnabled says the tests run under the race detector (see
// race_on_test.go).
const RaceEnabled = false
