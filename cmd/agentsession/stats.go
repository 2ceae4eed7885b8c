package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// stats: what the sessions of a store hold and cost, as ccusage reports
// it for Claude Code.

var cmdStats = &command{
	name:    "stats",
	summary: "count the sessions, entries, bytes, tokens and cost of a store",
	usage:   "[--since DATE] [--daily] [--json]",
	common:  withJSON | withRoot | withPager,
	nargs:   [2]int{0, 0},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		since := fs.String("since", "", "count what happened on or after `DATE` (YYYY-MM-DD, local time, or RFC 3339)")
		daily := fs.Bool("daily", false, "break the usage down by day")
		return func([]string) int {
			var from time.Time
			if *since != "" {
				var err error
				if from, err = parseSince(*since); err != nil {
					return c.usageError("--since: %v", err)
				}
			}
			return c.stats(from, *daily)
		}
	},
}

// parseSince reads a date (local midnight) or an RFC 3339 time.
func parseSince(s string) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD nor an RFC 3339 time", s)
}

// statsJSON is what stats --json prints.
type statsJSON struct {
	Root       string       `json:"root"`
	Since      *time.Time   `json:"since"`
	Sessions   int          `json:"sessions"`
	Archived   int          `json:"archived"`
	Unreadable int          `json:"unreadable"`
	Entries    int          `json:"entries"`
	Size       int64        `json:"size"`
	Models     []modelUsage `json:"models"`
	Total      modelUsage   `json:"total"`
	Days       []dayJSON    `json:"days"`
}

type dayJSON struct {
	Date   string       `json:"date"`
	Models []modelUsage `json:"models"`
	Total  modelUsage   `json:"total"`
}

func (c *call) stats(since time.Time, daily bool) int {
	files, err := c.storeFiles()
	if err != nil {
		return c.fail("%v", err)
	}
	prog := c.progress("reading sessions in " + c.root)
	defer prog.end()
	out := statsJSON{Root: c.root, Since: timeOrNil(since), Days: []dayJSON{}}
	tally := newTally()
	var days map[string]*usageTally
	if daily {
		days = map[string]*usageTally{}
	}
	seen := map[string]bool{} // forks copy the messages they hold: each is paid for once
	archiveDir := string(os.PathSeparator) + ".archive" + string(os.PathSeparator)
	for i, f := range files {
		prog.set("", i, len(files))
		log, err := readLog(f)
		if err != nil {
			out.Unreadable++
			fmt.Fprintf(c.stderr, "agentsession: warning: %s; left out\n", describe(err, f))
			continue
		}
		s := session.OpenLog(log)
		n := sessionUsage(s, since, tally, days, seen)
		s.Close()
		if n == 0 && !since.IsZero() {
			continue // nothing since
		}
		out.Sessions++
		out.Entries += n
		if strings.Contains(f, archiveDir) {
			out.Archived++
		}
		if fi, err := os.Stat(f); err == nil {
			out.Size += fi.Size()
		}
	}
	prog.end()
	out.Models, out.Total = tally.list()
	for _, d := range slices.Sorted(maps.Keys(days)) {
		m, t := days[d].list()
		out.Days = append(out.Days, dayJSON{d, m, t})
	}
	if c.json {
		return c.printJSON(out)
	}
	c.printStats(&out, daily)
	return exitOK
}

func (c *call) printStats(o *statsJSON, daily bool) {
	w := c.stdout
	kv := c.keyValues()
	kv.add("root", o.Root)
	if o.Since != nil {
		kv.add("since", o.Since.Local().Format(time.DateTime))
	}
	sessions := fmt.Sprint(o.Sessions)
	if o.Archived > 0 {
		sessions += fmt.Sprintf(" (%d archived)", o.Archived)
	}
	if o.Unreadable > 0 {
		sessions += c.paint(yellow, fmt.Sprintf(", %d unreadable left out", o.Unreadable))
	}
	kv.add("sessions", sessions)
	kv.add("entries", count(int64(o.Entries)))
	kv.add("size", size(o.Size))
	kv.add("tokens", count(o.Total.Total))
	kv.add("cost", money(o.Total.Cost))
	kv.flush()
	if len(o.Models) == 0 {
		fmt.Fprintf(w, "\n(no usage recorded)\n")
		return
	}
	fmt.Fprintln(w)
	if !daily {
		c.usageTable("", o.Models, o.Total)
		return
	}
	t := c.table(usageHeads("DATE")...)
	for _, d := range o.Days {
		for i, u := range d.Models {
			date := d.Date
			if i > 0 {
				date = ""
			}
			usageRow(t, "", []string{date}, modelName(u), u)
		}
	}
	usageRow(t, bold, []string{"total"}, "", o.Total)
	t.flush()
}
