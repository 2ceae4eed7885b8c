package session

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestReadLogFileChunks reads logs in chunks of every size from one byte
// up: the result is what DecodeLog gives for the whole bytes.
func TestReadLogFileChunks(t *testing.T) {
	defer func(old int64) { readChunk = old }(readChunk)
	r := rand.New(rand.NewPCG(7, 7))
	header := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`
	compact := 0
	defer func() {
		if compact == 0 {
			t.Error("no entry was made compact: the test does not test compactEntry")
		}
	}()
	for round := range 60 {
		var b strings.Builder
		b.WriteString(header + "\n")
		for i := range r.IntN(40) {
			switch r.IntN(8) {
			case 0:
				b.WriteString("\n")
			case 1:
				b.WriteString(`{"type":"message","id":` + "\n")
			case 2:
				b.WriteString(`{"type":"custom","id":"x` + fmt.Sprint(i) + `","parentId":null,"data":"` + strings.Repeat("é\\\"", r.IntN(300)) + `"}` + "\n")
			case 4:
				long := strings.Repeat(`code\t\"x\" // é\n`, r.IntN(20))
				if r.IntN(4) == 0 {
					long += `\/ \u00e9` // escapes AppendString would not write
				}
				b.WriteString(`{"type":"message","id":"t` + fmt.Sprint(i) + `","parentId":"m1","timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"toolResult","toolCallId":"c` + strings.Repeat("1", r.IntN(80)) + `","content":[{"type":"text","text":"` + long + `"}],"details":{"k":"` + long + `"}},"after":"` + long + `"}` + "\n")
			case 3:
				b.WriteString(`{"type":"message","id":"b` + fmt.Sprint(i) + `","parentId":null,"message":{"role":"user","content":[{"type":"image","data":"` + BlobPrefix + strings.Repeat("a", 64) + `","mimeType":"image/png"}]}}` + "\n")
			default:
				b.WriteString(`{"type":"message","id":"m` + fmt.Sprint(i) + `","parentId":null,"message":{"role":"user","content":"` + strings.Repeat("w", r.IntN(50)) + `"}}` + "\n")
			}
		}
		data := []byte(b.String())
		switch round % 3 {
		case 1:
			data = append(data, `{"type":"message","id":"torn"`...) // a torn tail
		case 2:
			data = append(data, `{"type":"custom","id":"whole","parentId":null}`...) // whole, no newline
		}
		want, werr := DecodeLog(data, nil)
		for _, cs := range []int64{1, 2, 3, 7, 64, 333, int64(len(data))} {
			readChunk = cs
			got, _, end, err := readLogFile(bytes.NewReader(data), int64(len(data)), nil)
			if (err == nil) != (werr == nil) {
				t.Fatalf("round %d chunk %d: error %v, want %v", round, cs, err, werr)
			}
			if err != nil {
				continue
			}
			if len(got.Entries) != len(want.Entries) {
				t.Fatalf("round %d chunk %d: %d entries, want %d", round, cs, len(got.Entries), len(want.Entries))
			}
			for i := range want.Entries {
				sameEntry(t, got.Entries[i], want.Entries[i])
				if h := got.Entries[i].h; h != nil && len(h.cut) > 0 {
					compact++
				}
			}
			if fmt.Sprint(got.Malformed) != fmt.Sprint(want.Malformed) || fmt.Sprint(got.Torn) != fmt.Sprint(want.Torn) {
				t.Fatalf("round %d chunk %d: malformed %v torn %v, want %v %v", round, cs, got.Malformed, got.Torn, want.Malformed, want.Torn)
			}
			if got.refs != want.refs || string(got.Header.raw) != string(want.Header.raw) {
				t.Fatalf("round %d chunk %d: refs %v header %s", round, cs, got.refs, got.Header.raw)
			}
			if end != endOf(data) {
				t.Fatalf("round %d chunk %d: end %+v, want %+v", round, cs, end, endOf(data))
			}
		}
	}
}

