package convtest

import (
	"context"
	"encoding/json"
	"io"
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

// BenchConvert benchmarks a provider's conversion of the W10k context:
// into a new slice ("new"), into a reused one ("reuse"), and converted
// then marshalled to the wire JSON as the request request makes
// ("marshal"). appendMessages is the package's AppendMessages with its
// options.
func BenchConvert[M any](b *testing.B, appendMessages func(dst []M, msgs []*session.Message) []M, request func([]M) any) {
	msgs := W10k(b)
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			appendMessages(make([]M, 0, len(msgs)+1), msgs)
		}
		PerMessage(b, len(msgs))
	})
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []M
		for b.Loop() {
			buf = appendMessages(buf[:0], msgs)
		}
		PerMessage(b, len(msgs))
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		enc := json.NewEncoder(io.Discard)
		for b.Loop() {
			if err := enc.Encode(request(appendMessages(make([]M, 0, len(msgs)+1), msgs))); err != nil {
				b.Fatal(err)
			}
		}
		PerMessage(b, len(msgs))
	})
}

// BenchConvertMarshal benchmarks converting the W10k context and
// marshalling the request, as a host does for every request: convert
// appends the messages to dst (a slice reused from one request to the
// next), marshal appends the request's body for them to buf (reused too)
// and returns it. It reports ns/msg, the time per message of the
// context, converted and marshalled.
func BenchConvertMarshal[M any](b *testing.B, convert func(dst []M, msgs []*session.Message) []M, marshal func(buf []byte, m []M) ([]byte, error)) {
	msgs := W10k(b)
	b.ReportAllocs()
	var dst []M
	var buf []byte
	var err error
	for b.Loop() {
		dst = convert(dst[:0], msgs)
		if buf, err = marshal(buf[:0], dst); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	PerMessage(b, len(msgs))
}
