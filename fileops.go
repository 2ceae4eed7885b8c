package session

import (
	"encoding/json"
	"slices"
	"strings"
)

// The files a conversation read and modified, found in its tool calls,
// that compaction and branch summaries list and keep in their details.

// FileOps lists the files a conversation read and modified, as
// compaction and branch summary details carry them (pi's form).
type FileOps struct {
	Read     []string `json:"readFiles"`     // read and not modified
	Modified []string `json:"modifiedFiles"` // written or edited
}

// FileOp is a file a tool call acts on.
type FileOp struct {
	Path     string
	Modified bool // written, edited, created or deleted, not only read
}

// FileOpFunc tells which files a tool call acts on (none for calls that
// touch no file).
type FileOpFunc func(tool string, args json.RawMessage) []FileOp

// DefaultFileOp knows the file tools of the seed agents and of the common
// model APIs: read, read_file, view (reads); write, edit, multi_edit,
// write_file, edit_file, create_file, str_replace_based_edit_tool
// (modifications), with the path in "path", "file_path", "filePath" or
// "file"; and apply_patch, whose patch ("input" or "patch") names the
// files it adds, updates, deletes and moves.
func DefaultFileOp(tool string, args json.RawMessage) []FileOp {
	var modified bool
	switch strings.ToLower(tool) {
	case "read", "read_file", "view", "view_file":
	case "write", "edit", "multi_edit", "multiedit", "write_file", "edit_file", "create_file",
		"str_replace_based_edit_tool", "str_replace_editor":
		modified = true
	case "apply_patch":
		return patchFiles(args)
	default:
		return nil
	}
	var a struct {
		Path     string `json:"path"`
		FilePath string `json:"file_path"`
		FilePat2 string `json:"filePath"`
		File     string `json:"file"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	for _, p := range []string{a.Path, a.FilePath, a.FilePat2, a.File} {
		if p != "" {
			return []FileOp{{Path: p, Modified: modified}}
		}
	}
	return nil
}

// patchFiles lists the files of an apply_patch call: its patch's
// "*** Add File: ", "*** Update File: ", "*** Delete File: " and
// "*** Move to: " lines.
func patchFiles(args json.RawMessage) []FileOp {
	var a struct {
		Input string `json:"input"`
		Patch string `json:"patch"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	patch := a.Input
	if patch == "" {
		patch = a.Patch
	}
	var ops []FileOp
	for line := range strings.Lines(patch) {
		for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, prefix); ok {
				if p = strings.TrimSpace(p); p != "" {
					ops = append(ops, FileOp{Path: p, Modified: true})
				}
			}
		}
	}
	return ops
}

// fileSet gathers file operations.
type fileSet struct{ read, modified map[string]bool }

func (f *fileSet) add(path string, modified bool) {
	if f.read == nil {
		f.read, f.modified = map[string]bool{}, map[string]bool{}
	}
	if modified {
		f.modified[path] = true
	} else {
		f.read[path] = true
	}
}

// addCalls takes the file operations of the tool calls in msgs.
func (f *fileSet) addCalls(msgs []*Message, op FileOpFunc) {
	for _, m := range msgs {
		if m.Role != RoleAssistant {
			continue
		}
		for i := range m.Content {
			if b := &m.Content[i]; b.Type == BlockToolCall {
				for _, fo := range op(b.Name, b.Arguments) {
					f.add(fo.Path, fo.Modified)
				}
			}
		}
	}
}

// addDetails takes the file lists of an earlier compaction's or branch
// summary's details.
func (f *fileSet) addDetails(details json.RawMessage) {
	var d FileOps
	if len(details) == 0 || json.Unmarshal(details, &d) != nil {
		return
	}
	for _, p := range d.Read {
		f.add(p, false)
	}
	for _, p := range d.Modified {
		f.add(p, true)
	}
}

func (f *fileSet) ops() FileOps {
	var o FileOps
	for p := range f.modified {
		o.Modified = append(o.Modified, p)
	}
	for p := range f.read {
		if !f.modified[p] {
			o.Read = append(o.Read, p)
		}
	}
	slices.Sort(o.Read)
	slices.Sort(o.Modified)
	return o
}

// details encodes file operations for an entry's details; nil if none.
func (o FileOps) details() json.RawMessage {
	if len(o.Read) == 0 && len(o.Modified) == 0 {
		return nil
	}
	if o.Read == nil {
		o.Read = []string{}
	}
	if o.Modified == nil {
		o.Modified = []string{}
	}
	b, _ := json.Marshal(o)
	return b
}

// block renders the file lists the way pi appends them to a summary.
func (o FileOps) block() string {
	var b strings.Builder
	write := func(tag string, files []string) {
		if len(files) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("<" + tag + ">\n")
		for _, f := range files {
			b.WriteString(f + "\n")
		}
		b.WriteString("</" + tag + ">")
	}
	write("read-files", o.Read)
	write("modified-files", o.Modified)
	return b.String()
}

// withFiles appends the file lists to a summary.
func withFiles(summary string, files FileOps) string {
	if blk := files.block(); blk != "" {
		return strings.TrimRight(summary, "\n") + "\n\n" + blk
	}
	return summary
}
