package session_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// FuzzLifecycleFold reads logs whose entries hold metadata, state and
// titles of any shape: folding them never panics, the fold a store keeps
// (InfoFold, as JSON) reads back as it was, the changes an append makes
// name its entries in order, and the state at every entry reads.
func FuzzLifecycleFold(f *testing.F) {
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","agentsession":{"projectId":"p","metadata":{"k":"v"}}}`
	f.Add(hdr + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"Fix   it\nnow"}}` + "\n" +
		`{"type":"custom","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.meta","data":{"projectId":"q","metadata":{"k":null,"n":"1"}}}` + "\n" +
		`{"type":"custom","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.state","data":{"x":1,"y":null}}` + "\n" +
		`{"type":"session_info","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:00Z","name":" T "}` + "\n")
	f.Add(hdr + "\n" + `{"type":"custom","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z","customType":"agentsession.meta","data":[1]}` + "\n")
	f.Add(`{"type":"session","id":"s","agentsession":7}` + "\n" + `{"type":"custom","id":"a","customType":"agentsession.state","data":"x"}` + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		log, err := session.DecodeLog([]byte(text), nil)
		if err != nil {
			return
		}
		var fold session.InfoFold
		for _, e := range log.Entries {
			fold.Add(e)
		}
		data, err := json.Marshal(fold)
		if err != nil {
			t.Fatalf("marshal %+v: %v", fold, err)
		}
		var back session.InfoFold
		if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(normalize(back), normalize(fold)) {
			t.Fatalf("the fold does not read back: %s: %+v, want %+v (%v)", data, back, fold, err)
		}
		var info session.SessionInfo
		fold.Fill(&info, log.Header)
		_ = session.HeaderMeta(log.Header)

		changes := session.ChangesOf("s", log.Entries, log.Header.Timestamp)
		if len(log.Entries) > 0 {
			if changes[0].Kind != session.ChangeAppended || len(changes[0].Entries) != len(log.Entries) {
				t.Fatalf("first change %+v", changes[0])
			}
			for i, r := range changes[0].Entries {
				if r.ID != log.Entries[i].ID() {
					t.Fatalf("entry %d named %s, want %s", i, r.ID, log.Entries[i].ID())
				}
			}
		}
		s := session.OpenLog(log)
		_ = s.Meta()
		for _, e := range log.Entries {
			if _, err := s.StateAt(e.ID()); err != nil {
				t.Fatalf("state at %s: %v", e.ID(), err)
			}
		}
	})
}

// normalize makes a nil and an empty map equal.
func normalize(f session.InfoFold) session.InfoFold {
	if len(f.Metadata) == 0 {
		f.Metadata = nil
	}
	return f
}

// titleFromTextReference is TitleFromText as it was first written, on
// the whole first line with words: the bounded version must give the
// same title for every text.
func titleFromTextReference(text string) string {
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			line = l
			break
		}
	}
	if utf8.RuneCountInString(line) <= session.TitleMaxRunes {
		return line
	}
	runes := []rune(line)[:session.TitleMaxRunes]
	cut := len(runes)
	for i := len(runes) - 1; i > session.TitleMaxRunes/2; i-- {
		if unicode.IsSpace(runes[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(runes[:cut]), unicode.IsSpace) + "…"
}

func FuzzTitleFromText(f *testing.F) {
	for _, s := range []string{"", "Fix the bug", "\n  a\tb  \nc", strings.Repeat("word ", 30), strings.Repeat("x", 100),
		strings.Repeat("é", 70), strings.Repeat("\xff", 70), strings.Repeat("ab\u00a0", 40), strings.Repeat(" ", 61) + strings.Repeat("y", 61)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := session.TitleFromText(s), titleFromTextReference(s); got != want {
			t.Fatalf("TitleFromText(%q) = %q, want %q", s, got, want)
		}
	})
}
