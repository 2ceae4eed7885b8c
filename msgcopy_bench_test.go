package session_test

import (
	"testing"

	"github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

// BenchmarkMessagesCopy asks for the messages of a session of 1,000 W10k
// turns: the cost of the copy rule, per message handed out.
func BenchmarkMessagesCopy(b *testing.B) {
	s := session.New()
	msgs := workload.Messages(0, 1000)
	for i := 0; i < len(msgs); i += 3 {
		if err := s.SaveTurn(b.Context(), msgs[i:i+3], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		out, err := s.Messages(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		n += len(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
}
