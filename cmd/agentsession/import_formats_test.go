package main

import (
	"strings"
	"testing"

	"github.com/agentsession/session/importer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportListsTheImporterFormats: import's usage, help and --from
// error name the importer's formats (importer.Formats), not a list of
// the CLI's own; the OpenCode database is among them, as the CLI
// registers its reader.
func TestImportListsTheImporterFormats(t *testing.T) {
	var names []string
	for _, f := range importer.FormatNames() {
		names = append(names, string(f))
	}
	require.Contains(t, names, "opencode")
	assert.Contains(t, cmdImport.usage, "[--from "+strings.Join(names, "|")+"]")

	out, _, code := runCLI("import", "--help")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "usage: agentsession import [--from "+strings.Join(names, "|")+"]")
	// Each kind of file, in detection order.
	fs := importer.Formats()
	require.Len(t, fs, 7, "the database's reader is registered")
	last := -1
	for _, f := range fs {
		i := strings.Index(out, f.Reads)
		require.GreaterOrEqual(t, i, 0, "the help names %q", f.Reads)
		assert.Greater(t, i, last, "in detection order: %s", f.Reads)
		last = i
	}
	assert.Contains(t, out, "SQLite database")

	_, errOut, code := runCLI("import", "--root", t.TempDir(), "--from", "cursor", "x")
	assert.Equal(t, exitError, code)
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	assert.Contains(t, errOut, `unknown --from "cursor": `+list)
}
