package anthropic_test

import (
	"bytes"
	"testing"

	"github.com/agentsession/session/provider/internal/convtest"
)

// FuzzStream feeds a Stream any sequence of events, one a line: the
// event's name, a space, its data (see convtest.Replies.Fuzz for what
// must hold whatever comes).
func FuzzStream(f *testing.F) {
	replies.Fuzz(f, func(ev convtest.Event) []byte {
		return append([]byte(ev.Name+" "), ev.Data...)
	}, func(line []byte) (string, []byte) {
		name, data, _ := bytes.Cut(line, []byte(" "))
		return string(name), data
	})
}
