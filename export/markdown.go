package export

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	session "github.com/agentsession/session"
)

// Fold limits of the Markdown transcript: a tool result or command
// output longer than FoldLines lines or FoldBytes bytes shows that much,
// and the rest in a folded <details> block.
const (
	FoldLines = 40
	FoldBytes = 4 << 10
)

// Markdown writes a readable transcript of s (the current branch, or
// Options.Branch): a heading with the title, id, directory and creation
// time, then each entry of the path from the root: messages under their
// role ("## User", "## Assistant (model)"), thinking folded, tool calls
// with their arguments as fenced JSON, tool results folded past
// FoldLines or FoldBytes, images as a note (or inline, as data URIs,
// with Options.Blobs), compaction and branch summaries marked as such,
// labels (checkpoints), model and thinking-level changes noted, and the
// usage and cost of each assistant turn in a small line. Options.Redactor
// redacts it all first.
func Markdown(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Branch == "" {
		o.Branch = s.LeafID()
	}
	var env *Envelope
	if o.Branch == "" { // an empty session: its heading only
		env = &Envelope{Header: s.Header()}
		if o.Redactor != nil {
			if err := redactEnvelope(ctx, env, &o); err != nil {
				return err
			}
		}
	} else {
		var err error
		if env, err = Build(ctx, s, &o); err != nil {
			return err
		}
	}
	md := &mdWriter{w: bufio.NewWriterSize(w, 64<<10), env: env}
	md.heading()
	for i, e := range env.Entries {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		md.entry(e)
		if l := env.Tree.Labels[e.ID()]; l != "" {
			md.printf("> **Label:** %s\n\n", code(l))
		}
	}
	return md.w.Flush()
}

type mdWriter struct {
	w   *bufio.Writer
	env *Envelope
}

func (md *mdWriter) printf(format string, args ...any) { fmt.Fprintf(md.w, format, args...) }

