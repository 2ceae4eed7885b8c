//go:build race

package importer_test

// raceEnabled: the race detector slows the W10k round trip twentyfold;
// it runs without it.
const raceEnabled = true
