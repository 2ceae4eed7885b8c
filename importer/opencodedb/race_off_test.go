//go:build !race

package opencodedb_test

const raceEnabled = false
