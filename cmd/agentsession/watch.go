package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	session "github.com/agentsession/session"
)

// watch: the changes of a store's sessions as they happen, until
// interrupted.

var cmdWatch = &command{
	name:    "watch",
	summary: "print the changes of sessions as they happen",
	usage:   "[--json] [ID]",
	common:  withJSON | withRoot,
	nargs:   [2]int{0, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return c.watch(id)
		}
	},
}

// watchJSON is what watch --json prints of a change.
type watchJSON struct {
	Time       time.Time      `json:"time"`
	Session    string         `json:"session"`
	Kind       string         `json:"kind"`
	Entries    []entryRefJSON `json:"entries"`
	Title      string         `json:"title"`
	Keys       []string       `json:"keys"`
	Leaf       string         `json:"leaf"`
	Compacting *time.Time     `json:"compacting"`
	Op         string         `json:"op"`
	Error      string         `json:"error"`
	Remote     bool           `json:"remote"`
}

type entryRefJSON struct {
	ID         string `json:"id"`
	ParentID   string `json:"parentId"`
	Type       string `json:"type"`
	CustomType string `json:"customType"`
	Role       string `json:"role"`
}

func watchLine(ch session.Change) watchJSON {
	out := watchJSON{Time: ch.Time, Session: ch.Session, Kind: string(ch.Kind), Entries: []entryRefJSON{},
		Title: ch.Title, Keys: ch.Keys, Leaf: ch.Leaf, Compacting: timeOrNil(ch.Compacting), Remote: ch.Remote}
	if out.Keys == nil {
		out.Keys = []string{}
	}
	for _, e := range ch.Entries {
		out.Entries = append(out.Entries, entryRefJSON{e.ID, e.ParentID, e.Type, e.CustomType, e.Role})
	}
	if ch.Op != nil {
		out.Op = string(ch.Op.Op)
	}
	if ch.Err != nil {
		out.Error = ch.Err.Error()
	}
	return out
}

func (c *call) watch(arg string) int {
	var store *session.FileStore
	id := ""
	if arg != "" {
		var path string
		var err error
		if store, id, path, err = c.storeSession(arg); err != nil {
			return c.fail("%s", describe(err, path))
		}
	} else {
		if err := c.checkRoot(); err != nil {
			return c.fail("%v", err)
		}
		var err error
		if store, err = session.OpenFileStore(c.root, nil); err != nil {
			return c.fail("%v", err)
		}
	}
	defer store.Close()
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{Session: id})
	if errors.Is(err, session.ErrNoEvents) {
		return c.fail("the store at %s cannot be watched: this build's FileStore delivers no events", store.Root())
	}
	if err != nil {
		return c.fail("%v", err)
	}
	defer sub.Close()
	if c.term.errTTY && !c.json {
		what := "the sessions of " + store.Root()
		if id != "" {
			what = "session " + id
		}
		fmt.Fprintf(c.stderr, "agentsession: watching %s; Ctrl-C stops\n", what)
	}
	var dropped uint64
	for ch := range sub.C() {
		if n := sub.Dropped(); n > dropped {
			fmt.Fprintf(c.stderr, "agentsession: warning: %s dropped (the output fell behind); reload what you show\n", plural(int(n-dropped), "change"))
			dropped = n
		}
		if c.json {
			if err := c.printJSONLine(watchLine(ch)); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		c.printChange(ch)
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return c.fail("%v", err)
	}
	return exitOK
}

var kindStyle = map[session.ChangeKind]style{
	session.ChangeCreated:    green,
	session.ChangeDeleted:    red,
	session.ChangeError:      red,
	session.ChangeTitle:      cyan,
	session.ChangeArchived:   dim,
	session.ChangeUnarchived: dim,
	session.ChangeCompacting: yellow,
	session.ChangeCompacted:  yellow,
	session.ChangeRewritten:  yellow,
}

// printChange prints one line: time, session, kind, what changed; the
// columns are of fixed width, so that the lines line up as they come.
func (c *call) printChange(ch session.Change) {
	at := ch.Time
	if at.IsZero() {
		at = time.Now()
	}
	kind := fmt.Sprintf("%-10s", ch.Kind)
	line := fmt.Sprintf("%s  %-36s  %s  %s", at.Local().Format("15:04:05.000"), cell(ch.Session), c.paint(kindStyle[ch.Kind], kind), cell(changeDetail(ch)))
	fmt.Fprintln(c.stdout, strings.TrimRight(line, " "))
}

// changeDetail says what a change changed, in a few words.
func changeDetail(ch session.Change) string {
	switch ch.Kind {
	case session.ChangeAppended:
		const most = 4
		var parts []string
		for i, e := range ch.Entries {
			if i == most {
				parts = append(parts, fmt.Sprintf("+%d more", len(ch.Entries)-most))
				break
			}
			what := e.Type
			switch {
			case e.Role != "":
				what += "/" + e.Role
			case e.CustomType != "":
				what += "/" + e.CustomType
			}
			parts = append(parts, e.ID+" "+what)
		}
		return plural(len(ch.Entries), "entry") + ": " + strings.Join(parts, ", ")
	case session.ChangeTitle:
		return fmt.Sprintf("%q", ch.Title)
	case session.ChangeState:
		return "keys: " + strings.Join(ch.Keys, ", ")
	case session.ChangeLeaf:
		return "leaf " + orDash(ch.Leaf)
	case session.ChangeCompacting:
		if ch.Compacting.IsZero() {
			return "ended"
		}
		return "since " + ch.Compacting.Local().Format("15:04:05")
	case session.ChangeOperation:
		if ch.Op != nil {
			return fmt.Sprintf("%s %s → %s", ch.Op.Op, orDash(ch.Op.Anchor), orDash(ch.Op.Target))
		}
	case session.ChangeError:
		if ch.Err != nil {
			return ch.Err.Error()
		}
	}
	if len(ch.Entries) == 1 {
		return "entry " + ch.Entries[0].ID
	}
	return ""
}
