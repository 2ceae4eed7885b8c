package session

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// FuzzPathIndex puts the path index against the file it describes. The
// fuzzer changes the index's bytes (as a crash or a disk would), its
// fields with the checksum made right again (it must not hang or
// panic), or the log after it was indexed: bytes appended (another
// writer's lines, garbage, a torn line) or the file cut short. Whenever
// an open by path succeeds, it must hold what a whole read of the file
// gives: the entries pathSubset picks, and the last entry.
func FuzzPathIndex(f *testing.F) {
	f.Add(uint8(0), uint16(0), []byte("x"))
	f.Add(uint8(1), uint16(100), []byte{0xff})
	f.Add(uint8(2), uint16(120), []byte{1, 2, 3, 4})
	f.Add(uint8(3), uint16(0), []byte(`{"type":"message","id":"zz1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`+"\n"))
	f.Add(uint8(3), uint16(0), []byte(`{"type":"thinking_level_change","id":"zz2","parentId":"PARENT","timestamp":"2026-01-01T00:00:00.000Z","thinkingLevel":"low"}`+"\n"))
	f.Add(uint8(4), uint16(500), []byte(nil))
	f.Fuzz(func(t *testing.T, mode uint8, at uint16, data []byte) {
		logBytes, idx := pathIndexFixture(t)
		logBytes, idx = slices.Clone(logBytes), slices.Clone(idx)
		switch mode % 5 {
		case 0: // the index replaced
			idx = data
		case 1: // bytes of the index changed
			for k, b := range data {
				idx[(int(at)+k)%len(idx)] ^= b
			}
		case 2: // fields changed, the checksums made right
			for k, b := range data {
				idx[(int(at)+k)%len(idx)] ^= b
			}
			fixPathIndexSums(idx)
		case 3: // bytes appended to the log
			last := lastEntryLine(logBytes)
			logBytes = append(logBytes, bytes.ReplaceAll(data, []byte("PARENT"), last)...)
		case 4: // the log cut short
			logBytes = logBytes[:int(at)%len(logBytes)]
		}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, logBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		size, ino, _, _ := fileState(fh)
		x, err := decodePathIndex(idx)
		if err != nil {
			return
		}
		x.ino = ino // the fixture's index was made for another file
		lim := Limits{}.withDefaults()
		if size < x.covered {
			return
		}
		if sum, err := tailSum(fh, x.hdrEnd, x.covered); err != nil || sum != x.tail {
			return
		}
		if size > x.covered {
			if x.extend(fh, size, lim) != nil {
				return
			}
		}
		pl, err := x.readPath(fh, pathFixtureID, lim)
		if err != nil {
			return
		}
		log, err := DecodeLog(logBytes, nil)
		if err != nil {
			t.Fatalf("an open by path read a log a whole read refuses: %v", err)
		}
		if len(log.Malformed)+len(log.Partial)+len(log.Zeroed) > 0 || log.Torn != nil {
			t.Fatalf("an open by path read a log with lines a whole read skips")
		}
		chain, complete := pathSubset(log.Entries)
		if complete != pl.Complete || !slices.Equal(idsOf(chain), idsOf(pl.Log.Entries)) || pl.Last != lastID(log.Entries) {
			t.Fatalf("an open by path read %v (last %s), a whole read gives %v (last %s)", idsOf(pl.Log.Entries), pl.Last, idsOf(chain), lastID(log.Entries))
		}
	})
}

// fixPathIndexSums makes the checksums of the index bytes idx right
// again (each block's and the whole's) for what its header says of its
// layout; it does nothing to an index whose header does not fit its size.
func fixPathIndexSums(idx []byte) {
	le := binary.LittleEndian
	if len(idx) < pathIndexHdrSize+4 {
		return
	}
	n, nf, per := uint64(le.Uint32(idx[40:])), uint64(le.Uint32(idx[44:])), uint64(le.Uint32(idx[56:]))
	if per == 0 || n >= 1<<31 {
		return
	}
	nb := (n + per - 1) / per
	sums := pathIndexHdrSize + n*pathWalkSize
	recOff := sums + nb*4 + nf + n*hashRefSize + 4
	if uint64(len(idx)) != recOff+n*pathRecSize {
		return
	}
	for k := range nb {
		blk := idx[recOff+k*per*pathRecSize : recOff+min(n, (k+1)*per)*pathRecSize]
		le.PutUint32(idx[sums+4*k:], crc32.Checksum(blk, castagnoli))
	}
	le.PutUint32(idx[recOff-4:], crc32.Checksum(idx[:recOff-4], castagnoli))
}

func idsOf(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.id
	}
	return out
}

// lastEntryLine returns the id of the log's last line's entry.
func lastEntryLine(log []byte) []byte {
	lines := bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n"))
	e, err := parseEntry(lines[len(lines)-1])
	if err != nil {
		return nil
	}
	return []byte(e.id)
}

const pathFixtureID = "pathfuzz"

var pathFixture struct {
	once     sync.Once
	log, idx []byte
}

// pathIndexFixture returns a compacted session's log and its index.
func pathIndexFixture(t *testing.T) (log, idx []byte) {
	pathFixture.once.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "pathfuzz")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		fs, err := OpenFileStore(dir, nil)
		if err != nil {
			panic(err)
		}
		s, err := Create(ctx, fs, &CreateOptions{ID: pathFixtureID})
		if err != nil {
			panic(err)
		}
		// Ids from a counter: every fuzzing process builds the same
		// index, so that an input found failing in one fails in another.
		made := 0
		s.nextIDFn = func() string {
			made++
			return fmt.Sprintf("%08x", made)
		}
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		_, err = s.AppendThinkingLevel(ctx, "high")
		must(err)
		for i := range 12 {
			a := AssistantText(fmt.Sprintf("answer %d %s", i, strings.Repeat("b ", 300)))
			a.Model = fmt.Sprintf("m%d", i)
			must(s.SaveTurn(ctx, []*Message{UserText(fmt.Sprintf("q %d", i)), a}, nil))
			if i%5 == 4 {
				_, err := s.Compact(ctx, ExtractiveSummarizer{}, &CompactionOptions{ContextWindow: 2000, KeepRecentTokens: 200})
				must(err)
			}
		}
		must(s.Close())
		must(fs.Close())
		files, _ := filepath.Glob(filepath.Join(dir, "--*--", "*.jsonl"))
		pathFixture.log, err = os.ReadFile(files[0])
		must(err)
		fh, err := os.Open(files[0])
		must(err)
		defer fh.Close()
		size, ino, _, _ := fileState(fh)
		x, err := buildPathIndex(fh, size, ino, Limits{}.withDefaults())
		must(err)
		// Blocks of 8 records: the fuzzer reaches several.
		pathFixture.idx, err = x.encodeBlocks(8)
		must(err)
	})
	if pathFixture.log == nil {
		t.Fatal("no fixture")
	}
	return pathFixture.log, pathFixture.idx
}
