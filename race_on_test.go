//go:build race

package session

// RaceEnabled says the tests run under the race detector. The crash-state
// checker and the crash and cost tests skip then: they test what files
// hold, not concurrency, run slower fivefold, and .ci/run runs them in
// steps of their own without it.
const RaceEnabled = true
