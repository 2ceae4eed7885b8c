package importer

// Claude Code transcripts: format notes and mapping.
//
// # The format (as Claude Code 1.x and 2.x write it)
//
// Claude Code writes one JSON Lines file per session,
// ~/.claude/projects/<cwd with every "/" made "-">/<sessionId>.jsonl,
// appending as the session goes. Each line is an object with a "type":
//
//   - "user", "assistant": a message. "message" is an Anthropic Messages
//     API message: role, content (a string, or blocks text / thinking
//     {thinking, signature} / redacted_thinking {data} / tool_use {id,
//     name, input} / tool_result {tool_use_id, content (string or
//     blocks), is_error} / image {source {type "base64", media_type,
//     data}} / others); an assistant's also has id ("msg_..."), model,
//     stop_reason (often null), stop_sequence and usage {input_tokens,
//     output_tokens, cache_creation_input_tokens,
//     cache_read_input_tokens, cache_creation, service_tier ...}. Tool
//     results come back in user lines, with the tool's structured output
//     in the line's "toolUseResult". Other line members: uuid,
//     parentUuid (null for a root), isSidechain, sessionId, timestamp
//     (ISO 8601), cwd, version, gitBranch, userType, requestId, isMeta
//     (injected context hidden from the user), isApiErrorMessage (an API
//     error written as an assistant message, model "<synthetic>"),
//     agentId, todos, thinkingMetadata ...
//   - "system": an event with a "subtype": "compact_boundary" (with
//     compactMetadata {trigger, preTokens}; parentUuid null and
//     logicalParentUuid naming the last line before the compaction,
//     which may be in an older file), stop_hook_summary, informational,
//     api_error, local_command, turn_duration ...
//   - "summary" {summary, leafUuid}: the title of the branch ending at
//     leafUuid. Claude Code also writes, into a new session's file,
//     summaries of branches of other files.
//   - "custom-title" {customTitle}: a name the user gave (/rename).
//   - others, with or without a uuid: "progress" (hook, bash and agent
//     progress, in the parentUuid chain in 2.1), "file-history-snapshot"
//     {messageId, snapshot}, "queue-operation", and whatever comes next.
//
// uuid/parentUuid make a graph: editing or retrying a message starts a
// branch from its parent, and every branch stays in the file; Claude
// Code resumes the branch of the last line. Parents may come after their
// children in the file, and real files hold parentUuids that name no
// line (Claude Code issues 22526, 22107). One assistant API message is
// written over several lines, one content block each, chained by
// parentUuid, all with the same message.id and usage (output_tokens is
// final on the last; older versions repeat the earlier blocks on each
// line). A compaction writes a compact_boundary, then a user line with
// isCompactSummary (the summary the conversation continues from, "This
// session is being continued from a previous conversation ...") as its
// child. Subagents (the Task tool) are sidechains: in 1.x their lines are
// in the session's file with isSidechain true; later each is a file
// agent-<agentId>.jsonl beside the session (2.0) or in
// <sessionId>/subagents/ (2.1.2 and later, with agent-<agentId>.meta.json
// {agentType, description, toolUseId}), its lines having isSidechain
// true, agentId, and the parent's sessionId.
//
// # The mapping
//
//   - Header: id = the file name when a line has it as sessionId, else
//     the first line's sessionId; timestamp, cwd of the first lines;
//     title = the last custom-title, else the summary of the current
//     branch, else the last summary of a branch in the file; version and
//     gitBranch in the member "claude". (A store keeps the header of the
//     first import: a title given later comes in as a session_info
//     entry, which Session.Title prefers; a summary written later labels
//     its entry but leaves the stored header's title as it was.)
//   - Entry ids are Claude's uuids, so a summary's leafUuid, a
//     logicalParentUuid or a file-history-snapshot's messageId still
//     names its entry. A line without a uuid, or with one that is no
//     short printable string, gets derivedID(session id, line, 0): a
//     re-import from anywhere builds the same tree (and an id already
//     taken gets a ".2" suffix). A uuid repeated with other content is
//     kept as "<uuid>~<line>" and reported (ErrClaudeDuplicate); a line
//     repeated as it is (resumes write summaries again) is read once.
//   - The tree: parents are ordered before children (file order
//     otherwise; records outside the graph in place, see below). A
//     parentUuid naming no line attaches the line to the graph line
//     before it in the file (the likeliest parent, and the branch stays
//     whole) and is reported (ErrClaudeMissingParent). A line after the
//     first whose parentUuid is null or absent (claude-code-log's
//     fixtures, early transcripts), and a compact boundary whose
//     logicalParentUuid is not in the file, continue from the graph line
//     before it too, as every viewer shows the conversation: the file
//     is one tree, never a root per line (the lines reported once a
//     file, ErrClaudeFileOrder; each such boundary, unless it is the
//     first line, ErrClaudeMissingParent). A cycle is broken at its
//     first line (ErrClaudeCycle).
//   - Turns (claude_turns.go): Claude Code 2.1 writes parallel tool
//     calls as one line per call (one message.id) and hangs each call's
//     result from its own call's line (sourceToolAssistantUUID), hook
//     progress lines between, so that the chain from the last line holds
//     the last result only. Each turn (an assistant line, the lines of
//     its API message and everything below them until the conversation
//     goes on: an assistant line of another message, a user line without
//     a tool_result, a compact boundary) is made one path: the lines of
//     the message (one message, see below), then the rest in the order
//     written (results, progress, system lines); what the conversation
//     goes on with hangs from its end. As Claude Code shows it: one
//     assistant message with every call, then every result. A line
//     without a result written below a turn after the conversation went
//     on stays where it is.
//   - The result is checked: the chain Claude Code resumes, from the
//     last message line back as the lines name their parents, must be on
//     the path to the session's leaf, and each tool call on that path
//     whose result is in the file must have it there, or the file is an
//     error (ErrClaudeConversation, naming the line or the call): never
//     an import that silently lacks a result.
//   - An assistant line is an assistant message converted as this
//     module converts an API response (anthropic.MessageFromResponse:
//     provider "anthropic", api "anthropic-messages", model, usage,
//     stopReason, thinking and redacted thinking), blocks of other types
//     kept in place as they are. The lines of one API message (the same
//     message.id, each the parent of the next) are merged into one
//     message under the first line's uuid, the others' uuids listed in
//     claude.uuids (the turns above make them each the parent of the
//     next): a message holds all the tool calls its results answer, so
//     contexts pair calls and results as the API did. The
//     usage is the last line's; when lines of one message.id make
//     several entries (another line between them), each later entry
//     holds what its usage adds to the earlier ones' (claude.usageAdded),
//     so the message is counted once and no entry changes when another
//     part is appended. A null
//     stop_reason is read as tool use when the message calls a tool,
//     else as the end of the turn (claude.stopReasonInferred); an API
//     error line is stopReason "error".
//   - A user line with isMeta (what Claude Code injects: the caveat
//     before a local command's output, a skill's text) that holds only
//     text is a custom_message "claude.meta" (not displayed, its line's
//     members in details): in the context as the model saw it, but no
//     prompt that titles the session or counts as a turn.
//   - A user line is a user message; each tool_result block in it a
//     toolResult message (its tool's name looked up from the call,
//     is_error, content), the line's toolUseResult its details. A line
//     that makes several messages chains them, the first under the
//     line's uuid, the next "<uuid>.1" ...
//   - A message keeps its line's other members (cwd, version, isMeta,
//     requestId, ...) in its member "claude", and message members not
//     mapped in claude.message.
//   - compact_boundary + its compact summary make one compaction entry
//     (the boundary's uuid): summary = the summary's text, tokensBefore =
//     preTokens, firstKeptEntryId empty (Claude Code keeps nothing but
//     the summary), details {boundary, summaryLine, summaryUuid}. Its
//     parent is logicalParentUuid when that line is in the file, so the
//     session stays one tree; else it is a root.
//   - summary lines become label entries on the entry of their leafUuid;
//     a summary of a branch not in the file is kept as a custom entry
//     "claude.summary". custom-title lines become session_info entries
//     (the title).
//   - Every other line (system lines but compact boundaries, progress,
//     file-history-snapshot, ...) is a custom entry "claude.<type>"
//     holding the whole line, counted in Parsed.Unknown, in place.
//   - Records outside the graph (no uuid: summaries, titles, snapshots,
//     queue operations ...) are placed where they are in the file: once
//     every graph line before them is placed, under the entry of the
//     graph line last before them (the entries that line's children
//     hang from then hang after the record, so it adds no branch);
//     records before the first graph line are chained at the root. A
//     label whose leafUuid comes later in the file is placed after it.
//
// # Importing again
//
// Claude Code appends to a session's file as the session goes on; the
// entries made from a file are the first entries made from the file
// grown, byte for byte, so importing it again resumes (Report.Imported
// with Session.Resumed) rather than conflicting. This holds whatever
// lines are appended (turns, tool use, branches from an edit, records
// outside the graph), except where an entry made from the last lines
// must change: a file cut inside an assistant message written over
// several lines (the merged message grows), between a compact boundary
// and its summary, or before the parent of a line already in it (a
// parent written after its child, a summary's leafUuid). Those report a
// ConflictError, nothing is overwritten; deleting the session and
// importing again takes the file as it now is.
//   - Sidechains become child sessions (Parsed.Children, ParentSession
//     the session): one per agentId, or per sidechain root in 1.x files,
//     id "<session>_agent-<agentId>" or "<session>_sidechain-<uuid>";
//     its meta.json kept in the header's claude member, its description
//     the title, and the Task call that ran it (claude.toolUseId) from
//     the meta.json or from the tool result whose toolUseResult names
//     its agentId. An agent file imported on its own (its session's file
//     is not beside it) is a session with the same id and parent.
//
// Missing parents, duplicates and cycles are reported in
// Parsed.Malformed with the line they concern, though the line is
// imported (errors.Is tells them from unreadable lines, ErrClaudeLine).
//
// Limits: a line is at most claudeMaxLineBytes (64 MiB, what a store
// takes as one entry), a file at most claudeMaxLines lines (2,000,000)
// and claudeMaxFileBytes (1 GiB), a session at most claudeMaxAgents
// (10,000) subagent files; what is past them is reported, not read.

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
)