func (md *mdWriter) heading() {
	h := md.env.Header
	title := h.Title
	for _, e := range md.env.Entries {
		var info session.SessionInfoEntry
		if e.Type() == session.TypeSessionInfo && e.Decode(&info) == nil && info.Name != "" {
			title = info.Name
		}
	}
	if title == "" {
		title = "Session " + h.ID
	}
	md.printf("# %s\n\n", oneLine(title))
	md.printf("- **Session:** %s\n", code(h.ID))
	if h.Cwd != "" {
		md.printf("- **Directory:** %s\n", code(h.Cwd))
	}
	if !h.Timestamp.IsZero() {
		md.printf("- **Created:** %s\n", h.Timestamp.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if h.ParentSession != "" {
		md.printf("- **Parent session:** %s\n", code(h.ParentSession))
	}
	if md.env.Leaf != "" {
		md.printf("- **Branch:** ends at %s, %d entries\n", code(md.env.Leaf), len(md.env.Entries))
	}
	if r := md.env.Redacted; r != nil {
		md.printf("- **Redacted:** %d replacements\n", r.Total())
	}
	md.printf("\n---\n\n")
}

func (md *mdWriter) entry(e session.Entry) {
	switch e.Type() {
	case session.TypeMessage:
		m, err := e.Message()
		if err != nil {
			md.printf("> _Unreadable message entry %s: %s_\n\n", code(e.ID()), oneLine(err.Error()))
			return
		}
		md.message(m)
	case session.TypeCustomMessage:
		var c struct {
			CustomType string          `json:"customType"`
			Content    json.RawMessage `json:"content"`
		}
		_ = e.Decode(&c)
		md.printf("## Custom message (%s)\n\n", code(c.CustomType))
		var m session.Message
		if len(c.Content) > 0 && json.Unmarshal([]byte(`{"role":"custom","content":`+string(c.Content)+`}`), &m) == nil {
			md.blocks(m.Content)
		}
	case session.TypeCompaction:
		var c session.Compaction
		_ = e.Decode(&c)
		md.printf("## Compaction summary\n\n> _The conversation before this point was compacted")
		if c.TokensBefore > 0 {
			md.printf(" (%s tokens)", count(c.TokensBefore))
		}
		md.printf("; the model saw this summary in its place._\n\n%s\n\n", strings.TrimSpace(c.Summary))
	case session.TypeBranchSummary:
		var b session.BranchSummary
		_ = e.Decode(&b)
		md.printf("## Branch summary\n\n> _Summary of a branch that was left (it ended at %s)._\n\n%s\n\n", code(b.FromID), strings.TrimSpace(b.Summary))
	case session.TypeModelChange:
		var c session.ModelChange
		_ = e.Decode(&c)
		model := c.Model
		if c.Provider != "" || c.ModelID != "" {
			model = strings.TrimPrefix(c.Provider+"/"+c.ModelID, "/")
		}
		md.printf("> _Model changed to %s._\n\n", code(model))
	case session.TypeThinkingLevelChange:
		var c session.ThinkingLevelChange
		_ = e.Decode(&c)
		md.printf("> _Thinking level set to %s._\n\n", code(c.ThinkingLevel))
	case session.TypeSessionInfo:
		var c session.SessionInfoEntry
		_ = e.Decode(&c)
		md.printf("> _Session named %s._\n\n", code(c.Name))
	case session.TypeModeChange:
		var c session.ModeChange
		_ = e.Decode(&c)
		md.printf("> _Mode changed to %s._\n\n", code(c.Mode))
	case session.TypeTTSRInjection:
		var c session.TTSRInjection
		_ = e.Decode(&c)
		md.printf("> _Rules injected: %s._\n\n", code(strings.Join(c.InjectedRules, ", ")))
	case session.TypeSessionInit:
		var c session.SessionInit
		_ = e.Decode(&c)
		md.printf("> _Subagent session started")
		if c.Task != "" {
			md.printf(" with the task: %s", oneLine(c.Task))
		}
		md.printf("._\n\n")
	case session.TypeLabel:
		// Shown at the entry it names.
	case session.TypeCustom:
		var c session.Custom
		_ = e.Decode(&c)
		if c.CustomType == "agentsession.leaf" {
			return // a leaf move: the tree's, not the conversation's
		}
		md.printf("> _Extension data %s (not part of the conversation)._\n\n", code(c.CustomType))
	default:
		md.printf("> _Entry of type %s._\n\n", code(e.Type()))
	}
}

func (md *mdWriter) message(m *session.Message) {
	switch m.Role {
	case session.RoleUser:
		md.printf("## User\n\n")
		md.blocks(m.Content)
	case session.RoleAssistant:
		md.printf("## Assistant")
		if m.Model != "" {
			md.printf(" (%s)", oneLine(m.Model))
		}
		md.printf("\n\n")
		md.blocks(m.Content)
		md.usage(m)
	case session.RoleToolResult:
		md.printf("### Tool result")
		if m.ToolName != "" { // optional: a result names its call
			md.printf(": %s", code(m.ToolName))
		}
		if m.IsError {
			md.printf(" (error)")
		}
		md.printf("\n\n")
		var text []string
		for _, b := range m.Content {
			if b.Type == session.BlockText {
				text = append(text, b.Text)
			} else {
				md.block(b)
			}
		}
		md.folded(strings.Join(text, "\n"), "")
	case session.RoleBashExecution:
		md.printf("## User ran %s\n\n", code(m.Command))
		md.folded(m.Output, "")
		switch {
		case m.Cancelled:
			md.printf("_Cancelled._\n\n")
		case m.ExitCode != nil && *m.ExitCode != 0:
			md.printf("_Exit code %d._\n\n", *m.ExitCode)
		}
	case session.RoleCustom:
		md.printf("## Custom message (%s)\n\n", code(m.CustomType))
		md.blocks(m.Content)
	default:
		md.printf("## %s\n\n", oneLine(m.Role))
		md.blocks(m.Content)
	}
}

func (md *mdWriter) blocks(bs []session.Block) {
	for _, b := range bs {
		md.block(b)
	}
}

func (md *mdWriter) block(b session.Block) {
	switch b.Type {
	case session.BlockText:
		if t := strings.TrimSpace(b.Text); t != "" {
			md.printf("%s\n\n", t)
		}
	case session.BlockThinking:
		if b.Redacted {
			md.printf("_[thinking, redacted by the provider]_\n\n")
			return
		}
		md.printf("<details><summary>Thinking</summary>\n\n%s\n\n</details>\n\n", strings.TrimSpace(b.Thinking))
	case session.BlockToolCall:
		md.printf("**Tool call** %s (%s)\n\n", code(b.Name), code(b.ID))
		md.fence("json", prettyJSON(b.Arguments))
	case session.BlockImage:
		md.image(b)
	default:
		md.printf("_[%s block]_\n\n", oneLine(b.Type))
	}
}

func (md *mdWriter) image(b session.Block) {
	data := b.Data
	if strings.HasPrefix(data, session.BlobPrefix) {
		if raw, ok := md.env.Blobs[data]; ok {
			data = base64.StdEncoding.EncodeToString(raw)
		}
	}
	resolved := !strings.HasPrefix(data, session.BlobPrefix)
	if md.env.Blobs != nil && resolved && b.MimeType != "" {
		md.printf("![image](data:%s;base64,%s)\n\n", b.MimeType, data)
		return
	}
	if !resolved {
		md.printf("_[image: %s, %s, not included]_\n\n", oneLine(b.MimeType), short(data))
		return
	}
	md.printf("_[image: %s, %s]_\n\n", oneLine(b.MimeType), size(int64(base64.StdEncoding.DecodedLen(len(data)))))
}

// usage writes the small line of an assistant turn: tokens, cost, and
// how it stopped when that was not normal.
func (md *mdWriter) usage(m *session.Message) {
	var parts []string
	if u := m.Usage; u != nil && (u.Input|u.Output|u.CacheRead|u.CacheWrite != 0 || u.Cost.Total != 0) {
		parts = append(parts, count(u.Input)+" in", count(u.Output)+" out")
		if u.CacheRead > 0 {
			parts = append(parts, count(u.CacheRead)+" cache read")
		}
		if u.CacheWrite > 0 {
			parts = append(parts, count(u.CacheWrite)+" cache write")
		}
		if u.Cost.Total > 0 {
			parts = append(parts, fmt.Sprintf("$%.4f", u.Cost.Total))
		}
	}
	if m.StopReason == session.StopError || m.StopReason == session.StopAborted || m.StopReason == session.StopLength {
		s := "stopped: " + m.StopReason
		if m.ErrorMessage != "" {
			s += " (" + oneLine(m.ErrorMessage) + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		md.printf("<sub>%s</sub>\n\n", strings.Join(parts, " · "))
	}
}

// folded writes text in a fence: up to FoldLines lines and FoldBytes
// bytes, the rest in a folded <details> block.
func (md *mdWriter) folded(text, lang string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		md.printf("_(no output)_\n\n")
		return
	}
	head, rest := cut(text)
	md.fence(lang, head)
	if rest != "" {
		md.printf("<details><summary>%d more lines</summary>\n\n", strings.Count(rest, "\n")+1)
		md.fence(lang, rest)
		md.printf("</details>\n\n")
	}
}