// sameEntry checks that the entry readLogFile made is the one DecodeLog
// made: the same envelope, bytes and message.
func sameEntry(t *testing.T, got, want Entry) {
	t.Helper()
	if got.typ != want.typ || got.id != want.id || got.parent != want.parent || got.ts != want.ts || got.kind != want.kind {
		t.Fatalf("entry %s: envelope %q %q %q %q, want %q %q %q %q", want.id, got.typ, got.id, got.parent, got.ts, want.typ, want.id, want.parent, want.ts)
	}
	if !bytes.Equal(got.bytes(), want.raw) || !bytes.Equal(got.JSON(), want.raw) || !bytes.Equal(got.AppendJSON([]byte("x")), append([]byte("x"), want.raw...)) || got.Len() != len(want.raw) {
		t.Fatalf("entry %s: bytes\n%s\nwant\n%s", want.id, got.bytes(), want.raw)
	}
	if !reflect.DeepEqual(decodeContextMessage(got), decodeContextMessage(want)) {
		t.Fatalf("entry %s: message %+v, want %+v", want.id, decodeContextMessage(got), decodeContextMessage(want))
	}
	gm, gerr := got.Message()
	wm, werr := want.Message()
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(gm, wm) {
		t.Fatalf("entry %s: Message() = %+v, %v; want %+v, %v", want.id, gm, gerr, wm, werr)
	}
}

// sameDecodeMessages checks that DecodeLog of data with
// ReadOptions.DecodeMessages reads want, the log it reads without.
func sameDecodeMessages(t *testing.T, data []byte, opts *ReadOptions, want *Log) {
	t.Helper()
	eager := *opts
	eager.DecodeMessages = true
	got, err := DecodeLog(data, &eager)
	if err != nil {
		t.Fatalf("DecodeMessages: %v, without it no error", err)
	}
	if len(got.Entries) != len(want.Entries) || fmt.Sprint(got.Malformed) != fmt.Sprint(want.Malformed) ||
		fmt.Sprint(got.Torn) != fmt.Sprint(want.Torn) || got.MigratedFrom != want.MigratedFrom ||
		fmt.Sprint(got.Partial) != fmt.Sprint(want.Partial) || fmt.Sprint(got.Zeroed) != fmt.Sprint(want.Zeroed) {
		t.Fatalf("DecodeMessages: %d entries %v %v %v, want %d %v %v %v", len(got.Entries), got.Malformed, got.Torn, got.Partial,
			len(want.Entries), want.Malformed, want.Torn, want.Partial)
	}
	for i := range want.Entries {
		sameEntry(t, got.Entries[i], want.Entries[i])
	}
}

// TestDecodeMessagesParallel: a log long enough that DecodeLog reads it
// on several processors reads the same with ReadOptions.DecodeMessages
// (messages of every shape W10k has, markers of appends, a malformed
// line, a blob reference).
func TestDecodeMessagesParallel(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":3,"id":"s"}` + "\n")
	parent := "null"
	text := strings.Repeat(`x\t\"y\" é\n`, 200)
	for i, k := 0, 0; b.Len() < 3*parallelDecodeMin; i, k = i+1, k+1 {
		id := fmt.Sprintf("m%d", i)
		switch k % 5 {
		case 0:
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"%s"}]}}`, id, parent, text)
		case 1:
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"toolCall","id":"t%d","name":"read","arguments":{"path":"/a"}}],"provider":"p","model":"m","usage":{"input":3,"output":4}}}`, id, parent, i)
		case 2:
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"t%d","toolName":"read","content":[{"type":"text","text":"%s"}]}}`, id, parent, i-1, text)
		case 3:
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"message":{"role":"user","content":"marked"},"agentsession.append":"0/2/m%d"}`+"\n", id, parent, i+1)
			parent = strconv.Quote(id)
			i++
			id = fmt.Sprintf("m%d", i)
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"message":{"role":"user","content":"see %sab"}}`, id, parent, BlobPrefix)
		case 4:
			b.WriteString("{not json\n")
			fmt.Fprintf(&b, `{"type":"thinking_level_change","id":%q,"parentId":%s,"thinkingLevel":"low"}`, id, parent)
		}
		b.WriteString("\n")
		parent = strconv.Quote(id)
	}
	opts := &ReadOptions{}
	want, err := DecodeLog(b.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Malformed) == 0 {
		t.Fatal("no malformed line read")
	}
	sameDecodeMessages(t, b.Bytes(), opts, want)
}

// TestReadLogFileStrictAndOld: strict errors name the same line, and a
// version 1 log is migrated as DecodeLog migrates it.
func TestReadLogFileStrictAndOld(t *testing.T) {
	defer func(old int64) { readChunk = old }(readChunk)
	lines := []string{`{"type":"session","version":3,"id":"s"}`}
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"type":"custom","id":"c%d","parentId":null}`, i))
	}
	lines[17] = `{"type":"custom","id":"c16","parentId":nul}`
	data := []byte(strings.Join(lines, "\n") + "\n")
	old := []byte(`{"type":"session","id":"v1"}` + "\n" + `{"type":"message","message":{"role":"user","content":"hi"}}` + "\n")
	for _, cs := range []int64{1, 5, 100} {
		readChunk = cs
		_, _, _, err := readLogFile(bytes.NewReader(data), int64(len(data)), &ReadOptions{Strict: true})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Line != 18 {
			t.Fatalf("chunk %d: %v, want an error on line 18", cs, err)
		}
		got, raw, _, err := readLogFile(bytes.NewReader(old), int64(len(old)), nil)
		if err != nil || got.MigratedFrom != 1 || len(got.Entries) != 1 || !bytes.Equal(raw, old) {
			t.Fatalf("chunk %d: v1 log: %v, %+v", cs, err, got)
		}
	}
}