// claudeMaxAgents bounds the subagent files read with one session.
var claudeMaxAgents = 10_000

// claudeSniff recognises a transcript by its first lines: a top-level
// parentUuid, or a record only Claude Code writes. A first line longer
// than head is recognised by how Claude Code begins its lines.
func claudeSniff(head []byte) bool {
	whole := false
	for i, raw := range bytes.Split(head, []byte("\n")) {
		if i >= 20 {
			break
		}
		l, err := claudeParseLine(bytes.TrimSpace(raw))
		if err != nil {
			continue
		}
		whole = true
		if _, ok := l.obj.Get("parentUuid"); ok && (l.uuid != "" || l.str("sessionId") != "") {
			return true
		}
		// Lines without a parentUuid at all (some writers leave it out
		// where it would be null): the members only Claude Code's lines
		// have together.
		if _, ok := l.obj.Get("isSidechain"); ok && l.uuid != "" && l.str("sessionId") != "" {
			return true
		}
		switch l.typ {
		case "summary":
			if l.str("leafUuid") != "" {
				return true
			}
		case "file-history-snapshot", "queue-operation", "custom-title":
			if l.str("sessionId") != "" || l.get("snapshot") != nil {
				return true
			}
		}
	}
	if whole {
		return false
	}
	t := bytes.TrimSpace(head)
	for _, p := range []string{`{"parentUuid":`, `{"type":"summary","summary":`, `{"type":"file-history-snapshot",`, `{"type":"queue-operation",`} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}

