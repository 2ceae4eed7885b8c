package session

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentsession/session/internal/jsonx"
)

// Differential tests: the generated codec against the old hand-written one
// (codec_oracle_test.go).

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func sameErr(t *testing.T, what string, a, b error) {
	t.Helper()
	if errText(a) != errText(b) {
		t.Fatalf("%s: error %q, old %q", what, errText(a), errText(b))
	}
}

// compareMessage checks every operation on m against the old codec. m is
// not changed.
func compareMessage(t *testing.T, m *Message) {
	t.Helper()
	if a, b := m.sizeHint(), m.oldSizeHint(); a != b {
		t.Fatalf("sizeHint %d, old %d", a, b)
	}
	a, va, ea := m.appendJSON([]byte("x"))
	b, vb, eb := m.oldAppendJSON([]byte("x"))
	sameErr(t, "appendJSON", ea, eb)
	if string(a) != string(b) || va != vb {
		t.Fatalf("appendJSON:\n new %q %v\n old %q %v", a, va, b, vb)
	}
	a, ea = m.MarshalJSON()
	b, eb = m.oldMarshalJSON()
	sameErr(t, "MarshalJSON", ea, eb)
	if string(a) != string(b) {
		t.Fatalf("MarshalJSON:\n new %q\n old %q", a, b)
	}
	if m.Content != nil {
		a, ea = appendContent(nil, m.Content, m.ContentIsString())
		b, eb = oldAppendContent(nil, m.Content, m.ContentIsString())
		sameErr(t, "appendContent", ea, eb)
		if string(a) != string(b) {
			t.Fatalf("appendContent:\n new %q\n old %q", a, b)
		}
		for i := range m.Content {
			a, ea = m.Content[i].MarshalJSON()
			b, eb = m.Content[i].oldMarshalJSON()
			sameErr(t, "Block.MarshalJSON", ea, eb)
			if string(a) != string(b) {
				t.Fatalf("Block.MarshalJSON:\n new %q\n old %q", a, b)
			}
		}
	}
	if m.Usage != nil {
		a, ea = m.Usage.MarshalJSON()
		b, eb = m.Usage.oldMarshalJSON()
		sameErr(t, "Usage.MarshalJSON", ea, eb)
		if string(a) != string(b) {
			t.Fatalf("Usage.MarshalJSON:\n new %q\n old %q", a, b)
		}
	}
	c1, c2 := m.Clone(), m.oldClone()
	if !reflect.DeepEqual(deNaN(c1), deNaN(c2)) {
		t.Fatalf("Clone:\n new %#v\n old %#v", c1, c2)
	}
	for _, valid := range []bool{false, true} {
		x, y := m.oldClone(), m.oldClone()
		okx, oky := x.canonicalize(valid), y.oldCanonicalize(valid)
		if okx != oky {
			t.Fatalf("canonicalize(%v): %v, old %v", valid, okx, oky)
		}
		if okx && !reflect.DeepEqual(x, y) {
			t.Fatalf("canonicalize(%v):\n new %#v\n old %#v", valid, x, y)
		}
	}
}

// deNaN replaces NaN costs, which reflect.DeepEqual never finds equal.
func deNaN(m *Message) *Message {
	if m.Usage != nil {
		for _, f := range []*float64{&m.Usage.Cost.Input, &m.Usage.Cost.Output, &m.Usage.Cost.CacheRead, &m.Usage.Cost.CacheWrite, &m.Usage.Cost.Total} {
			if math.IsNaN(*f) {
				*f = -12345
			}
		}
	}
	return m
}

// asBuilt returns a clone of m as if built in Go.
func asBuilt(m *Message) *Message {
	c := m.oldClone()
	c.decoded = false
	for i := range c.Content {
		c.Content[i].decoded = false
	}
	if c.Usage != nil {
		c.Usage.decoded, c.Usage.Cost.decoded = false, false
	}
	return c
}

