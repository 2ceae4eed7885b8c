//go:build race

package redact

// raceDetector: see race_on_test.go.
const raceDetector = true
