package session_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/longtest"
)

// turnOf makes the k-th turn of a test: five messages, each holding its
// turn and part and about size bytes, a tool call and its result among
// them.
func turnOf(k, size int) []*session.Message {
	pad := strings.Repeat("p", size)
	call := fmt.Sprintf("call_%d", k)
	return []*session.Message{
		session.UserText(fmt.Sprintf("turn %d part 0 %s", k, pad)),
		session.Assistant(session.Text(fmt.Sprintf("turn %d part 1 %s", k, pad)), session.ToolCall(call, "read", []byte(`{"path":"a"}`))),
		session.ToolResult(call, "read", fmt.Sprintf("turn %d part 2 %s", k, pad)),
		session.AssistantText(fmt.Sprintf("turn %d part 3 %s", k, pad)),
		session.UserText(fmt.Sprintf("turn %d part 4 %s", k, pad)),
	}
}

// turnsIn counts, per turn, the parts a log's messages hold.
func turnsIn(t *testing.T, log *session.Log) map[int]int {
	t.Helper()
	parts := map[int]int{}
	for _, e := range log.Entries {
		m, err := e.Message()
		if err != nil {
			continue
		}
		var k, p int
		if _, err := fmt.Sscanf(m.Text(), "turn %d part %d", &k, &p); err == nil {
			parts[k]++
		}
	}
	return parts
}

// TestTurnAllOrNothingOnEveryPrefix: a file cut anywhere in what was
// appended (what a crash of the process or of the machine can leave of
// an append in flight) always opens, and each turn in it is whole or
// absent, for every reader.
func TestTurnAllOrNothingOnEveryPrefix(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-prefix", Cwd: "/w"})
	require.NoError(t, err)
	for k := range 4 {
		require.NoError(t, s.SaveTurn(ctx, turnOf(k, 300), nil))
	}
	path := sessionFileOf(t, root, "s-prefix")
	require.NoError(t, s.Close())
	data := mustRead(t, path)
	assert.Contains(t, string(data), `"agentsession.append":"0/5/`, "the lines of a turn after the first are marked")

	// The first turn went in as the whole file (renamed into place: all
	// or nothing); the others were appended, and a crash can cut those.
	first := 0
	for range 6 { // the header and turn 0
		first += bytes.IndexByte(data[first:], '\n') + 1
	}
	checked := 0
	for cut := len(data); cut >= first; cut -= 97 { // 97: cut mid-line, anywhere
		prefix := data[:cut]
		// Readers of bytes, of a stream, and of the file.
		log, err := session.DecodeLog(prefix, nil)
		require.NoError(t, err, "cut at %d", cut)
		stream, err := session.ReadLog(bytes.NewReader(prefix), nil)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, prefix, 0o600))
		fileLog, err := openFS(t, root, nil).Load(ctx, "s-prefix")
		require.NoError(t, err, "cut at %d: the file does not open", cut)
		for _, l := range []*session.Log{log, stream, fileLog} {
			for k, n := range turnsIn(t, l) {
				require.Equal(t, 5, n, "cut at %d: turn %d has %d of its 5 entries", cut, k, n)
			}
			require.Equal(t, ids(log.Entries), ids(l.Entries), "cut at %d: the readers disagree", cut)
			require.Equal(t, len(log.Partial), len(l.Partial))
		}
		// The entries read back without their markers, as appended.
		for _, e := range log.Entries {
			require.NotContains(t, string(e.JSON()), "agentsession.append")
		}
		// A verify names what was cut.
		findings, _, err := session.VerifyReader(ctx, bytes.NewReader(prefix), nil, nil)
		require.NoError(t, err)
		partial := 0
		for _, f := range findings {
			if f.Kind == session.FindingPartialAppend {
				partial++
			}
		}
		require.Equal(t, len(log.Partial), partial)
		checked++
	}
	t.Logf("%d cuts of a %d-byte file", checked, len(data))
}