func FuzzCodecOracleDecode(f *testing.F) {
	for _, raw := range oracleSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b Message
		ea, eb := a.UnmarshalJSON(data), b.oldUnmarshalJSON(data)
		sameErr(t, "Message.UnmarshalJSON", ea, eb)
		if ea == nil {
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("Message.UnmarshalJSON(%q):\n new %#v\n old %#v", data, a, b)
			}
			compareMessage(t, &a)
			compareMessage(t, asBuilt(&a))
		}
		// Shared raw values (copyRaw false), and where the cursor stops.
		var ca, cb jsonx.Cursor
		ca.Reset(data)
		cb.Reset(data)
		var ra, rb Message
		oka, okb := ra.read(&ca, false), rb.oldRead(&cb, false)
		if oka != okb || ca.Pos() != cb.Pos() || errText(ca.Err()) != errText(cb.Err()) {
			t.Fatalf("read(%q): %v at %d (%v), old %v at %d (%v)", data, oka, ca.Pos(), ca.Err(), okb, cb.Pos(), cb.Err())
		}
		if oka && !reflect.DeepEqual(ra, rb) {
			t.Fatalf("read(%q):\n new %#v\n old %#v", data, ra, rb)
		}
		// A member value read on its own, as customMessage does.
		for _, bit := range messageKeys {
			ca.Reset(data)
			cb.Reset(data)
			ma := Message{Role: "x", has: mRole | mContentString}
			mb := ma
			oka, okb := ma.readMember(&ca, bit, true), mb.oldReadMember(&cb, bit, true)
			if oka != okb || ca.Pos() != cb.Pos() || errText(ca.Err()) != errText(cb.Err()) {
				t.Fatalf("readMember(%q, %b): %v at %d, old %v at %d", data, bit, oka, ca.Pos(), okb, cb.Pos())
			}
			if !reflect.DeepEqual(ma, mb) {
				t.Fatalf("readMember(%q, %b):\n new %#v\n old %#v", data, bit, ma, mb)
			}
			if oka || ca.Err() != nil {
				continue // read calls clearMember only after a refused value
			}
			ma.clearMember(bit)
			mb.oldClearMember(bit)
			if !reflect.DeepEqual(ma, mb) {
				t.Fatalf("clearMember(%b):\n new %#v\n old %#v", bit, ma, mb)
			}
		}
		var ba, bb Block
		ea, eb = ba.UnmarshalJSON(data), bb.oldUnmarshalJSON(data)
		sameErr(t, "Block.UnmarshalJSON", ea, eb)
		if ea == nil && !reflect.DeepEqual(ba, bb) {
			t.Fatalf("Block.UnmarshalJSON(%q):\n new %#v\n old %#v", data, ba, bb)
		}
		var ua, ub Usage
		ea, eb = ua.UnmarshalJSON(data), ub.oldUnmarshalJSON(data)
		sameErr(t, "Usage.UnmarshalJSON", ea, eb)
		if ea == nil {
			if !reflect.DeepEqual(ua, ub) {
				t.Fatalf("Usage.UnmarshalJSON(%q):\n new %#v\n old %#v", data, ua, ub)
			}
			compareMessage(t, &Message{Role: RoleAssistant, Usage: &ua, decoded: true, has: mRole | mUsage})
		}
		var ka, kb Cost
		ca.Reset(data)
		cb.Reset(data)
		oka, okb = ka.read(&ca, true), kb.oldRead(&cb, true)
		if oka != okb || ca.Pos() != cb.Pos() {
			t.Fatalf("Cost.read(%q): %v, old %v", data, oka, okb)
		}
		if oka && !reflect.DeepEqual(ka, kb) {
			t.Fatalf("Cost.read(%q):\n new %#v\n old %#v", data, ka, kb)
		}
	})
}

var oracleSeeds = []string{
	`{"role":"user","content":"hi","timestamp":1}`,
	`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"QQ==","mimeType":"image/png"}],"timestamp":1}`,
	`{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s","redacted":false},{"type":"toolCall","id":"c","name":"n","arguments":{"a":1}}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}},"stopReason":"toolUse","timestamp":2}`,
	`{"role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"r"}],"details":{"x":[1,2]},"isError":false,"timestamp":3}`,
	`{"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/p","excludeFromContext":true,"timestamp":4}`,
	`{"role":"custom","customType":"x","content":"c","display":true,"details":null,"timestamp":5}`,
	`{"role":"branchSummary","summary":"s","fromId":"f","timestamp":6}`,
	`{"role":"compactionSummary","summary":"s","tokensBefore":9,"timestamp":7}`,
	`{"role":"user","role":5,"content":[{"type":"text","text":"a","text":1}],"zz":[1],"role":"x","exitCode":1e30,"exitCode":9223372036854775807}`,
	`{"usage":{"input":"x","cost":{"total":"y","input":1e400,"zz":1},"cost":5,"extra":true},"r\u006fle":"esc","usage":null}`,
	`{"input":1,"output":2,"cost":{},"totalTokens":null,"input":3}`,
	`{"type":"toolCall","id":"c","arguments":"s","arguments":[1],"extra":{}}`,
	`{"content":[{"type":"text"},5],"content":"\ud800","timestamp":-1.5,"isError":"no"}`,
}

// builder makes messages from fuzz bytes, as a program would build them in
// Go: any field, presence bits and decoded flag set, unknown members,
// strings that are not valid UTF-8, raw values that are not JSON.
type builder struct{ data []byte }

func (g *builder) next() int {
	if len(g.data) == 0 {
		return 0
	}
	b := int(g.data[0])
	g.data = g.data[1:]
	return b
}

func (g *builder) str() string {
	pool := []string{"", "x", "user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary",
		"compactionSummary", "text", "thinking", "image", "toolCall", "a\"b\\c\n", "\xff\xfe", "é✓", "\u2028"}
	return pool[g.next()%len(pool)]
}

func (g *builder) raw() json.RawMessage {
	pool := []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(" {\"a\": [1, 2]} "),
		json.RawMessage("{"), json.RawMessage("\"s\""), json.RawMessage("1 2"), json.RawMessage("  ")}
	return pool[g.next()%len(pool)]
}

func (g *builder) num() int64 {
	pool := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64}
	return pool[g.next()%len(pool)]
}

