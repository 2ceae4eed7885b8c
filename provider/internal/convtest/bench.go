package convtest

import (
	"context"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

var (
	w10kOnce sync.Once
	w10kMsgs []*session.Message
	w10kErr  error
)

// W10k returns what Session.Messages hands to a model for the W10k
// workload session (30,000 messages), built once.
func W10k(b *testing.B) []*session.Message {
	w10kOnce.Do(func() {
		var log *session.Log
		if log, w10kErr = workload.Log(workload.W10k); w10kErr != nil {
			return
		}
		w10kMsgs, w10kErr = session.OpenLog(log).Messages(context.Background())
	})
	if w10kErr != nil {
		b.Fatal(w10kErr)
	}
	return w10kMsgs
}

// PerMessage reports the benchmark's time per converted message.
func PerMessage(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/msg")
}
