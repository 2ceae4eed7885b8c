package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// show: everything known of one session, read only.

var cmdShow = &command{
	name:    "show",
	summary: "print a session's info, metadata, state, usage and children",
	usage:   "[--json] FILE|ID",
	common:  withJSON | withRoot | withBlobs | withPager,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int { return c.show(args[0]) }
	},
}

// showJSON is what show --json prints.
type showJSON struct {
	ID            string                     `json:"id"`
	Path          string                     `json:"path"`
	Title         string                     `json:"title"`
	TitleDerived  bool                       `json:"titleDerived"`
	Cwd           string                     `json:"cwd"`
	Created       time.Time                  `json:"created"`
	Updated       time.Time                  `json:"updated"`
	ParentSession string                     `json:"parentSession"`
	Entries       int                        `json:"entries"`
	Size          int64                      `json:"size"`
	LeafID        string                     `json:"leafId"`
	Archived      bool                       `json:"archived"`
	ArchivedAt    *time.Time                 `json:"archivedAt"`
	Compacting    *time.Time                 `json:"compacting"`
	Meta          metaJSON                   `json:"meta"`
	State         map[string]json.RawMessage `json:"state"`
	Usage         showUsageJSON              `json:"usage"`
	Children      []childJSON                `json:"children"`
}

// metaJSON is session.Meta with every key, empty or not.
type metaJSON struct {
	ProjectID  string            `json:"projectId"`
	AppVersion string            `json:"appVersion"`
	User       string            `json:"user"`
	App        string            `json:"app"`
	Metadata   map[string]string `json:"metadata"`
}

type showUsageJSON struct {
	Models []modelUsage `json:"models"`
	Total  modelUsage   `json:"total"`
}

