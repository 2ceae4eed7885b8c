package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	session "github.com/agentsession/session"
)

// The subagents of a Claude Code session: sidechains of its own file,
// agent files beside it (2.0) and in <session>/subagents/ (2.1).

// clKids gathers the subagent sessions of one session.
type clKids struct {
	parent string
	byKey  map[string]*clGroup
	order  []*clGroup
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

// agentFiles reads the subagent files of the session sid whose file is
// dir/stem.jsonl.
func (k *clKids) agentFiles(ctx context.Context, dir, stem, sid string) error {
	var files []string
	for _, s := range []string{stem, sid} {
		root := filepath.Join(dir, s, "subagents")
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && clAgentFile(p) {
				files = append(files, p)
			}
			return nil
		})
		if s == sid {
			break
		}
	}
	files = append(files, clBeside(dir, sid)...)
	sort.Strings(files)
	files = clDedupe(files)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i >= claudeMaxAgents {
			g := k.group("agent-limit", f)
			g.bad = append(g.bad, LineError{Path: f, Err: ErrClaudeLine})
			break
		}
		lines, bad, err := claudeReadFile(f)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "agent-"), ".jsonl")
		agent := name
		for _, l := range lines {
			if a := l.str("agentId"); a != "" {
				agent = a
				break
			}
		}
		g := k.group("agent-"+agent, f)
		g.lines = append(g.lines, lines...)
		g.bad = append(g.bad, bad...)
		clAgentMeta(g, strings.TrimSuffix(f, ".jsonl")+".meta.json", agent)
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
func clAgentMeta(g *clGroup, path, agent string) {
	if _, ok := g.meta.Get("agentId"); !ok {
		g.meta.Set("agentId", clJSON(agent))
	}
	b, err := readHead(path, 1<<20)
	if err != nil || !json.Valid(b) {
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

// clBesideCache remembers the last directory scanned for agent files
// beside their sessions, so that a directory of sessions is scanned
// once, not once per session.
var clBesideCache struct {
	sync.Mutex
	dir   string
	mod   int64
	bySID map[string][]string
}

// clBeside returns the agent-*.jsonl files in dir whose sessionId is sid.
func clBeside(dir, sid string) []string {
	st, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	c := &clBesideCache
	c.Lock()
	defer c.Unlock()
	if c.dir != dir || c.mod != st.ModTime().UnixNano() || c.bySID == nil {
		c.dir, c.mod, c.bySID = dir, st.ModTime().UnixNano(), map[string][]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.Type().IsRegular() && clAgentFile(p) {
				s := clPeekSession(p)
				c.bySID[s] = append(c.bySID[s], p)
			}
		}
	}
	return append([]string(nil), c.bySID[sid]...)
}

// clLoneAgent reads an agent file whose session's file is not beside it:
// a session of its own, a child of that session.
func clLoneAgent(path, stem, parent string, lines []*claudeLine, bad []LineError) ([]*Parsed, error) {
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
	clAgentMeta(g, strings.TrimSuffix(path, ".jsonl")+".meta.json", agent)
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
