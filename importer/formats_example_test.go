package importer_test

import (
	"fmt"

	"github.com/agentsession/session/importer"
)

// The formats Import reads, in the order it tries them, as a tool's
// help would list them.
func ExampleFormats() {
	for _, f := range importer.Formats() {
		fmt.Printf("%-8s %.40s\n", f.Format, f.Reads)
	}
	fmt.Println(importer.FormatNames())
	// Output:
	// claude   Claude Code transcripts: ~/.claude/proje
	// codex    Codex rollout files: ~/.codex/sessions/Y
	// dive     Dive session files: its FileStore's <dir
	// json     this module's JSON export envelope (pack
	// opencode OpenCode exports: the JSON `opencode exp
	// opencode OpenCode's storage tree (up to 1.1): ~/.
	// [claude codex dive json opencode]
}
