//go:build race

package redact_test

// raceEnabled: the race detector slows the regexp engine tenfold, which
// says nothing of the rules' cost: the timing tests skip.
const raceEnabled = true
