package names

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostIDs are ids hosts name sessions by: every store takes them.
var hostIDs = []string{
	"user:42", "alice@example.com", "chat 7", "Ünïcode", ".hidden", "..", ".", "../x", "a/b", `a\b`,
	`C:\x`, "CON", "nul.jsonl", "%2e%2e", "~user", "$HOME", "é", "\u202e", "日本語のセッション", " lead", "trail ",
	"a*b?c|d<e>f\"g", "550e8400-e29b-41d4-a716-446655440000", strings.Repeat("a", MaxIDLength),
	strings.Repeat("é", MaxIDLength/2), strings.Repeat("🙂", MaxIDLength/4),
}

func TestValidateID(t *testing.T) {
	for _, id := range hostIDs {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	refused := []struct{ id, says string }{
		{"", "empty"},
		{strings.Repeat("a", MaxIDLength+1), "513 bytes"},
		{strings.Repeat("é", MaxIDLength/2) + "a", "bytes"},
		{"a\x00b", "U+0000"},
		{"a\nb", "U+000A"},
		{"\u0085", "U+0085"},
		{"\x7f", "U+007F"},
		{"Ün\xffcode", "not valid UTF-8 at byte 3"},
	}
	for _, c := range refused {
		err := ValidateID(c.id)
		if !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID saying %q", c.id, err, c.says)
		}
	}
}

// TestFileStem: every id has a stem of safe bytes that names it back,
// short enough for a file name; the ids the old rule took keep theirs.
func TestFileStem(t *testing.T) {
	for _, id := range append(hostIDs, "s1", "a.b_c-D") {
		stem := FileStem(id)
		checkStem(t, id, stem)
	}
	for _, id := range []string{"s1", "a.b_c-D", "550e8400-e29b-41d4-a716-446655440000"} {
		if got := FileStem(id); got != id {
			t.Errorf("FileStem(%q) = %q: the old rule's ids keep their names", id, got)
		}
	}
	if FileStem("Alice") == FileStem("alice") {
		t.Error("ids differing in case share a stem")
	}
	for _, stem := range []string{"%41", "%2e", "a%2", "a%zz", "%", ".x", "a b", "a~b", "a/b", "%00", "%FF"} {
		if id, hashed, ok := ParseStem(stem); ok && !hashed {
			t.Errorf("ParseStem(%q) = %q: not a stem FileStem makes", stem, id)
		}
	}
}

func checkStem(t *testing.T, id, stem string) {
	t.Helper()
	if len(stem) > MaxStem || stem == "" {
		t.Fatalf("FileStem(%q) is %d bytes, over %d", id, len(stem), MaxStem)
	}
	for i := 0; i < len(stem); i++ {
		if c := stem[i]; !(safeByte(c) || c == '%' || c == '~') {
			t.Fatalf("FileStem(%q) = %q holds %q", id, stem, c)
		}
	}
	if stem[0] == '.' {
		t.Fatalf("FileStem(%q) = %q starts with a dot", id, stem)
	}
	got, hashed, ok := ParseStem(stem)
	if !ok || hashed != strings.Contains(stem, "~") || (!hashed && got != id) {
		t.Fatalf("ParseStem(FileStem(%q) = %q) = %q, %v, %v", id, stem, got, hashed, ok)
	}
}

func FuzzFileStem(f *testing.F) {
	for _, id := range hostIDs {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateID(id) != nil {
			if utf8.ValidString(id) && id != "" && len(id) <= MaxIDLength && !strings.ContainsFunc(id, isControl) {
				t.Fatalf("ValidateID refused %q", id)
			}
			return
		}
		checkStem(t, id, FileStem(id))
		if id2, hashed, ok := ParseStem(FileStem(id)); !hashed && (!ok || id2 != id) {
			t.Fatalf("round trip of %q gave %q", id, id2)
		}
	})
}

func FuzzParseStem(f *testing.F) {
	for _, id := range hostIDs {
		f.Add(FileStem(id))
	}
	f.Add("%41")
	f.Fuzz(func(t *testing.T, stem string) {
		id, hashed, ok := ParseStem(stem)
		if ok && !hashed && FileStem(id) != stem {
			t.Fatalf("ParseStem(%q) = %q, whose stem is %q", stem, id, FileStem(id))
		}
	})
}