func (g *builder) float() float64 {
	pool := []float64{0, 0.5, -1, 1e300, math.NaN(), math.Inf(1), math.Inf(-1), 1e-7, math.Copysign(0, -1)}
	return pool[g.next()%len(pool)]
}

func (g *builder) extra() Fields {
	n := g.next() % 4
	if n == 0 {
		return nil
	}
	keys := []string{"role", "content", "usage", "exitCode", "type", "text", "arguments", "input", "cost",
		"total", "zz", "details", "weird\"key", "timestamp", "redacted"}
	var f Fields
	for range n {
		f = append(f, Field{Key: keys[g.next()%len(keys)], Value: g.raw()})
	}
	return f
}

func (g *builder) block() Block {
	b := Block{
		Type: g.str(), Text: g.str(), Thinking: g.str(), ThinkingSignature: g.str(), Redacted: g.next()%2 == 0,
		Data: g.str(), MimeType: g.str(), ID: g.str(), Name: g.str(), Arguments: g.raw(),
		has: uint16(g.next() | g.next()<<8), decoded: g.next()%2 == 0,
	}
	if g.next()%3 == 0 {
		b.Extra = g.extra()
	}
	return b
}

func (g *builder) message() *Message {
	m := &Message{
		Role: g.str(), Timestamp: g.num(), API: g.str(), Provider: g.str(), Model: g.str(),
		StopReason: g.str(), ErrorMessage: g.str(), ToolCallID: g.str(), ToolName: g.str(),
		IsError: g.next()%2 == 0, Details: g.raw(), Command: g.str(), Output: g.str(),
		Cancelled: g.next()%2 == 0, Truncated: g.next()%2 == 0, FullOutputPath: g.str(),
		ExcludeFromContext: g.next()%2 == 0, CustomType: g.str(), Display: g.next()%2 == 0,
		Summary: g.str(), FromID: g.str(), TokensBefore: g.num(),
		has: uint32(g.next() | g.next()<<8 | g.next()<<16 | g.next()<<24), decoded: g.next()%2 == 0,
		synthetic: g.next()%2 == 0,
	}
	if g.next()%2 == 0 {
		e := int(g.num())
		m.ExitCode = &e
	}
	switch g.next() % 4 {
	case 1:
		m.Content = []Block{}
	case 2, 3:
		for range 1 + g.next()%3 {
			m.Content = append(m.Content, g.block())
		}
	}
	if g.next()%2 == 0 {
		m.Usage = &Usage{
			Input: g.num(), Output: g.num(), CacheRead: g.num(), CacheWrite: g.num(), TotalTokens: g.num(),
			has: uint8(g.next()), decoded: g.next()%2 == 0,
			Cost: Cost{Input: g.float(), Output: g.float(), CacheRead: g.float(), CacheWrite: g.float(), Total: g.float(),
				has: uint8(g.next()), decoded: g.next()%2 == 0},
		}
		if g.next()%3 == 0 {
			m.Usage.Extra = g.extra()
		}
		if g.next()%3 == 0 {
			m.Usage.Cost.Extra = g.extra()
		}
	}
	if g.next()%3 == 0 {
		m.Extra = g.extra()
	}
	return m
}

func FuzzCodecOracleBuilt(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("assistant message with usage and blocks, built in Go, and some unknown members"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &builder{data: data}
		for len(g.data) > 0 {
			m := g.message()
			compareMessage(t, m)
			if out, err := m.MarshalJSON(); err == nil {
				var a, b Message
				ea, eb := a.UnmarshalJSON(out), b.oldUnmarshalJSON(out)
				sameErr(t, "decode of encoding", ea, eb)
				if ea == nil && !reflect.DeepEqual(a, b) {
					t.Fatalf("decode of %q:\n new %#v\n old %#v", out, a, b)
				}
			}
		}
	})
}

// TestCodecOracleSeeds runs the seeds of both fuzz targets and every
// message of the compatibility corpus.
func TestCodecOracleCorpus(t *testing.T) {
	for _, raw := range append(append([]string{}, oracleSeeds...), seedMessagesForOracle(t)...) {
		var a, b Message
		ea, eb := a.UnmarshalJSON([]byte(raw)), b.oldUnmarshalJSON([]byte(raw))
		sameErr(t, "UnmarshalJSON", ea, eb)
		if ea != nil {
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("UnmarshalJSON(%q):\n new %#v\n old %#v", raw, a, b)
		}
		compareMessage(t, &a)
		compareMessage(t, asBuilt(&a))
	}
}

// seedMessagesForOracle returns the message of every entry in the
// compatibility corpus.
func seedMessagesForOracle(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(oracleCompatDir, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Logf("no compat corpus at %s", oracleCompatDir)
	}
	var out []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			it, err := jsonx.Object(line)
			if err != nil {
				continue
			}
			for it.Next() {
				if it.Key() == "message" {
					out = append(out, string(it.Value()))
				}
			}
		}
	}
	t.Logf("%d messages from %d files", len(out), len(files))
	return out
}

const oracleCompatDir = "../shared/compat"