type childJSON struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Updated  time.Time `json:"updated"`
	Entries  int       `json:"entries"`
	Archived bool      `json:"archived"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (c *call) show(arg string) int {
	s, path, ok := c.openRead(arg)
	if !ok {
		return exitError
	}
	h := s.Header()
	// What a store's listing shows, from the log as a store folds it.
	var fold session.InfoFold
	for e := range s.Entries() {
		fold.Add(e)
	}
	var info session.SessionInfo
	fold.Fill(&info, h)
	info.ID, info.Cwd, info.Created, info.ParentSession, info.Entries = s.ID(), h.Cwd, h.Timestamp, h.ParentSession, s.Len()
	if fi, err := os.Stat(path); err == nil {
		info.Size, info.Updated = fi.Size(), fi.ModTime()
	}
	children := []childJSON{}
	var shared session.SharedStateStore
	// In a store: what the store says of it (archived since when, a
	// compaction running, its update time), its children, and the state shared with its user and
	// app when the store keeps some.
	if root, inStore := layoutRoot(path); inStore {
		store, err := session.OpenFileStore(root, nil)
		if err != nil {
			return c.fail("%v", err)
		}
		defer store.Close()
		if si, ok := c.findInfo(store, info.ID, h.Cwd); ok {
			info.Updated, info.Archived, info.ArchivedAt, info.Compacting = si.Updated, si.Archived, si.ArchivedAt, si.Compacting
			info.Entries, info.Size = si.Entries, si.Size
		}
		kids, err := session.ListChildren(c.ctx, store, info.ID)
		if err != nil {
			return c.fail("%v", err)
		}
		for _, k := range kids {
			children = append(children, childJSON{k.ID, k.Title, k.Updated, k.Entries, k.Archived})
		}
		shared, _ = any(store).(session.SharedStateStore)
	}
	st, err := s.State(c.ctx)
	if err != nil {
		return c.fail("%s: %v", path, err)
	}
	meta := s.Meta()
	if shared != nil {
		for _, sc := range []struct {
			scope  session.StateScope
			owner  string
			prefix string
		}{{session.ScopeUser, meta.User, session.UserStatePrefix}, {session.ScopeApp, meta.App, session.AppStatePrefix}} {
			if sc.owner == "" {
				continue
			}
			more, err := shared.LoadState(c.ctx, sc.scope, sc.owner)
			if err != nil {
				return c.fail("%s: %s state of %s: %v", path, sc.scope, sc.owner, err)
			}
			for k, v := range more {
				st[sc.prefix+k] = v
			}
		}
	}
	tally := newTally()
	sessionUsage(s, time.Time{}, tally, nil, nil)
	models, total := tally.list()
	out := showJSON{
		ID: info.ID, Path: path, Title: info.Title, TitleDerived: info.TitleDerived, Cwd: info.Cwd,
		Created: info.Created, Updated: info.Updated, ParentSession: info.ParentSession,
		Entries: info.Entries, Size: info.Size, LeafID: s.LeafID(),
		Archived: info.Archived, ArchivedAt: timeOrNil(info.ArchivedAt), Compacting: timeOrNil(info.Compacting),
		Meta:  metaJSON{meta.ProjectID, meta.AppVersion, meta.User, meta.App, meta.Metadata},
		State: st, Usage: showUsageJSON{models, total}, Children: children,
	}
	if out.Meta.Metadata == nil {
		out.Meta.Metadata = map[string]string{}
	}
	if c.json {
		return c.printJSON(out)
	}
	c.printShow(&out)
	return exitOK
}

// findInfo returns the store's listing of session id, looked for among
// those of cwd first.
func (c *call) findInfo(store *session.FileStore, id, cwd string) (session.SessionInfo, bool) {
	opts := session.ListOptions{Cwd: cwd, Archived: true, Limit: 1000}
	for {
		p, err := store.List(c.ctx, opts)
		if err != nil {
			break
		}
		for _, info := range p.Sessions {
			if info.ID == id {
				return info, true
			}
		}
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	info, ok := listAll(store)[id]
	return info, ok
}

func (c *call) printShow(o *showJSON) {
	w := c.stdout
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format(time.DateTime)
	}
	title := cell(o.Title)
	switch {
	case title == "":
		title = c.paint(dim, "(no title)")
	case o.TitleDerived:
		title += c.paint(dim, "  (from the first message)")
	}
	archived := "no"
	if o.Archived {
		archived = c.paint(yellow, "yes")
		if o.ArchivedAt != nil {
			archived += ", since " + when(*o.ArchivedAt)
		}
	}
	compacting := "no"
	if o.Compacting != nil {
		compacting = c.paint(yellow, "since "+when(*o.Compacting)) + " (a compaction runs, or its process died)"
	}
	kv := c.keyValues()
	kv.add("session", cell(o.ID))
	kv.add("title", title)
	kv.add("cwd", cell(o.Cwd))
	kv.add("created", when(o.Created))
	kv.add("updated", when(o.Updated))
	kv.add("archived", archived)
	kv.add("compacting", compacting)
	kv.add("entries", fmt.Sprintf("%d, leaf %s", o.Entries, cell(orDash(o.LeafID))))
	kv.add("size", size(o.Size))
	if o.ParentSession != "" {
		kv.add("parent", cell(o.ParentSession))
	}
	kv.add("path", cell(o.Path))
	kv.flush()

	fmt.Fprintf(w, "\n%s\n", c.paint(bold, "metadata"))
	kv = c.keyValues()
	kv.add("  project", cell(orDash(o.Meta.ProjectID)))
	kv.add("  app version", cell(orDash(o.Meta.AppVersion)))
	kv.add("  user", cell(orDash(o.Meta.User)))
	kv.add("  app", cell(orDash(o.Meta.App)))
	for _, k := range slices.Sorted(maps.Keys(o.Meta.Metadata)) {
		kv.add("  "+cell(k), cell(o.Meta.Metadata[k]))
	}
	kv.flush()

	fmt.Fprintf(w, "\n%s\n", c.paint(bold, "state at the leaf"))
	if len(o.State) == 0 {
		fmt.Fprintln(w, "  (none)")
	} else {
		kv = c.keyValues()
		for _, k := range slices.Sorted(maps.Keys(o.State)) {
			kv.add("  "+cell(k), cell(snippet(compactJSON(o.State[k]))))
		}
		kv.flush()
	}

	fmt.Fprintf(w, "\n%s\n", c.paint(bold, "usage"))
	if len(o.Usage.Models) == 0 {
		fmt.Fprintln(w, "  (no usage recorded)")
	} else {
		c.usageTable("  ", o.Usage.Models, o.Usage.Total)
	}

	fmt.Fprintf(w, "\n%s\n", c.paint(bold, "children"))
	if len(o.Children) == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	t := c.table("UPDATED", "ID", "ENTRIES", "TITLE")
	t.indent = "  "
	for _, k := range o.Children {
		title, st := titleOr(k.Title), style("")
		if k.Archived {
			title, st = "(archived) "+title, dim
		}
		t.styled(st, when(k.Updated), k.ID, fmt.Sprint(k.Entries), title)
	}
	t.flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// keyValues prints "key  value" lines with the values aligned.
type keyValues struct {
	c    *call
	rows [][2]string
}

func (c *call) keyValues() *keyValues { return &keyValues{c: c} }

// add adds a line; k and v are safe for a terminal already (cell,
// termSafe), v may hold this tool's colours.
func (kv *keyValues) add(k, v string) { kv.rows = append(kv.rows, [2]string{k, v}) }

func (kv *keyValues) flush() {
	width := 0
	for _, r := range kv.rows {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	for _, r := range kv.rows {
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(r[0]))
		fmt.Fprintf(kv.c.stdout, "%s%s  %s\n", r[0], pad, r[1])
	}
}