// TestPartialAppendThenMore: after a crash cut a turn short, writers go
// on: the cut turn's lines stay in the file, reported, never entries, and
// what comes after is read by every path (a reload, another handle's
// catch-up, a tail read) the same way.
func TestPartialAppendThenMore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := openFS(t, root, nil)
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-cut", Cwd: "/w"})
	require.NoError(t, err)
	require.NoError(t, s.SaveTurn(ctx, turnOf(0, 50), nil))
	require.NoError(t, s.SaveTurn(ctx, turnOf(1, 50), nil))
	path := sessionFileOf(t, root, "s-cut")
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())
	// The crash: turn 1 left with its first two lines.
	data := mustRead(t, path)
	lines := strings.SplitAfter(string(data), "\n")
	require.Len(t, lines, 12) // header, 5 + 5, and "" after the last newline
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:8], "")), 0o600))

	a, err := session.Open(ctx, openFS(t, root, nil), "s-cut")
	require.NoError(t, err)
	assert.Equal(t, 5, a.Len())
	require.Len(t, a.Log().Partial, 2)
	assert.Equal(t, 7, a.Log().Partial[0].Line)
	// A handle in another store (as in another process) appends after.
	other := openFS(t, root, nil)
	b, err := session.Open(ctx, other, "s-cut")
	require.NoError(t, err)
	require.NoError(t, b.SaveTurn(ctx, turnOf(2, 50), nil))
	_, err = b.Append(ctx, session.AssistantText("turn 3 part 0 single"))
	require.NoError(t, err)
	// a learns of them with a tail read, and so does a fresh open.
	require.NoError(t, a.Reload(ctx))
	fresh, err := session.Open(ctx, openFS(t, root, nil), "s-cut")
	require.NoError(t, err)
	for _, h := range []*session.Session{a, b, fresh} {
		assert.Equal(t, 11, h.Len())
		parts := turnsIn(t, h.Log())
		assert.Equal(t, map[int]int{0: 5, 2: 5, 3: 1}, parts)
	}
	assert.Len(t, fresh.Log().Partial, 2)
	assert.Len(t, a.Log().Partial, 2)
	// The cut lines are still in the file.
	assert.Contains(t, string(mustRead(t, path)), "turn 1 part 0")
	// A prune refuses to drop them, unless asked, and so does a copy.
	_, err = fresh.Prune(ctx, nil)
	assert.ErrorIs(t, err, session.ErrCorrupt)
	assert.Contains(t, err.Error(), path)
	err = session.Copy(ctx, session.NewMemoryStore(), openFS(t, root, nil), "s-cut")
	assert.ErrorIs(t, err, session.ErrCorrupt)
	assert.Contains(t, err.Error(), "line 7")
}

// TestTurnCrash kills children saving large turns at random moments: every
// turn whose SaveTurn returned is there whole, and no turn is there in
// part.
func TestTurnCrash(t *testing.T) {
	longtest.Skip(t, "kills a child saving large turns, under each sync policy")
	if testing.Short() || session.RaceEnabled {
		t.Skip("spawns processes (run without -short and the race detector, as .ci/run's crash step does)")
	}
	rounds := 25
	if n, err := strconv.Atoi(os.Getenv("AGENTSESSION_CRASH_ROUNDS")); err == nil {
		rounds = max(n/5, 25)
	}
	for _, policy := range []string{"every", "on-flush", "never"} {
		t.Run(policy, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			store := openFS(t, root, nil)
			acked, cut := 0, 0
			for round := range rounds {
				id := fmt.Sprintf("s-turn-crash-%d", round)
				s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
				require.NoError(t, err)
				require.NoError(t, s.Close())
				cmd := child(t, "AGENTSESSION_CHILD=turn-crash", "AGENTSESSION_ROOT="+root, "AGENTSESSION_ID="+id, "AGENTSESSION_POLICY="+policy)
				cmd.Stderr = nil
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				sc := bufio.NewScanner(out)
				var done []int
				want := 1 + round%4
				for i := 0; i < want && sc.Scan(); i++ {
					k, _ := strconv.Atoi(sc.Text())
					done = append(done, k)
				}
				// A turn takes about 12 ms here, most of it encoding:
				// spread the kills over one.
				time.Sleep(time.Duration(round*7919%25) * 500 * time.Microsecond)
				require.NoError(t, cmd.Process.Kill())
				for sc.Scan() {
					k, _ := strconv.Atoi(sc.Text())
					done = append(done, k)
				}
				_ = cmd.Wait()

				log, err := openFS(t, root, nil).Load(ctx, id)
				require.NoError(t, err, "round %d: the file does not open", round)
				require.Empty(t, log.Malformed, "round %d", round)
				parts := turnsIn(t, log)
				for k, n := range parts {
					require.Equal(t, 5, n, "round %d: turn %d has %d of its 5 entries", round, k, n)
				}
				if policy != "never" {
					for _, k := range done {
						require.Equal(t, 5, parts[k], "round %d: turn %d returned and is not there", round, k)
					}
				}
				acked += len(done)
				if len(log.Partial) > 0 || log.Torn != nil {
					cut++
				}
			}
			t.Logf("%s: %d rounds, %d turns acknowledged, %d rounds killed a turn mid-write", policy, rounds, acked, cut)
		})
	}
}

