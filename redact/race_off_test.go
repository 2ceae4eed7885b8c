//go:build !race

package redact_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
