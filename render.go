package session

import (
	"strconv"
	"strings"
)

// UserContent returns the blocks that stand for m in a model request when
// the model's API has no role for it, sent as (part of) a user message:
//
//   - a compaction summary becomes a text block that says the earlier
//     conversation was compacted, with the summary inside <summary> tags;
//   - a branch summary, likewise, says the conversation came back from
//     another branch;
//   - a bash execution the user ran becomes the command, its output in a
//     fence, and how it ended (non-zero exit code, cancelled, truncated);
//   - a custom message keeps its own content (text and images).
//
// ok is false for user, assistant and tool result messages, which every
// model API has a place for, and for roles this package does not know,
// which converters leave out. The provider packages (provider/anthropic,
// provider/openai) use UserContent unless their options name another
// function, so a host that wants other wording replaces it there.
func UserContent(m *Message) (blocks []Block, ok bool) {
	switch m.Role {
	case RoleCompactionSummary:
		return []Block{Text("The earlier part of this conversation was compacted to save context. A summary of it:\n\n<summary>\n" +
			m.Summary + "\n</summary>")}, true
	case RoleBranchSummary:
		return []Block{Text("The conversation returned here from another branch it had explored. A summary of that branch:\n\n<summary>\n" +
			m.Summary + "\n</summary>")}, true
	case RoleBashExecution:
		return []Block{Text(bashText(m))}, true
	case RoleCustom:
		return m.Content, true
	}
	return nil, false
}

func bashText(m *Message) string {
	var b strings.Builder
	b.WriteString("The user ran `")
	b.WriteString(m.Command)
	b.WriteString("`")
	if m.Output == "" {
		b.WriteString(" (no output)")
	} else {
		b.WriteString(":\n```\n")
		b.WriteString(m.Output)
		if !strings.HasSuffix(m.Output, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("```")
	}
	switch {
	case m.Cancelled:
		b.WriteString("\nThe command was cancelled.")
	case m.ExitCode != nil && *m.ExitCode != 0:
		b.WriteString("\nIt exited with code ")
		b.WriteString(strconv.Itoa(*m.ExitCode))
		b.WriteByte('.')
	}
	if m.Truncated {
		b.WriteString("\nThe output was truncated")
		if m.FullOutputPath != "" {
			b.WriteString("; all of it is in ")
			b.WriteString(m.FullOutputPath)
		}
		b.WriteByte('.')
	}
	return b.String()
}