// turnCrashChild saves large turns until killed, reporting each turn
// once its SaveTurn returned.
func turnCrashChild(t *testing.T) {
	ctx := context.Background()
	policy := map[string]session.SyncPolicy{"every": session.SyncEveryAppend, "on-flush": session.SyncOnFlush, "never": session.SyncNever}[os.Getenv("AGENTSESSION_POLICY")]
	store, err := session.OpenFileStore(os.Getenv("AGENTSESSION_ROOT"), &session.FileStoreOptions{Sync: policy})
	require.NoError(t, err)
	s, err := session.Open(ctx, store, os.Getenv("AGENTSESSION_ID"))
	require.NoError(t, err)
	for k := 0; ; k++ {
		// About 1.5 MB a turn: written in pieces, so a kill lands inside
		// one now and then.
		require.NoError(t, s.SaveTurn(ctx, turnOf(k, 300<<10), nil))
		os.Stdout.WriteString(strconv.Itoa(k) + "\n")
	}
}

// TestCutAppendShapes: whatever a crash leaves of an append (its end
// cut, a line in its middle lost or garbled, its lines out of order, its
// last entry's id taken by another entry later), every reader takes the
// append all or none, and agrees.
func TestCutAppendShapes(t *testing.T) {
	ctx := context.Background()
	l := func(id, parent, mark string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		m := ""
		if mark != "" {
			m = `,"agentsession.append":"` + mark + `"`
		}
		return `{"type":"custom","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-15T10:00:00.000Z","customType":"x"` + m + `}`
	}
	cases := []struct {
		name    string
		lines   []string
		want    []string // entry ids
		partial []int    // lines
	}{
		{"whole", []string{l("r", "", ""), l("a1", "r", "0/3/a3"), l("a2", "a1", "1/3/a3"), l("a3", "a2", "")},
			[]string{"r", "a1", "a2", "a3"}, nil},
		{"end cut", []string{l("r", "", ""), l("a1", "r", "0/3/a3"), l("a2", "a1", "1/3/a3")},
			[]string{"r"}, []int{3, 4}},
		{"middle lost", []string{l("r", "", ""), l("a1", "r", "0/3/a3"), l("a3", "a2", "")},
			[]string{"r", "a3"}, []int{3}},
		{"middle garbled", []string{l("r", "", ""), l("a1", "r", "0/3/a3"), "\x00\x00\x00\x00", l("a3", "a2", "")},
			[]string{"r", "a3"}, []int{3}},
		{"first lost", []string{l("r", "", ""), l("a2", "a1", "1/3/a3"), l("a3", "a2", "")},
			[]string{"r", "a3"}, []int{3}},
		{"out of order", []string{l("r", "", ""), l("a2", "a1", "1/3/a3"), l("a1", "r", "0/3/a3"), l("a3", "a2", "")},
			[]string{"r", "a3"}, []int{3, 4}},
		{"cut, then its last id elsewhere", []string{l("r", "", ""), l("a1", "r", "0/3/a3"), l("a2", "a1", "1/3/a3"), l("x", "r", ""), l("a3", "x", "")},
			[]string{"r", "x", "a3"}, []int{3, 4}},
		{"two appends, the first cut", []string{l("r", "", ""), l("a1", "r", "0/2/a2"), l("b1", "r", "0/2/b2"), l("b2", "b1", "")},
			[]string{"r", "b1", "b2"}, []int{3}},
		{"a foreign member of the name, not last", []string{l("r", "", ""), `{"type":"custom","id":"f","parentId":"r","agentsession.append":"0/2/g","customType":"x"}`},
			[]string{"r", "f"}, nil},
		{"a foreign value", []string{l("r", "", ""), l("f", "r", "zz")},
			[]string{"r", "f"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(`{"type":"session","version":3,"id":"s-shape","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n" + strings.Join(c.lines, "\n") + "\n")
			log, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			stream, err := session.ReadLog(bytes.NewReader(data), nil)
			require.NoError(t, err)
			root := t.TempDir()
			id := putFile(t, root, data)
			fileLog, err := openFS(t, root, nil).Load(ctx, id)
			require.NoError(t, err)
			for name, got := range map[string]*session.Log{"DecodeLog": log, "ReadLog": stream, "FileStore": fileLog} {
				assert.Equal(t, c.want, ids(got.Entries), name)
				var lines []int
				for _, p := range got.Partial {
					lines = append(lines, p.Line)
				}
				assert.Equal(t, c.partial, lines, name)
			}
			findings, n, err := session.VerifyReader(ctx, bytes.NewReader(data), nil, nil)
			require.NoError(t, err)
			assert.Equal(t, len(c.want), n)
			var lines []int
			for _, f := range findings {
				if f.Kind == session.FindingPartialAppend {
					lines = append(lines, f.Line)
				}
			}
			assert.Equal(t, c.partial, lines, "VerifyReader")
		})
	}
}

// TestListCountsAsLoad: a listing counts what a Load reads: not the
// malformed lines, not the lines of a cut append (nor a title among
// them), and a cut append whose last entry comes later counts then.
func TestListCountsAsLoad(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const head = `{"type":"session","version":3,"id":"s-count","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}` + "\n"
	lines := []string{
		`{"type":"custom","id":"r","parentId":null,"customType":"x"}`,
		`not an entry`,
		`{"type":"session_info","id":"t1","parentId":"r","name":"Real title"}`,
		`{"type":"custom","id":"a1","parentId":"t1","customType":"x","agentsession.append":"0/3/a3"}`,
		`{"type":"session_info","id":"a2","parentId":"a1","name":"Title of a cut append","agentsession.append":"1/3/a3"}`,
		`{"type":"custom","id":"b","parentId":"t1","customType":"x"}`,
		`{"type":"custom","id":"c1","parentId":"b","customType":"x","agentsession.append":"0/2/c2"}`,
	}
	id := putFile(t, root, []byte(head+strings.Join(lines, "\n")+"\n"))
	path := sessionFileOf(t, root, id)
	check := func() {
		t.Helper()
		store := openFS(t, root, nil)
		log, err := store.Load(ctx, id)
		require.NoError(t, err)
		page, err := openFS(t, root, nil).List(ctx, session.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Sessions, 1)
		info := page.Sessions[0]
		assert.Equal(t, len(log.Entries), info.Entries, "List counts what Load reads")
		r, err := session.Open(ctx, store, id)
		require.NoError(t, err)
		assert.Equal(t, r.Title(), info.Title)
		// And a store that has listed it before, reading what was added.
		page, err = store.List(ctx, session.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, len(log.Entries), page.Sessions[0].Entries)
	}
	check()
	// The last append's last entry comes (as if its writer was slow).
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"custom","id":"c2","parentId":"c1","customType":"x"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	check()
}

// TestUnmarkableLastIDs: an append whose last entry has an id a marker
// cannot hold as it is (not ASCII, a quote, over 256 bytes) is marked
// all the same, by a hash of the id, so a crash that keeps part of it
// leaves no entry of it.
func TestUnmarkableLastIDs(t *testing.T) {
	ctx := context.Background()
	for _, last := range []string{"é-last", `q"uote\`, strings.Repeat("x", 300), "#not-a-hash"} {
		t.Run(last[:min(len(last), 12)], func(t *testing.T) {
			root := t.TempDir()
			store := openFS(t, root, nil)
			require.NoError(t, store.Create(ctx, session.Header{ID: "s-u", Cwd: "/w"}))
			at := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
			first, err := session.NewEntry(session.TypeCustom, "r", "", at, session.Custom{CustomType: "x"})
			require.NoError(t, err)
			require.NoError(t, store.Append(ctx, "s-u", session.AppendOptions{}, first))
			var group []session.Entry
			parent := "r"
			for k, id := range []string{"g1", "g2", last} {
				e, err := session.NewEntry(session.TypeCustom, id, parent, at, session.Custom{CustomType: fmt.Sprint(k)})
				require.NoError(t, err)
				group, parent = append(group, e), id
			}
			require.NoError(t, store.Append(ctx, "s-u", session.AppendOptions{}, group...))
			path := sessionFileOf(t, root, "s-u")
			require.NoError(t, store.Close())
			data := mustRead(t, path)

			whole, err := session.DecodeLog(data, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"r", "g1", "g2", last}, ids(whole.Entries), "the whole append reads back")
			for _, e := range whole.Entries {
				assert.NotContains(t, string(e.JSON()), "agentsession.append", "readers strip the marker")
			}

			// Keep the header, r and the first line of the group only.
			cut := 0
			for range 3 {
				cut += bytes.IndexByte(data[cut:], '\n') + 1
			}
			require.NoError(t, os.WriteFile(path, data[:cut], 0o600))
			log, err := openFS(t, root, nil).Load(ctx, "s-u")
			require.NoError(t, err)
			assert.Equal(t, []string{"r"}, ids(log.Entries), "no entry of a cut append")
			require.Len(t, log.Partial, 1)
			assert.Equal(t, 3, log.Partial[0].Line)
		})
	}
}
