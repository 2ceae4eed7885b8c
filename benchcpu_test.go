package session_test

import (
	"testing"
	"time"
)

// cpuMeter adds up the processor time (user and system, every thread of
// the process) of the timed parts of a benchmark, reported as
// cpu-ns/op: on a shared machine it moves far less with the load than
// the wall clock does. Where the system does not say (cpuNow reports
// false), nothing is reported.
type cpuMeter struct {
	total, at time.Duration
	n         int
	off       bool
}

func (m *cpuMeter) start() {
	var ok bool
	m.at, ok = cpuNow()
	m.off = m.off || !ok
}

func (m *cpuMeter) stop() {
	t, _ := cpuNow()
	m.total += t - m.at
	m.n++
}

func (m *cpuMeter) report(b *testing.B) {
	if m.n > 0 && !m.off {
		b.ReportMetric(float64(m.total.Nanoseconds())/float64(m.n), "cpu-ns/op")
	}
}
