package session_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
)

// troubled is a log with something for every kind of finding.
const troubled = `{"type":"session","version":3,"id":"s-troubled","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"go","timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{}},{"type":"toolCall","id":"c2","name":"read","arguments":{}}],"stopReason":"toolUse","timestamp":2}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-15T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":3}}
not json at all
{"type":"message","id":"u2","parentId":"r1","timestamp":"2026-01-15T10:00:04.000Z","message":{"role":"user","content":"next","timestamp":4}}
{"type":"message","id":"r9","parentId":"u2","timestamp":"2026-01-15T10:00:05.000Z","message":{"role":"toolResult","toolCallId":"zz","toolName":"bash","content":[],"isError":false,"timestamp":5}}
{"type":"message","id":"bad","parentId":"r9","timestamp":"2026-01-15T10:00:06.000Z"}
{"type":"compaction","id":"k1","parentId":"bad","timestamp":"2026-01-15T10:00:07.000Z","summary":"s","firstKeptEntryId":"nowhere","tokensBefore":1.5}
{"type":"label","id":"l1","parentId":"k1","timestamp":"2026-01-15T10:00:08.000Z","targetId":"u1","label":7}
{"type":"message","id":"u1","parentId":"missing","timestamp":"2026-01-15T10:00:09.000Z","message":{"role":"user","content":[{"type":"image","data":"blob:sha256:0000000000000000000000000000000000000000000000000000000000000000","mimeType":"image/png"}],"timestamp":9}}
{"type":"message","id":"self","parentId":"self","timestamp":"2026-01-15T10:00:10.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c9","name":"edit","arguments":{}}],"timestamp":10}}
{"type":"message","id":"torn","parentId":"self","timestamp":"2026-01-15T1`

func verifyBoth(t *testing.T, data []byte) ([]session.Finding, []session.Finding) {
	t.Helper()
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	want := session.Verify(log)
	got, n, err := session.VerifyReader(context.Background(), bytes.NewReader(data), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, len(log.Entries), n)
	return want, got
}

// TestVerifyReaderAgrees: the streaming verifier finds what Verify finds
// on the whole log, finding for finding.
func TestVerifyReaderAgrees(t *testing.T) {
	want, got := verifyBoth(t, []byte(troubled))
	assert.Equal(t, want, got)
	kinds := map[session.FindingKind]bool{}
	for _, f := range want {
		kinds[f.Kind] = true
	}
	for _, k := range []session.FindingKind{session.FindingMalformedLine, session.FindingTornTail, session.FindingDuplicateID,
		session.FindingMissingParent, session.FindingSelfParent, session.FindingBadMessage, session.FindingOrphanResult,
		session.FindingDanglingCall, session.FindingPendingCall, session.FindingCompactionStart, session.FindingUnresolvedBlob,
		session.FindingBadField} {
		assert.True(t, kinds[k], "the troubled log has no %s finding", k)
	}

	compattest.Need(t)
	files, err := filepath.Glob(compattest.Path("*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		want, got := verifyBoth(t, data)
		assert.Equal(t, want, got, filepath.Base(f))
	}
}

// TestVerifyReaderMemory: a line over the limit is skipped as it is read.
func TestVerifyReaderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB file")
	}
	path := hostileLog(t, t.TempDir(), 48<<20)
	var findings []session.Finding
	alloc := allocated(func() {
		var err error
		findings, _, err = session.VerifyReader(context.Background(), mustOpen(t, path), nil,
			&session.ReadOptions{Limits: session.Limits{MaxLineBytes: 1 << 20}})
		require.NoError(t, err)
	})
	assert.Less(t, alloc, uint64(8<<20), "verify allocated %d MB for a 48 MB line", alloc>>20)
	require.NotEmpty(t, findings)
	assert.Equal(t, session.FindingMalformedLine, findings[0].Kind)
	assert.True(t, strings.Contains(findings[0].Detail, "MaxLineBytes"), findings[0].Detail)
}

// FuzzVerifyReader: on any log DecodeLog reads, the streaming verifier
// agrees with Verify.
func FuzzVerifyReader(f *testing.F) {
	f.Add([]byte(troubled))
	f.Add([]byte(header3 + "\n" + msgLine("a", "", "user", "x") + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := session.DecodeLog(data, nil)
		if err != nil || log.MigratedFrom != 0 {
			return // (a migrated log's ids are made while reading, differently by each reader)
		}
		want := session.Verify(log)
		got, _, err := session.VerifyReader(context.Background(), bytes.NewReader(data), nil, nil)
		if err != nil {
			t.Fatalf("DecodeLog read it, VerifyReader: %v", err)
		}
		if len(want) != len(got) {
			t.Fatalf("Verify found %d, VerifyReader %d:\n%v\n%v", len(want), len(got), want, got)
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("finding %d: Verify %v, VerifyReader %v", i, want[i], got[i])
			}
		}
	})
}