// claudeOwned reports the subagent files a session's file reads along:
// those under <dir>/<session>/subagents/, and agent-*.jsonl files beside
// their session's file.
func claudeOwned(rt *root, rel string) error {
	for d := filepath.Dir(rel); d != "." && d != string(filepath.Separator); {
		up := filepath.Dir(d)
		if filepath.Base(d) == "subagents" && up != "." && clExists(rt, filepath.Dir(up), filepath.Base(up)) {
			return ErrNotRead
		}
		d = up
	}
	if !clAgentFile(rel) {
		return nil
	}
	if sid := clPeekSession(rt, rel); sid != "" && clExists(rt, filepath.Dir(rel), sid) {
		return ErrNotRead
	}
	return nil
}

// clExists reports whether dir (below the root) holds the session file of
// sid, a plain name.
func clExists(rt *root, dir, sid string) bool {
	if _, err := elem(sid); err != nil {
		return false
	}
	return rt.isFile(filepath.Join(dir, sid+".jsonl"))
}

func clAgentFile(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "agent-") && strings.HasSuffix(b, ".jsonl")
}

// clPeekSession returns the sessionId of a file's first lines.
func clPeekSession(rt *root, rel string) string {
	head, err := rt.head(rel, 64<<10)
	if err != nil {
		return ""
	}
	const key = `"sessionId":"`
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return ""
	}
	rest := head[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// readClaude reads a transcript and the subagents read along with it.
func readClaude(ctx context.Context, rt *root, rel string) ([]*Parsed, error) {
	path := rt.path(rel)
	lines, bad, err := claudeReadFile(rt, rel)
	if err != nil {
		return nil, err
	}
	stem := strings.TrimSuffix(filepath.Base(rel), ".jsonl")
	sids := map[string]bool{}
	first := ""
	for _, l := range lines {
		if s := l.str("sessionId"); s != "" {
			sids[s] = true
			if first == "" {
				first = s
			}
		}
	}
	if clAgentFile(rel) && !sids[stem] {
		return clLoneAgent(rt, rel, stem, first, lines, bad)
	}
	sid := clSessionID(stem, first, sids, path)
	main := &clGroup{id: sid, source: path, bad: bad}
	kids := &clKids{parent: sid, byKey: map[string]*clGroup{}}
	side, roots := map[string]*claudeLine{}, map[*claudeLine]*claudeLine{}
	for _, l := range lines {
		if l.uuid != "" && l.flag("isSidechain") {
			side[l.uuid] = l
		}
	}
	for _, l := range lines {
		if l.flag("isSidechain") {
			kids.add(clSideKey(l, side, roots, sid), path, l)
		} else {
			main.lines = append(main.lines, l)
		}
	}
	if err := kids.agentFiles(ctx, rt, filepath.Dir(rel), stem, sid); err != nil {
		return nil, err
	}
	kids.calls(main.lines)
	main.bad = append(main.bad, kids.refused...)
	p, err := main.parsed()
	if err != nil {
		return nil, err
	}
	for _, g := range kids.order {
		c, err := g.parsed()
		if err != nil {
			return nil, err
		}
		p.Children = append(p.Children, c)
	}
	return []*Parsed{p}, nil
}

// clSessionID picks the session's id: the file's name when a line has it
// as sessionId, else the first sessionId, else the file's name; one that
// is not a valid id is replaced by one derived from it.
func clSessionID(stem, first string, sids map[string]bool, path string) string {
	for _, id := range []string{stem, first} {
		if id != "" && (sids[id] || id == first) && session.ValidateID(id) == nil {
			return id
		}
	}
	if session.ValidateID(stem) == nil {
		return stem
	}
	return "claude-" + derivedID(first+"\x00"+path, 0, 0)
}

// clChildID is the id of a child session: "<parent>_<key>", or one
// derived from it when that is not a valid id.
func clChildID(parent, key string) string {
	if id := parent + "_" + key; session.ValidateID(id) == nil {
		return id
	}
	if id := parent + "_" + derivedID(key, 0, 0); session.ValidateID(id) == nil {
		return id
	}
	return "claude-" + derivedID(parent+"\x00"+key, 0, 0)
}

// clSideKey names the subagent a sidechain line belongs to: its agentId,
// else (1.x) the root of its sidechain (roots remembers the roots found,
// so that a long sidechain is walked once).
func clSideKey(l *claudeLine, side map[string]*claudeLine, roots map[*claudeLine]*claudeLine, sid string) string {
	if a := l.str("agentId"); a != "" {
		return "agent-" + a
	}
	root, path := l, []*claudeLine(nil)
	for range len(side) {
		if r := roots[root]; r != nil {
			root = r
			break
		}
		p := side[root.parent()]
		if p == nil || p == root {
			break
		}
		path = append(path, root)
		root = p
	}
	for _, x := range path {
		roots[x] = root
	}
	if root.uuid == "" {
		return "sidechain-" + derivedID(sid, root.n, 0)
	}
	return "sidechain-" + root.uuid
}
