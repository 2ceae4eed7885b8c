package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExtractiveSummarizer is a Summarizer that needs no model: it builds a
// summary from the conversation's own words (the first request, the later
// ones, the tools used and the last answer), deterministically. Updating
// its own earlier summary, it carries the goal, the requests and the tool
// counts over, so that repeated compactions stay one summary of bounded
// size rather than nesting; another summary (a model's) is quoted as it
// is, shortened. Tests and examples use it; a host can fall back on it
// when its model is down. The zero value is ready to use.
type ExtractiveSummarizer struct {
	// MaxChars bounds the summary's length in bytes; default 4,000, or
	// less when the request's MaxTokens asks for less (four characters a
	// token). A longer summary is cut between lines, the cut marked by a
	// last line "…", so that updating it reads back what it shows.
	MaxChars int
}

var _ Summarizer = ExtractiveSummarizer{}

// extractive is what an extractive summary holds, and what is read back
// from an earlier one.
type extractive struct {
	goal    string
	asks    []string // requests after the goal, oldest first
	earlier int      // requests left out before asks
	tools   map[string]int
	last    string
	quoted  string // an earlier summary in another form
}

// The latest requests say most about where things stand; older ones are
// counted.
const extractiveAsks = 12

// Summarize implements Summarizer.
func (x ExtractiveSummarizer) Summarize(ctx context.Context, req *SummaryRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	limit := x.MaxChars
	if limit <= 0 {
		limit = 4000
		if req.MaxTokens > 0 {
			limit = int(min(int64(limit), max(4*req.MaxTokens, 200)))
		}
	}
	sum := readExtractive(req.PreviousSummary)
	if sum.quoted != "" {
		sum.quoted = truncateText(sum.quoted, limit/3)
	}
	// Only the first request, the latest ones and the last answer are
	// quoted: the others are counted, not read (a compaction of a long
	// session hands over tens of thousands of messages).
	first := 0
	if sum.goal == "" {
		for ; first < len(req.Messages); first++ {
			if m := req.Messages[first]; m.Role == RoleUser {
				if sum.goal = oneLine(m.Text(), 200); sum.goal != "" {
					first++
					break
				}
			}
		}
	}
	// One walk over the messages, newest first: the asks, and the tools
	// called (a long session's messages are read once).
	countTools := func(m *Message) {
		for i := range m.Content {
			if b := &m.Content[i]; b.Type == BlockToolCall {
				sum.tools[b.Name]++
			}
		}
	}
	var recent []string // newest first
	for k := len(req.Messages) - 1; k >= first; k-- {
		m := req.Messages[k]
		var ask string
		switch m.Role {
		case RoleAssistant:
			countTools(m)
		case RoleUser:
			if len(recent) < extractiveAsks {
				ask = oneLine(m.Text(), 200)
			} else if hasText(m) {
				sum.earlier++
			}
		case RoleBranchSummary, RoleCompactionSummary:
			if len(recent) < extractiveAsks {
				ask = "(summary) " + oneLine(m.Summary, 200)
			} else {
				sum.earlier++
			}
		}
		if ask != "" {
			recent = append(recent, ask)
		}
	}
	for k := len(req.Messages) - 1; k >= 0; k-- {
		if m := req.Messages[k]; m.Role == RoleAssistant {
			if t := oneLine(joinText(m.Content, " "), 300); t != "" {
				sum.last = t
				break
			}
		}
	}
	for _, m := range req.Messages[:first] {
		if m.Role == RoleAssistant {
			countTools(m)
		}
	}
	slices.Reverse(recent)
	sum.asks = append(sum.asks, recent...)
	if n := len(sum.asks) - extractiveAsks; n > 0 {
		sum.earlier += n
		sum.asks = sum.asks[n:]
	}
	var b strings.Builder
	title := map[SummaryKind]string{SummaryHistory: "Conversation so far", SummaryTurnPrefix: "Earlier in this turn", SummaryBranch: "Branch left behind"}[req.Kind]
	fmt.Fprintf(&b, "## %s (summarized without a model)\n", title)
	if sum.quoted != "" {
		// Quoted, so that its own headings are not taken for ours.
		b.WriteString("\n## Earlier summary\n")
		for _, line := range strings.Split(sum.quoted, "\n") {
			b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
		}
	}
	if sum.goal != "" {
		fmt.Fprintf(&b, "\n## Goal\n%s\n", escapeLine(sum.goal))
	}
	if len(sum.asks) > 0 || sum.earlier > 0 {
		b.WriteString("\n## Progress\n")
		if sum.earlier > 0 {
			fmt.Fprintf(&b, "- … %d earlier requests\n", sum.earlier)
		}
		for _, a := range sum.asks {
			fmt.Fprintf(&b, "- %s\n", escapeLine(a))
		}
	}
	if len(sum.tools) > 0 {
		names := make([]string, 0, len(sum.tools))
		for n := range sum.tools {
			names = append(names, n)
		}
		slices.Sort(names)
		b.WriteString("\n## Tools used\n")
		for _, n := range names {
			fmt.Fprintf(&b, "- %s ×%d\n", n, sum.tools[n])
		}
	}
	if sum.last != "" {
		fmt.Fprintf(&b, "\n## Last answer\n%s\n", escapeLine(sum.last))
	}
	if req.Instructions != "" {
		fmt.Fprintf(&b, "\n## Focus asked for\n%s\n", oneLine(req.Instructions, 300))
	}
	return cutSummary(b.String(), limit), nil
}

