//go:build race

package opencodedb_test

// raceEnabled: the race detector slows SQLite tenfold; timed bounds skip.
const raceEnabled = true
