package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	session "github.com/agentsession/session"
)

// The subagents of a Claude Code session: sidechains of its own file,
// agent files beside it (2.0) and in <session>/subagents/ (2.1).

// clKids gathers the subagent sessions of one session.
type clKids struct {
	parent string
	byKey  map[string]*clGroup
	order  []*clGroup
	// refused are subagent files (or their directory) not read: links,
	// FIFOs; reported with the session.
	refused []LineError
}

func (k *clKids) group(key, source string) *clGroup {
	g := k.byKey[key]
	if g == nil {
		g = &clGroup{id: clChildID(k.parent, key), parent: k.parent, source: source}
		k.byKey[key] = g
		k.order = append(k.order, g)
	}
	return g
}

func (k *clKids) add(key, source string, l *claudeLine) {
	g := k.group(key, source)
	g.lines = append(g.lines, l)
}

// agentFiles reads the subagent files of the session whose file is
// dir/stem.jsonl below the root: dir/<stem>/subagents/**/agent-*.jsonl
// (2.1) and the dir/agent-*.jsonl whose sessionId is stem (2.0). Only
// the file's own name leads to them, never the sessionId its lines
// state: a file whose lines claim another session's id (copied,
// renamed, or made to) would otherwise take that session's subagents;
// that id (the last parameter) is not used.
func (k *clKids) agentFiles(ctx context.Context, rt *root, dir, stem, _ string) error {
	var files []string
	if _, err := elem(stem); err == nil {
		sub := filepath.Join(dir, stem, "subagents")
		err := rt.walk(sub, func(p string, d fs.DirEntry) error {
			switch {
			case d.IsDir() || !clAgentFile(p):
			case d.Type().IsRegular():
				files = append(files, p)
			case d.Type()&fs.ModeSymlink != 0:
				k.refused = append(k.refused, LineError{Path: rt.path(p), Err: ErrSymlink})
			default:
				k.refused = append(k.refused, LineError{Path: rt.path(p), Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(d.Type()))})
			}
			return nil
		}, func(p string, err error) {
			k.refused = append(k.refused, LineError{Path: rt.path(p), Err: err})
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // the directory is a link, say
			k.refused = append(k.refused, LineError{Path: rt.path(sub), Err: err})
		}
	}
	files = append(files, clBeside(rt, dir, stem)...)
	sort.Strings(files)
	files = clDedupe(files)
	// The session's file and its subagents' together are bounded (the
	// import holds them in memory at once, about ten times their size).
	budget := claudeMaxSessionBytes
	if st, err := rt.check(filepath.Join(dir, stem+".jsonl"), false); err == nil {
		budget -= st.Size()
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if st, err := rt.check(f, false); err == nil {
			if st.Size() > budget {
				k.refused = append(k.refused, LineError{Path: rt.path(f), Err: fmt.Errorf("%w: a session's file and its subagents' pass %d bytes together; not read", session.ErrTooLarge, claudeMaxSessionBytes)})
				continue
			}
			budget -= st.Size()
		}
		if i >= claudeMaxAgents {
			// Named one by one: each is a file not imported.
			for _, f := range files[i:] {
				k.refused = append(k.refused, LineError{Path: rt.path(f), Err: fmt.Errorf("%w: more than %d subagent files with one session; not read", ErrClaudeLine, claudeMaxAgents)})
			}
			break
		}
		lines, bad, err := claudeReadFile(rt, f)
		if err != nil {
			// One subagent that cannot be read (a link or FIFO swapped
			// in, too large) is reported; its session and the other
			// subagents import.
			k.refused = append(k.refused, LineError{Path: rt.path(f), Err: err})
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "agent-"), ".jsonl")
		agent := name
		for _, l := range lines {
			if a := l.str("agentId"); a != "" {
				agent = a
				break
			}
		}
		g := k.group("agent-"+agent, rt.path(f))
		g.lines = append(g.lines, lines...)
		g.bad = append(g.bad, bad...)
		clAgentMeta(g, rt, strings.TrimSuffix(f, ".jsonl")+".meta.json", agent)
	}
	return nil
}

func clDedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// clAgentMeta takes a subagent's agentId and its meta.json (agentType,
// description, toolUseId) into its header.
func clAgentMeta(g *clGroup, rt *root, rel, agent string) {
	if _, ok := g.meta.Get("agentId"); !ok {
		g.meta.Set("agentId", clJSON(agent))
	}
	b, err := rt.readFile(rel, clMaxMetaBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil || !json.Valid(b) { // a link, a FIFO, too large, not JSON
		g.bad = append(g.bad, LineError{Path: rt.path(rel), Err: fmt.Errorf("%w: the agent's meta.json is not read: %v", ErrClaudeLine, errOr(err, "not JSON"))})
		return
	}
	obj := clObject(bytes.TrimSpace(b))
	if obj == nil {
		return
	}
	g.meta.Set("agentMeta", clFieldsJSON(obj))
	if d := clStr(clField(obj, "description")); d != "" {
		g.title = d
	}
}

// claudeMaxSessionBytes bounds the bytes of a session's file and its
// subagent files together.
var claudeMaxSessionBytes int64 = session.DefaultMaxLogBytes

// clMaxMetaBytes bounds an agent's meta.json.
const clMaxMetaBytes = 1 << 20

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// clBeside returns the agent-*.jsonl files in dir (below the root) whose
// sessionId is sid. The directory is scanned once per import, not once
// per session.
func clBeside(rt *root, dir, sid string) []string {
	by := rt.memoize("claude.beside\x00"+dir, func() any {
		bySID := map[string][]string{}
		ents, _ := rt.readDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.Type().IsRegular() && clAgentFile(p) {
				s := clPeekSession(rt, p)
				bySID[s] = append(bySID[s], p)
			}
		}
		return bySID
	}).(map[string][]string)
	return append([]string(nil), by[sid]...)
}

// clLoneAgent reads an agent file whose session's file is not beside it:
// a session of its own, a child of that session.
func clLoneAgent(rt *root, rel, stem, parent string, lines []*claudeLine, bad []LineError) ([]*Parsed, error) {
	path := rt.path(rel)
	agent := strings.TrimPrefix(stem, "agent-")
	for _, l := range lines {
		if a := l.str("agentId"); a != "" {
			agent = a
			break
		}
	}
	g := &clGroup{source: path, lines: lines, bad: bad}
	if parent != "" && session.ValidateID(parent) == nil {
		g.id, g.parent = clChildID(parent, "agent-"+agent), parent
	} else {
		g.id = clSessionID(stem, "", nil, path)
	}
	clAgentMeta(g, rt, strings.TrimSuffix(rel, ".jsonl")+".meta.json", agent)
	p, err := g.parsed()
	if err != nil {
		return nil, err
	}
	return []*Parsed{p}, nil
}

// calls links each subagent to the tool call that ran it: a tool
// result's toolUseResult names the agentId (2.x). The call's id goes in
// the child's header (claude.toolUseId), where a meta.json does not put
// it already.
func (k *clKids) calls(lines []*claudeLine) {
	for _, l := range lines {
		agent := clStr(clField(clObject(l.get("toolUseResult")), "agentId"))
		g := k.byKey["agent-"+agent]
		if agent == "" || g == nil {
			continue
		}
		if _, ok := g.meta.Get("toolUseId"); ok {
			continue
		}
		for _, e := range clArray(clContent(l)) {
			obj := clObject(e)
			if clStr(clField(obj, "type")) == "tool_result" {
				g.meta.Set("toolUseId", clJSON(clStr(clField(obj, "tool_use_id"))))
				break
			}
		}
	}
}