// cutSummary bounds a summary to max bytes. It cuts between lines,
// leaving no blank line or heading without its content at the end, and
// marks the cut with a line that is only "…", which readExtractive
// skips: a cut inside a line would leave a piece of it (a heading's
// "##…", a count's "- … 1…") that reads back as a request or an answer.
// Only when no line ends early enough is a line cut (truncateText).
func cutSummary(s string, max int) string {
	const mark = "…"
	if len(s) <= max {
		return s
	}
	title := strings.IndexByte(s, '\n') // the first line stays
	i := -1
	if max > len(mark) {
		i = strings.LastIndexByte(s[:max-len(mark)], '\n')
	}
	if title < 0 || i < title {
		return truncateText(s, max)
	}
	kept := s[:i] // without the line break
	for {
		j := strings.LastIndexByte(kept, '\n')
		if j < title {
			break
		}
		if last := kept[j+1:]; strings.TrimSpace(last) != "" && !strings.HasPrefix(last, "## ") {
			break
		}
		kept = kept[:j]
	}
	return kept + "\n" + mark
}

// readExtractive reads back an earlier extractive summary: its sections
// up to the file lists or a split turn's part, which the library adds.
// Any other text is kept whole as quoted.
func readExtractive(prev string) extractive {
	sum := extractive{tools: map[string]int{}}
	prev = strings.TrimSpace(prev)
	if prev == "" {
		return sum
	}
	if !strings.HasPrefix(prev, "## ") || !strings.Contains(firstLine(prev), "(summarized without a model)") {
		sum.quoted = prev
		return sum
	}
	section := ""
	turn := false // in the part a split turn added (its goal is a request)
	for _, line := range strings.Split(prev, "\n")[1:] {
		switch {
		case strings.HasPrefix(line, "<read-files>"), strings.HasPrefix(line, "<modified-files>"):
			return sum // the library's file lists: made anew each time
		case line == "---":
			turn, section = true, ""
			continue
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
			if i := strings.Index(section, " (summarized without a model)"); i >= 0 {
				section = "" // a title
			}
			continue
		case strings.TrimSpace(line) == "", line == "…":
			// A line that is only "…" is where the limit cut the summary
			// (a user's line that starts with one is escaped): it belongs
			// to no section.
			continue
		}
		switch section {
		case "Earlier summary":
			if sum.quoted != "" {
				sum.quoted += "\n"
			}
			sum.quoted += strings.TrimPrefix(strings.TrimPrefix(line, ">"), " ")
		case "Goal":
			switch {
			case turn && sum.goal != "":
				sum.asks = append(sum.asks, unescapeLine(line))
			case sum.goal == "": // the section's one line
				sum.goal = unescapeLine(line)
			}
		case "Progress":
			item := strings.TrimPrefix(line, "- ")
			var n int
			if _, err := fmt.Sscanf(item, "… %d earlier requests", &n); err == nil {
				sum.earlier += n
			} else {
				sum.asks = append(sum.asks, unescapeLine(item))
			}
		case "Tools used":
			item := strings.TrimPrefix(line, "- ")
			if i := strings.LastIndex(item, " ×"); i > 0 {
				var n int
				if _, err := fmt.Sscanf(item[i+len(" ×"):], "%d", &n); err == nil {
					sum.tools[item[:i]] += n
				}
			}
		case "Last answer":
			sum.last = unescapeLine(line)
		}
	}
	return sum
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// oneLine collapses whitespace and cuts s to max bytes (at a rune),
// reading no more of s than it needs.
// escapeLine guards a line of the user's text that readExtractive would
// take for its own structure (a heading, the turn separator, the file
// lists, the count of earlier requests) with a leading backslash;
// unescapeLine removes it. A line that starts with a backslash gets one
// too, so that the pair is exact.
func escapeLine(s string) string {
	for _, p := range []string{"\\", "#", "-", "<", "…"} {
		if strings.HasPrefix(s, p) {
			return "\\" + s
		}
	}
	return s
}

func unescapeLine(s string) string { return strings.TrimPrefix(s, "\\") }

func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		if b.Len() > max {
			break
		}
	}
	return truncateText(b.String(), max)
}

// hasText reports whether a message has some text that is not space.
func hasText(m *Message) bool {
	for i := range m.Content {
		if b := &m.Content[i]; b.Type == BlockText && strings.TrimSpace(b.Text) != "" {
			return true
		}
	}
	return false
}

// truncateText cuts s to at most max bytes at a rune, marking the cut
// with "…" when there is room for it.
func truncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	mark := "…"
	if max < len(mark) {
		mark = ""
	}
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// ---- Branch summaries ----