// FuzzReadLogFile reads arbitrary bytes in small chunks: the result is
// what DecodeLog gives for the whole.
func FuzzReadLogFile(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"custom","id":"a","parentId":null}`+"\n\n{bad\n"+`{"type":"custom","id":"b"`), uint8(3))
	f.Add([]byte(`{"type":"session","id":"v1"}`+"\n"+`{"type":"message","message":{"role":"user","content":"x"}}`), uint8(1))
	long := strings.Repeat(`x\t\"y\" é\n`, 8)
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"`+long+`"}]}}`+"\n"+
		`{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":"`+long+`\/"},"x":"`+long+`"}`), uint8(40))
	// Appends of several entries: one whole, one cut short, then more.
	marked := `{"type":"session","version":3,"id":"s"}` + "\n" +
		`{"type":"custom","id":"a","parentId":null,"agentsession.append":"0/2/b"}` + "\n" + `{"type":"custom","id":"b","parentId":"a"}` + "\n" +
		`{"type":"custom","id":"c","parentId":"b","agentsession.append":"0/3/e"}` + "\n" + `{"type":"custom","id":"d","parentId":"c","agentsession.append":"1/3/e"}` + "\n" +
		`{"type":"custom","id":"x","parentId":"b"}` + "\n" + `{"type":"custom","id":"y","parentId":"x","agentsession.append":"0/2/z"}` + "\n"
	f.Add([]byte(marked), uint8(7))
	f.Add([]byte(marked), uint8(60))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		defer func(old int64) { readChunk = old }(readChunk)
		readChunk = int64(chunk%64) + 1
		for k := range 4 {
			// Strict or not, under the default limits or with lines of
			// 100 bytes at most (a chunk's lines are checked too).
			opts := &ReadOptions{Strict: k%2 == 1}
			if k >= 2 {
				opts.Limits.MaxLineBytes = 100
			}
			want, werr := DecodeLog(data, opts)
			got, _, end, err := readLogFile(bytes.NewReader(data), int64(len(data)), opts)
			if (err == nil) != (werr == nil) {
				t.Fatalf("error %v, want %v", err, werr)
			}
			if err != nil {
				if err.Error() != werr.Error() {
					t.Fatalf("error %q, want %q", err, werr)
				}
				continue
			}
			if len(got.Entries) != len(want.Entries) || fmt.Sprint(got.Malformed) != fmt.Sprint(want.Malformed) ||
				fmt.Sprint(got.Torn) != fmt.Sprint(want.Torn) || got.MigratedFrom != want.MigratedFrom ||
				fmt.Sprint(got.Partial) != fmt.Sprint(want.Partial) {
				t.Fatalf("got %d entries %v %v %v, want %d %v %v %v", len(got.Entries), got.Malformed, got.Torn, got.Partial,
					len(want.Entries), want.Malformed, want.Torn, want.Partial)
			}
			for i := range want.Entries {
				sameEntry(t, got.Entries[i], want.Entries[i])
			}
			sameDecodeMessages(t, data, opts, want)
			if hasZstdMagic(data) {
				continue // FuzzCompressedLog
			}
			if end != endOf(data) {
				t.Fatalf("end %+v, want %+v", end, endOf(data))
			}
		}
	})
}

// checkMigrateFile checks that migrateFile keeps what a migration must:
// the entries DecodeLog reads from the old file, now in version 3, and
// every line that is not an entry, byte for byte.
func checkMigrateFile(t *testing.T, data []byte) {
	t.Helper()
	checkMigrateFileWith(t, data, nil)
	checkMigrateFileWith(t, data, &ReadOptions{Strict: true})
}

