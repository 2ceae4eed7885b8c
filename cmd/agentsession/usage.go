package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	session "github.com/agentsession/session"
)

// Tokens and cost by model, as show and stats print them: the usage the
// assistant messages recorded, on every branch (what was paid for), as
// Session.Usage sums it.

// modelUsage is the usage of one model, or a total (Model "").
type modelUsage struct {
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Messages   int     `json:"messages"`
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	Total      int64   `json:"totalTokens"`
	Cost       float64 `json:"cost"`
}

func (u *modelUsage) add(n int, v session.Usage) {
	u.Messages += n
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.Total += v.TotalTokens
	u.Cost += v.Cost.Total
}

func (u *modelUsage) sum(v modelUsage) {
	u.Messages += v.Messages
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.Total += v.Total
	u.Cost += v.Cost
}

// usageTally sums usage by model (and, for stats --daily, by day).
type usageTally struct {
	models map[[2]string]*modelUsage
}

func newTally() *usageTally { return &usageTally{models: map[[2]string]*modelUsage{}} }

func (t *usageTally) add(provider, model string, v session.Usage) {
	k := [2]string{provider, model}
	u := t.models[k]
	if u == nil {
		u = &modelUsage{Provider: provider, Model: model}
		t.models[k] = u
	}
	u.add(1, v)
}

func (t *usageTally) merge(o *usageTally) {
	for k, v := range o.models {
		u := t.models[k]
		if u == nil {
			u = &modelUsage{Provider: k[0], Model: k[1]}
			t.models[k] = u
		}
		u.sum(*v)
	}
}

// list returns the models, the costliest (then the most tokens) first,
// and their total.
func (t *usageTally) list() (models []modelUsage, total modelUsage) {
	for _, u := range t.models {
		models = append(models, *u)
		total.sum(*u)
	}
	slices.SortFunc(models, func(a, b modelUsage) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.Total, a.Total),
			cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	if models == nil {
		models = []modelUsage{}
	}
	return models, total
}

// sessionUsage adds the usage of the assistant messages of s (every
// branch; shadowed duplicates left out, as Session.Usage does) to
// tally, or to the tally of the entry's day from days when it is set,
// keeping those at since or later (zero: all). With seen, a message
// counted already (the same entry id and time, which a fork copies) is
// not counted again. It returns how many entries are at since or later.
func sessionUsage(s *session.Session, since time.Time, tally *usageTally, days map[string]*usageTally, seen map[string]bool) (entries int) {
	for n := range s.Tree() {
		e := n.Entry
		at := e.Time()
		if !since.IsZero() && at.Before(since) {
			continue
		}
		entries++
		u, ok := session.EntryUsage(e) // an assistant message's, or a turn record's
		if !ok {
			continue
		}
		var provider, model string
		if m, err := e.Message(); err == nil {
			provider, model = m.Provider, m.Model
		}
		if seen != nil {
			key := e.ID() + " " + e.Timestamp()
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		tally.add(provider, model, u)
		if days != nil {
			day := at.Local().Format(time.DateOnly)
			if at.IsZero() {
				day = "unknown"
			}
			if days[day] == nil {
				days[day] = newTally()
			}
			days[day].add(provider, model, u)
		}
	}
	return entries
}

// modelName is how a model is shown: provider/model.
func modelName(u modelUsage) string {
	switch {
	case u.Provider == "" && u.Model == "":
		return "(unknown)"
	case u.Provider == "":
		return u.Model
	}
	return u.Provider + "/" + u.Model
}

// usageHeads are the headers of a usage table, after first.
func usageHeads(first ...string) []string {
	return append(append([]string{}, first...), "MODEL", "MESSAGES", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST")
}

// usageRow adds a row of usage to a table of usageHeads(pre...).
func usageRow(t *table, st style, pre []string, name string, u modelUsage) {
	t.styled(st, append(append([]string{}, pre...), name, fmt.Sprint(u.Messages), count(u.Input), count(u.Output),
		count(u.CacheRead), count(u.CacheWrite), count(u.Total), money(u.Cost))...)
}

// usageTable prints the models' usage and, for several, their total.
func (c *call) usageTable(indent string, models []modelUsage, total modelUsage) {
	t := c.table(usageHeads()...)
	t.indent = indent
	for _, u := range models {
		usageRow(t, "", nil, modelName(u), u)
	}
	if len(models) > 1 {
		usageRow(t, bold, nil, "total", total)
	}
	t.flush()
}

// count writes a number with thousands separators: 1,234,567.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// money writes a cost in the provider's unit, as ccusage does: $1.23.
func money(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