// BranchSummaryOptions configures SummarizeBranch. The zero value (or nil)
// uses the defaults documented on each field.
type BranchSummaryOptions struct {
	// TokenBudget bounds what of the abandoned path goes to the summarizer,
	// newest first. Default DefaultKeepRecentTokens.
	TokenBudget int64
	// Estimator estimates tokens; default DefaultTokenEstimator.
	Estimator TokenEstimator
	// Instructions are passed to the Summarizer.
	Instructions string
	// FileOp tells which file a tool call reads or modifies; default
	// DefaultFileOp.
	FileOp FileOpFunc
}

// SummarizeBranch moves the leaf to entry target ("" for before the first
// entry), like BranchWithSummary, with a summary of the path it leaves
// made by sum: the entries from the common ancestor of the old leaf and
// target down to the old leaf, newest first within opts.TokenBudget. The
// files read and modified there (with those of summaries and compactions
// on it) are listed in the summary and kept in its details. When the move
// leaves nothing behind (target is below the leaf) it is a plain Branch
// and the returned entry is the target. The session is not locked while
// sum runs; if the leaf moved meanwhile (an append), nothing is done and
// the error is ErrConflict.
func (s *Session) SummarizeBranch(ctx context.Context, target string, sum Summarizer, opts *BranchSummaryOptions) (_ Entry, err error) {
	if err := s.makeWhole(ctx); err != nil {
		return Entry{}, err
	}
	if err := s.closedErr(ctx); err != nil {
		return Entry{}, err
	}
	start, left, reported := s.begin(), 0, false
	defer func() {
		if !reported {
			s.report(ctx, OpBranch, start, left, err)
		}
	}()
	var o BranchSummaryOptions
	if opts != nil {
		o = *opts
	}
	if o.TokenBudget <= 0 {
		o.TokenBudget = DefaultKeepRecentTokens
	}
	if o.Estimator == nil {
		o.Estimator = DefaultTokenEstimator
	}
	if o.FileOp == nil {
		o.FileOp = DefaultFileOp
	}
	msgs, files, leaf, err := s.abandoned(ctx, target, &o)
	if err != nil {
		return Entry{}, err
	}
	if len(msgs) == 0 {
		reported = true // by Branch
		if err := s.Branch(ctx, target); err != nil {
			return Entry{}, err
		}
		e, _ := s.Entry(target)
		return e, nil
	}
	summary, err := sum.Summarize(ctx, &SummaryRequest{Kind: SummaryBranch, Messages: sendable(msgs), Instructions: o.Instructions, Files: files})
	if err != nil {
		return Entry{}, fmt.Errorf("session: summarizing the branch: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return Entry{}, err
	}
	defer s.mu.Unlock()
	if now := s.leafID(); now != leaf {
		// Appended while the summary was made: it would be left behind
		// unsummarized.
		return Entry{}, fmt.Errorf("%w: the leaf moved from %s to %s while the branch was summarized", ErrConflict, leaf, now)
	}
	left = s.leftFor(target)
	return s.branchWithSummary(ctx, target, BranchSummary{Summary: withFiles(summary, files), Details: files.details()})
}

// abandoned collects the messages of the path the leaf would leave by
// moving to target, oldest first, within the budget, their files, and
// the leaf.
func (s *Session) abandoned(ctx context.Context, target string, o *BranchSummaryOptions) ([]*Message, FileOps, string, error) {
	if err := s.lock(ctx); err != nil {
		return nil, FileOps{}, "", err
	}
	defer s.mu.Unlock()
	t := int32(-1)
	if target != "" {
		var ok bool
		if t, ok = s.t.lookup(target); !ok || s.t.nodes[t].flags&fMarker != 0 {
			return nil, FileOps{}, "", fmt.Errorf("%w: entry %s", ErrNotFound, target)
		}
	}
	// The common ancestor: the deepest node on both paths.
	onTarget := map[int32]bool{}
	for j := t; j >= 0; j = s.t.nodes[j].parent {
		onTarget[j] = true
	}
	var left []int32 // from the old leaf up to the common ancestor, newest first
	for j := s.leaf; j >= 0 && !onTarget[j]; j = s.t.nodes[j].parent {
		left = append(left, j)
		if len(left) > len(s.t.nodes) {
			break // a corrupt tree: never loop
		}
	}
	var files fileSet
	var msgs []*Message
	var used int64
	for _, i := range left {
		m := s.t.contextMessage(i)
		if m == nil {
			continue
		}
		if n := o.Estimator.EstimateTokens(m); used+n > o.TokenBudget && len(msgs) > 0 {
			break
		} else {
			used += n
		}
		msgs = append(msgs, m)
		switch s.t.nodes[i].e.kind {
		case kindBranchSummary:
			var b BranchSummary
			s.t.nodes[i].e.payload(&b)
			files.addDetails(b.Details)
		case kindCompaction:
			var c Compaction
			s.t.nodes[i].e.payload(&c)
			files.addDetails(c.Details)
		}
	}
	slices.Reverse(msgs)
	files.addCalls(msgs, o.FileOp)
	return msgs, files.ops(), s.leafID(), nil
}