// checkMigrateFileWith is checkMigrateFile with read options (limits,
// strictness) for the reads and the migration. A file that the
// migration would take past the limits, or that holds a line over them,
// fails with a *LimitError.
func checkMigrateFileWith(t *testing.T, data []byte, opts *ReadOptions) {
	t.Helper()
	old, err := DecodeLog(data, opts)
	if err != nil || old.MigratedFrom == 0 {
		return
	}
	out, err := migrateFile(data, old.MigratedFrom, opts)
	var le *LimitError
	if errors.As(err, &le) {
		var lim Limits
		if opts != nil {
			lim = opts.Limits
		}
		lim = lim.withDefaults()
		if le.What == "line" && le.Size <= lim.MaxLineBytes || le.What == "log" && le.Size <= lim.MaxLogBytes {
			t.Fatalf("migrateFile: %v, within the limits", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("migrateFile: %v", err)
	}
	now, err := DecodeLog(out, opts)
	if err != nil {
		t.Fatalf("the migrated file does not read: %v\n%s", err, out)
	}
	if now.MigratedFrom != 0 || len(now.Entries) != len(old.Entries) {
		t.Fatalf("migrated from %d, %d entries; want 0, %d\n%s", now.MigratedFrom, len(now.Entries), len(old.Entries), out)
	}
	for i := range old.Entries {
		if !bytes.Equal(now.Entries[i].raw, old.Entries[i].raw) {
			t.Fatalf("entry %d: %s, want %s", i, now.Entries[i].raw, old.Entries[i].raw)
		}
	}
	if len(now.Malformed) != len(old.Malformed) || (now.Torn == nil) != (old.Torn == nil) {
		t.Fatalf("malformed %v torn %v, want %v %v", now.Malformed, now.Torn, old.Malformed, old.Torn)
	}
	if fmt.Sprint(now.Zeroed) != fmt.Sprint(old.Zeroed) || fmt.Sprint(now.Partial) != fmt.Sprint(old.Partial) {
		t.Fatalf("zeroed %v partial %v, want %v %v", now.Zeroed, now.Partial, old.Zeroed, old.Partial)
	}
	lines := bytes.Split(out, []byte{'\n'})
	origLines := bytes.Split(data, []byte{'\n'})
	for _, m := range old.Malformed {
		if orig := origLines[m.Line-1]; !bytes.Equal(lines[m.Line-1], orig) {
			t.Fatalf("line %d: %q, want it kept as %q", m.Line, lines[m.Line-1], orig)
		}
	}
	for _, z := range old.Zeroed {
		// What a crash left, up to its last zero byte, stays as it was.
		orig := origLines[z.Line-1]
		orig = orig[:bytes.LastIndexByte(orig, 0)+1]
		if !bytes.HasPrefix(lines[z.Line-1], orig) {
			t.Fatalf("line %d: %q, want it to start with %q as before", z.Line, lines[z.Line-1], orig)
		}
	}
}

// TestMigrateFileLimits: a file with a line over MaxLineBytes, which the
// reader does not read and so cannot migrate as it would, is not
// migrated (kept as it was, the line would stay one of the old version
// in a file of the new); nor is one whose migration would make a line or
// the log too long to read.
func TestMigrateFileLimits(t *testing.T) {
	long := `{"type":"message","message":{"role":"user","content":"` + strings.Repeat("x", 200) + `"}}`
	v1 := `{"type":"session","id":"v1"}` + "\n" +
		`{"type":"message","message":{"role":"user","content":"a"}}` + "\n" +
		long + "\n" +
		`{"type":"message","message":{"role":"user","content":"b"}}` + "\n"
	_, err := migrateFile([]byte(v1), 1, &ReadOptions{Limits: Limits{MaxLineBytes: 150}})
	var le *LimitError
	if !errors.As(err, &le) || le.What != "line" || le.Line != 3 || le.Size != int64(len(long)) {
		t.Errorf("a line over the limit: %v, want a *LimitError for line 3", err)
	}
	checkMigrateFileWith(t, []byte(v1), &ReadOptions{Limits: Limits{MaxLineBytes: 150}})
	checkMigrateFileWith(t, []byte(v1), &ReadOptions{Limits: Limits{MaxLineBytes: 300}})

	// An entry just under the limit that its id and parent would take
	// over it.
	near := `{"type":"message","message":{"role":"user","content":"` + strings.Repeat("y", 80) + `"}}`
	_, err = migrateFile([]byte(`{"type":"session","id":"v1"}`+"\n"+near+"\n"), 1, &ReadOptions{Limits: Limits{MaxLineBytes: int64(len(near) + 5)}})
	if !errors.As(err, &le) || le.What != "line" || le.Line != 2 {
		t.Errorf("a line the migration takes over the limit: %v, want a *LimitError for line 2", err)
	}
	// And a log it would take over its limit.
	_, err = migrateFile([]byte(`{"type":"session","id":"v1"}`+"\n"+near+"\n"), 1, &ReadOptions{Limits: Limits{MaxLogBytes: int64(len(near) + 40)}})
	if !errors.As(err, &le) || le.What != "log" {
		t.Errorf("a log the migration takes over the limit: %v, want a *LimitError", err)
	}
}

func TestMigrateFileKeepsEveryLine(t *testing.T) {
	for i, data := range []string{
		`{"type":"session","version":2,"id":"v2"}` + "\n" +
			`{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","customType":"x","content":"c"}}` + "\n" +
			`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"x"}` + "\n" + // no closing brace
			"\n" +
			`{"type":"custom","parentId":"a"}` + "\r\n" + // no id
			`{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"y"}}` + "\n" +
			`{"type":"mess`,
		`{"type":"session","id":"v1","timestamp":"2026-01-15T10:00:00.000Z"}` + "\n" +
			`{"type":"message","message":{"role":"user","content":"hi"}}` + "\n" +
			"not json at all\n" +
			`[1,2]` + "\n" +
			`{"type":"compaction","summary":"s","firstKeptEntryIndex":1}` + "\n",
		// Escapes the reader does not check in values it passes over
		// (an unknown member's): a migration takes those lines too.
		`{"type":"session","id":"v1"}` + "\n" +
			`{"type":"message","message":{"role":"user","content":"hi"},"x":"\e"}` + "\n" +
			`{"type":"","id":"a","":null,"":{"":"\e"}}` + "\n",
		`{"type":"session","version":2,"id":"v2"}` + "\n" +
			`{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","customType":"x","content":"c"},"x":"\q"}` + "\n",
		// Zero bytes a crash left before a line: the reader reads what
		// follows the last of them, so the migration migrates that and
		// keeps the zeros (the reader reports them, before and after).
		`{"type":"session","id":""}` + "\n\x00" + `{"type":"n","":1}`,
		`{"type":"session","id":"v1"}` + "\n" +
			`{"type":"message","message":{"role":"user","content":"hi"}}` + "\n" +
			"\x00\x00{\"type\":\"mess\x00\x00 " + `{"type":"message","message":{"role":"user","content":"again"}}` + "\n" +
			"\x00\x00\n",
		// A marker in a line of an older version is not one this package
		// wrote (markers are written in the current version): the reader
		// drops it, so the migration must too, or the new file would
		// read it as a torn append.
		`{"type":"session","id":"v1"}` + "\n" +
			`{"type":"message","message":{"role":"user","content":"hi"},"agentsession.append":"0/2/b"}` + "\n" +
			`{"type":"custom","customType":"x","agentsession.append":"1/3#0123456789abcdef0123456789abcdef"}` + "\n",
		`{"type":"session","version":2,"id":"v2"}` + "\n" +
			`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"},"agentsession.append":"0/2/b"}` + "\n" +
			`{"type":"message","id":"b","parentId":"a","message":{"role":"hookMessage","customType":"x","content":"c"},"agentsession.append":"1/3/c"}` + "\n" +
			`{"type":"custom","id":"c","parentId":"b","customType":"x","agentsession.append":"0/2/b","agentsession.append":"0/2/b"}` + "\n" +
			`{"type":"custom","id":"d","parentId":"c","customType":"x"}` + "\n",
		// A last line cut short that reads loosely (an escape JSON has
		// not) but not strictly: torn for a strict read, before and after.
		`{"type":"session","version":2,"id":"v2"}` + "\n" +
			`{"type":"custom","id":"a","parentId":null,"customType":"x"}` + "\n" +
			`{"type":"custom","id":"b","parentId":"a","customType":"x","data":"\e"}`,
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) { checkMigrateFile(t, []byte(data)) })
	}
}

