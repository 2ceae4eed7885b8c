package session_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/workload"
)

var (
	w10kOnce sync.Once
	w10kMsgs []*session.Message
	w10kData []byte
)

// w10k returns the W10k messages and the seed-format bytes of the session.
func w10k(b testing.TB) ([]*session.Message, []byte) {
	w10kOnce.Do(func() {
		w10kMsgs = workload.Messages(0, workload.W10k)
		log, err := workload.Log(workload.W10k)
		if err != nil {
			panic(err)
		}
		var buf bytes.Buffer
		if err := session.WriteLog(&buf, log); err != nil {
			panic(err)
		}
		w10kData = buf.Bytes()
	})
	return w10kMsgs, w10kData
}

// BenchmarkAppendW10k appends the 30,000 messages of W10k, one Append
// each, to a Session on a MemoryStore. The figure to read is ns/entry.
func BenchmarkAppendW10k(b *testing.B) {
	msgs, _ := w10k(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := session.New()
		b.StartTimer()
		for _, m := range msgs {
			if _, err := s.Append(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/entry")
}

// BenchmarkAgentLoop measures one turn of an agent loop (save the turn's
// three messages, then ask for the messages to send to the model) when
// the session already holds 100, 1,000 or 10,000 turns, three ways:
// Messages (copy), whose copies are made once per message and handed out
// again while unedited (the copy rule, msgreuse.go); SharedMessages
// (shared), the session's own list; and Context (context), the context's
// copies. The cost per turn must follow the new messages, not the
// history, but for the read of the list: compare the sizes with
// benchstat.
func BenchmarkAgentLoop(b *testing.B) {
	ctx := context.Background()
	const extra = 200 // turns added before the session is rebuilt at its size
	for _, mode := range []string{"copy", "shared", "context"} {
		for _, turns := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/turn=%d", mode, turns), func(b *testing.B) {
				history := workload.Messages(0, turns)
				next := workload.Messages(turns, turns+extra)
				get := (*session.Session).Messages
				switch mode {
				case "shared":
					get = (*session.Session).SharedMessages
				case "context":
					get = func(s *session.Session, _ context.Context) ([]*session.Message, error) {
						return s.Context().Messages, nil
					}
				}
				var s *session.Session
				k := extra
				b.ReportAllocs()
				for b.Loop() {
					if k == extra {
						b.StopTimer()
						s = session.New()
						for i := 0; i < len(history); i += 3 {
							if err := s.SaveTurn(ctx, history[i:i+3], nil); err != nil {
								b.Fatal(err)
							}
						}
						if _, err := get(s, ctx); err != nil {
							b.Fatal(err)
						}
						k = 0
						b.StartTimer()
					}
					if err := s.SaveTurn(ctx, next[3*k:3*k+3], nil); err != nil {
						b.Fatal(err)
					}
					msgs, err := get(s, ctx)
					if err != nil || len(msgs) < 3*turns {
						b.Fatal(err, len(msgs))
					}
					k++
				}
			})
		}
	}
}

// BenchmarkDecodeW10k reads the W10k log from memory (envelopes only).
func BenchmarkDecodeW10k(b *testing.B) {
	_, data := w10k(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := session.DecodeLog(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenContextW10k reads the W10k log and builds its context with
// every message decoded.
func BenchmarkOpenContextW10k(b *testing.B) {
	_, data := w10k(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		log, err := session.DecodeLog(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		s := session.OpenLog(log)
		if n := len(s.Context().Messages); n != 3*workload.W10k {
			b.Fatal(n)
		}
	}
}

// BenchmarkMessageCodec encodes and decodes the three messages of a W10k
// turn.
func BenchmarkMessageCodec(b *testing.B) {
	u, a, r := workload.Turn(7)
	for _, m := range []*session.Message{u, a, r} {
		raw, err := m.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode-"+m.Role, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode-"+m.Role, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				var x session.Message
				if err := x.UnmarshalJSON(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrepMessageW10k is what each append pays for leaving
// streaming leftovers out of a message (see Session.Append): a look for
// their names in the JSON the message holds of its own, on the copy the
// append makes, over the 30,000 messages of W10k (none has one). Compare
// prep with clone, the copy alone, per message (ns/msg).
func BenchmarkPrepMessageW10k(b *testing.B) {
	msgs, _ := w10k(b)
	for _, prep := range []bool{false, true} {
		name := "clone"
		if prep {
			name = "prep"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range msgs {
					c := m.Clone()
					if prep && session.PrepMessage(c) != c {
						b.Fatal("changed")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
		})
	}
}

// BenchmarkW10kBytes reports what the W10k session takes in the seed
// format (WriteLog's bytes), as the workload builds it ("full": replies
// with their model and usage) and as a host that sets neither writes it
// ("bare"), per session and per assistant message: the figures the
// members written for an empty field cost.
func BenchmarkW10kBytes(b *testing.B) {
	ctx := context.Background()
	for _, bare := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "bare"}[bare]
		b.Run(name, func(b *testing.B) {
			var size, replies int
			for b.Loop() {
				s := session.New()
				var buf bytes.Buffer
				for i := range workload.W10k {
					u, a, r := workload.Turn(i)
					if bare {
						a.API, a.Provider, a.Model, a.Usage = "", "", "", nil
					}
					if err := s.SaveTurn(ctx, []*session.Message{u, a, r}, nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := session.WriteLog(&buf, s.Log()); err != nil {
					b.Fatal(err)
				}
				size, replies = buf.Len(), 0
				for e := range s.Entries() {
					if m, err := e.Message(); err == nil && m.Role == session.RoleAssistant {
						replies += e.Len() + 1
					}
				}
			}
			b.ReportMetric(float64(size), "bytes/session")
			b.ReportMetric(float64(replies)/workload.W10k, "bytes/reply")
		})
	}
}

// BenchmarkClearedMessages is BenchmarkAgentLoop's turn with the cleared
// model view (ClearedMessages, defaults): a SaveTurn, then the list, on
// W10k-like histories. The cost per turn must not grow with the history
// (the list is kept and grown); tokens-before and tokens-after are the
// estimates of the list without and with clearing.
func BenchmarkClearedMessages(b *testing.B) {
	ctx := context.Background()
	const extra = 200
	for _, turns := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprintf("turn=%d", turns), func(b *testing.B) {
			history := workload.Messages(0, turns)
			next := workload.Messages(turns, turns+extra)
			var s *session.Session
			var st session.ClearStats
			k := extra
			b.ReportAllocs()
			for b.Loop() {
				if k == extra {
					b.StopTimer()
					s = session.New()
					for i := 0; i < len(history); i += 3 {
						if err := s.SaveTurn(ctx, history[i:i+3], nil); err != nil {
							b.Fatal(err)
						}
					}
					if _, _, err := s.ClearedMessages(ctx, nil); err != nil {
						b.Fatal(err)
					}
					k = 0
					b.StartTimer()
				}
				if err := s.SaveTurn(ctx, next[3*k:3*k+3], nil); err != nil {
					b.Fatal(err)
				}
				var err error
				if _, st, err = s.ClearedMessages(ctx, nil); err != nil {
					b.Fatal(err)
				}
				k++
			}
			b.ReportMetric(float64(st.TokensBefore), "tokens-before")
			b.ReportMetric(float64(st.TokensAfter), "tokens-after")
		})
	}
}
