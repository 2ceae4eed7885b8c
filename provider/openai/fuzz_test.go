package openai_test

import (
	"bytes"
	"testing"

	"github.com/agentsession/session/provider/internal/convtest"
)

// FuzzStream feeds a Stream any sequence of events, one a line: its
// data, or "error " and its data for an event named error (see
// convtest.Replies.Fuzz for what must hold whatever comes).
func FuzzStream(f *testing.F) {
	replies.Fuzz(f, func(ev convtest.Event) []byte {
		if ev.Name == "error" {
			return append([]byte("error "), ev.Data...)
		}
		return ev.Data
	}, func(line []byte) (string, []byte) {
		if data, ok := bytes.CutPrefix(line, []byte("error ")); ok {
			return "error", data
		}
		return "", line
	})
}