func FuzzMigrateFile(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":2,"id":"v2"}` + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage"}}` + "\n{bad\n"))
	f.Add([]byte(`{"type":"session","id":"v1"}` + "\n" + `{"type":"message","message":{"role":"user","content":"hi"}}` + "\nx\n" + `{"type":"compaction","firstKeptEntryIndex":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMigrateFile(t, data)
		checkMigrateFileWith(t, data, &ReadOptions{Limits: Limits{MaxLineBytes: 120, MaxLogBytes: 400}})
	})
}

// TestReadLogFileLineLimit: a line over MaxLineBytes is malformed in a
// file read in chunks as in DecodeLog, wherever it falls (within a chunk
// it went to the fast path of message entries, which did not check it).
func TestReadLogFileLineLimit(t *testing.T) {
	defer func(old int64) { readChunk = old }(readChunk)
	data := []byte(`{"type":"session","version":3,"id":"s"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"short"}}` + "\n" +
		`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"` + strings.Repeat("l", 100) + `"}}` + "\n" +
		`{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"after"}}` + "\n")
	opts := &ReadOptions{Limits: Limits{MaxLineBytes: 120}}
	want, err := DecodeLog(data, opts)
	if err != nil || len(want.Entries) != 2 || len(want.Malformed) != 1 {
		t.Fatalf("DecodeLog: %v, %d entries, malformed %v", err, len(want.Entries), want.Malformed)
	}
	for _, cs := range []int64{50, 333, int64(len(data))} {
		readChunk = cs
		got, _, _, err := readLogFile(bytes.NewReader(data), int64(len(data)), opts)
		if err != nil || len(got.Entries) != 2 || fmt.Sprint(got.Malformed) != fmt.Sprint(want.Malformed) {
			t.Errorf("chunk %d: %v, %d entries, malformed %v; want 2, %v", cs, err, len(got.Entries), got.Malformed, want.Malformed)
		}
	}
}

