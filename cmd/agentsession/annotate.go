package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// The commands that append one entry to a session, through a FileStore
// as compact does (openForWrite): title, label and rewind.

// writeOne opens the session arg names for writing, runs fn on it and
// closes it; it reports an error the way compact does.
func (c *call) writeOne(arg string, fn func(s *session.Session, path string) error) int {
	s, path, done, err := c.openForWrite(c.ctx, arg)
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	err = fn(s, path)
	err = errors.Join(err, s.Close(), done())
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	return exitOK
}

var cmdTitle = &command{
	name:    "title",
	summary: "set a session's title",
	usage:   "[--json] FILE|ID TEXT",
	common:  withJSON | withRoot,
	nargs:   [2]int{2, 2},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			text := strings.TrimSpace(args[1])
			if text == "" {
				return c.usageError("the title is empty")
			}
			var out struct {
				Path     string `json:"path"`
				ID       string `json:"id"`
				Title    string `json:"title"`
				Previous string `json:"previous"`
				EntryID  string `json:"entryId"`
			}
			code := c.writeOne(args[0], func(s *session.Session, path string) error {
				out.Path, out.ID, out.Previous = path, s.ID(), s.Title()
				if err := s.SetTitle(c.ctx, text); err != nil {
					return err
				}
				out.Title, out.EntryID = s.Title(), s.LeafID()
				return nil
			})
			if code != exitOK {
				return code
			}
			if c.json {
				return c.printJSON(out)
			}
			was := ""
			if out.Previous != "" {
				was = fmt.Sprintf(" (was %q)", out.Previous)
			}
			fmt.Fprintf(c.stdout, "%s: title set to %q%s, entry %s\n", out.Path, out.Title, was, out.EntryID)
			return exitOK
		}
	},
}

var cmdLabel = &command{
	name:    "label",
	summary: "name an entry (a checkpoint to rewind to)",
	usage:   "[--json] FILE|ID ENTRY NAME",
	common:  withJSON | withRoot,
	nargs:   [2]int{3, 3},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			name := strings.TrimSpace(args[2])
			var out struct {
				Path     string `json:"path"`
				ID       string `json:"id"`
				EntryID  string `json:"entryId"`
				Label    string `json:"label"`
				Previous string `json:"previous"`
			}
			code := c.writeOne(args[0], func(s *session.Session, path string) error {
				out.Path, out.ID, out.Label = path, s.ID(), name
				id, err := resolveEntry(s, args[1])
				if err != nil {
					return err
				}
				out.EntryID, out.Previous = id, s.LabelOf(id)
				return s.Label(c.ctx, id, name)
			})
			if code != exitOK {
				return code
			}
			if c.json {
				return c.printJSON(out)
			}
			switch {
			case name == "":
				fmt.Fprintf(c.stdout, "%s: label %q of entry %s cleared\n", out.Path, out.Previous, out.EntryID)
			case out.Previous != "":
				fmt.Fprintf(c.stdout, "%s: entry %s labeled %q (was %q)\n", out.Path, out.EntryID, name, out.Previous)
			default:
				fmt.Fprintf(c.stdout, "%s: entry %s labeled %q\n", out.Path, out.EntryID, name)
			}
			return exitOK
		}
	},
}

var cmdRewind = &command{
	name:    "rewind",
	summary: "move a session's leaf back to an entry or checkpoint",
	usage:   "[--json] FILE|ID TO",
	common:  withJSON | withRoot,
	nargs:   [2]int{2, 2},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			var out struct {
				Path string `json:"path"`
				ID   string `json:"id"`
				From string `json:"from"`
				To   string `json:"to"`
				Left int    `json:"left"`
			}
			code := c.writeOne(args[0], func(s *session.Session, path string) error {
				out.Path, out.ID = path, s.ID()
				to, err := resolveEntry(s, args[1])
				if err != nil {
					return err
				}
				res, err := s.Rewind(c.ctx, to)
				out.From, out.To, out.Left = res.From, res.To, res.Left
				return err
			})
			if code != exitOK {
				return code
			}
			if c.json {
				return c.printJSON(out)
			}
			if out.From == out.To {
				fmt.Fprintf(c.stdout, "%s: the leaf is at %s already\n", out.Path, out.To)
				return exitOK
			}
			fmt.Fprintf(c.stdout, "%s: rewound from %s to %s, %s left behind (kept: 'agentsession rewind %s %s' goes back)\n",
				out.Path, out.From, out.To, plural(out.Left, "entry"), out.ID, out.From)
			return exitOK
		}
	},
}