// TestReadLogFileLazyBeforeCompaction: the messages before the last
// compaction of a file, which its context mostly leaves out, are not
// decoded as they are read; those after it are. Either way an entry is
// the one DecodeLog reads.
func TestReadLogFileLazyBeforeCompaction(t *testing.T) {
	defer func(old int64) { readChunk = old }(readChunk)
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s"}` + "\n")
	msg := func(id string) {
		b.WriteString(`{"type":"message","id":"` + id + `","parentId":null,"message":{"role":"user","content":"` + strings.Repeat(`line\n`, 30) + `"}}` + "\n")
	}
	for i := range 20 {
		msg(fmt.Sprint("a", i))
	}
	b.WriteString(`{"type":"compaction","id":"c","parentId":"a19","summary":"s","firstKeptEntryId":"a15","tokensBefore":1}` + "\n")
	for i := range 5 {
		msg(fmt.Sprint("b", i))
	}
	data := []byte(b.String())
	want, err := DecodeLog(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range []int64{50, 333, 1000, int64(len(data))} {
		readChunk = cs
		got, _, _, err := readLogFile(bytes.NewReader(data), int64(len(data)), nil)
		if err != nil || len(got.Entries) != len(want.Entries) {
			t.Fatalf("chunk %d: %v, %d entries", cs, err, len(got.Entries))
		}
		for i, e := range got.Entries {
			sameEntry(t, e, want.Entries[i])
			if decoded := e.h != nil && e.h.msg != nil; decoded != (e.id[0] == 'b') {
				t.Errorf("chunk %d: entry %s decoded as it was read: %v", cs, e.id, decoded)
			}
		}
	}
}

// FuzzCutMark: finding an append's marker at the end of any line never
// fails, and a marker found is one appendMarked would write there.
func FuzzCutMark(f *testing.F) {
	f.Add([]byte(`{"type":"custom","id":"a","agentsession.append":"0/2/b"}`))
	f.Add([]byte(`{"type":"","id":"a","agentsession.append":"}`))
	f.Add([]byte(`{"x":"agentsession.append","agentsession.append":"1/3/c"}  ` + "\r"))
	f.Fuzz(func(t *testing.T, line []byte) {
		out, m, ok := cutMark(line)
		if !ok {
			if !bytes.Equal(out, line) {
				t.Fatalf("an unmarked line changed: %q", out)
			}
			return
		}
		if want := bytes.TrimRight(line, " \t\r"); !bytes.Equal(appendMarked(nil, out, m.k, m.n, m.end), want) {
			t.Fatalf("cut %q into %q and %+v", line, out, m)
		}
	})
}
