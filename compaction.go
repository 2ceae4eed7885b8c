package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNothingToCompact says a compaction would summarize nothing: the
// whole context fits in what it keeps.
var ErrNothingToCompact = errors.New("session: nothing to compact")

// Compaction defaults, as pi has them.
const (
	DefaultReserveTokens    = 16384
	DefaultKeepRecentTokens = 20000
)

// TokenEstimator estimates how many tokens a message takes in a model's
// context. Plug in the model's own tokenizer for exact counts.
type TokenEstimator interface {
	EstimateTokens(m *Message) int64
}

// TokenEstimatorFunc adapts a function to TokenEstimator.
type TokenEstimatorFunc func(m *Message) int64

// EstimateTokens implements TokenEstimator.
func (f TokenEstimatorFunc) EstimateTokens(m *Message) int64 { return f(m) }

// DefaultTokenEstimator counts a token for every four bytes of what the
// model reads of a message (text, thinking, tool names and arguments,
// tool output, summaries, a bash command and its output), rounded up,
// and 1,200 tokens for an image. Tokenizers give about four characters of
// English or code per token; counting bytes, not characters, errs on the
// side of more tokens, which is the safe side for deciding to compact.
var DefaultTokenEstimator TokenEstimator = TokenEstimatorFunc(estimateTokens)

// imageTokens is what DefaultTokenEstimator counts for an image.
const imageTokens = 1200

func estimateTokens(m *Message) int64 {
	n := int64(len(m.Summary) + len(m.Command) + len(m.Output))
	images := int64(0)
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case BlockImage:
			images++
		default:
			n += int64(len(b.Text) + len(b.Thinking) + len(b.Name) + len(b.Arguments))
		}
	}
	return (n+3)/4 + images*imageTokens
}

// usageTokens is the context size a model reported with an assistant
// message, 0 if it reported none (or the turn was cut short).
func usageTokens(m *Message) int64 {
	if m.Role != RoleAssistant || m.Usage == nil || m.StopReason == StopAborted || m.StopReason == StopError {
		return 0
	}
	u := m.Usage
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// ContextTokens estimates how many tokens msgs take in a model's context:
// the usage the model reported with the last assistant message that has
// one, plus an estimate (est; nil for DefaultTokenEstimator) of the
// messages after it. Without reported usage, every message is estimated.
//
// Usage reported before a compaction measured the context before it, so
// after a compaction summary only assistant messages timed after the
// summary count for their usage; the history kept from before it is
// estimated (and so are messages without timestamps). Session's
// ContextTokens knows which messages came after the compaction without
// looking at times.
func ContextTokens(msgs []*Message, est TokenEstimator) int64 {
	trust := 0
	for k := len(msgs) - 1; k >= 0; k-- {
		if msgs[k].Role != RoleCompactionSummary {
			continue
		}
		trust = k + 1
		since := msgs[k].Timestamp
		for j := k + 1; j < len(msgs); j++ {
			if m := msgs[j]; m.Role == RoleAssistant && (since <= 0 || m.Timestamp <= since) {
				trust = j + 1 // from before the compaction, or cannot tell
			}
		}
		break
	}
	return contextTokens(msgs, trust, est)
}

// contextTokens is ContextTokens trusting the usage of msgs[trust:] only.
func contextTokens(msgs []*Message, trust int, est TokenEstimator) int64 {
	if est == nil {
		est = DefaultTokenEstimator
	}
	var total int64
	for k := len(msgs) - 1; k >= 0; k-- {
		if k >= trust {
			if u := usageTokens(msgs[k]); u > 0 {
				return total + u
			}
		}
		total += est.EstimateTokens(msgs[k])
	}
	return total
}

// CompactionOptions configures compaction. The zero value (or nil) uses
// the defaults documented on each field.
type CompactionOptions struct {
	// ContextWindow is the model's context window in tokens; NeedsCompaction
	// needs it (it is false without one).
	ContextWindow int64
	// ReserveTokens is room kept free for the model's reply: compaction is
	// due when the context takes more than ContextWindow - ReserveTokens.
	// Default DefaultReserveTokens.
	ReserveTokens int64
	// KeepRecentTokens is about how much recent history a compaction keeps
	// as it is. Default DefaultKeepRecentTokens.
	KeepRecentTokens int64
	// Estimator estimates tokens; default DefaultTokenEstimator.
	Estimator TokenEstimator
	// Instructions are passed to the Summarizer (a user's "/compact focus
	// on the API").
	Instructions string
	// FileOp tells which file a tool call reads or modifies; default
	// DefaultFileOp.
	FileOp FileOpFunc
}

func (o *CompactionOptions) withDefaults() CompactionOptions {
	var c CompactionOptions
	if o != nil {
		c = *o
	}
	if c.ReserveTokens <= 0 {
		c.ReserveTokens = DefaultReserveTokens
	}
	if c.KeepRecentTokens <= 0 {
		c.KeepRecentTokens = DefaultKeepRecentTokens
	}
	if c.Estimator == nil {
		c.Estimator = DefaultTokenEstimator
	}
	if c.FileOp == nil {
		c.FileOp = DefaultFileOp
	}
	return c
}

// ContextTokens estimates the tokens of the context at the leaf (see the
// ContextTokens function); est nil means DefaultTokenEstimator.
func (s *Session) ContextTokens(est TokenEstimator) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := s.leafCtx()
	return contextTokens(pc.msgs, pc.fresh, est)
}

// NeedsCompaction reports whether the context at the leaf takes more than
// the context window minus the reserve. It is false without a window.
func (s *Session) NeedsCompaction(opts *CompactionOptions) bool {
	o := opts.withDefaults()
	if o.ContextWindow <= 0 {
		return false
	}
	return s.ContextTokens(o.Estimator) > o.ContextWindow-o.ReserveTokens
}

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

// CompactionPlan is what a compaction of the context at a leaf would do:
// which history it summarizes and where the kept part starts. It never
// separates a tool call from its results: the kept part starts at a user,
// assistant, bash, custom or branch summary message no earlier call is
// still waiting on.
type CompactionPlan struct {
	// LeafID is the leaf the plan was made at.
	LeafID string
	// FirstKeptEntryID is the entry the kept history starts at.
	FirstKeptEntryID string
	// Summarize is the history to summarize: whole turns, from the start
	// or from where the previous compaction's kept history began.
	Summarize []*Message
	// TurnPrefix is, when the cut falls inside a turn (one turn longer
	// than what is kept), the part of that turn before the cut, to be
	// summarized on its own; SplitTurn is then true.
	TurnPrefix []*Message
	SplitTurn  bool
	// PreviousSummary is the summary of the previous compaction on the
	// path, for the summarizer to update.
	PreviousSummary string
	// TokensBefore estimates the context now; TokensKept what stays of it
	// (the summary not counted).
	TokensBefore, TokensKept int64
	// Files lists the files read and modified in what is summarized, with
	// those the previous compaction listed.
	Files FileOps

	est TokenEstimator // the estimator the plan was made with
}

// PlanCompaction plans a compaction of the context at the leaf, keeping
// about opts.KeepRecentTokens of recent history. ErrNothingToCompact if
// there is no history before what it would keep.
func (s *Session) PlanCompaction(opts *CompactionOptions) (*CompactionPlan, error) {
	o := opts.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.planCompaction(&o)
}

func (s *Session) planCompaction(o *CompactionOptions) (*CompactionPlan, error) {
	pc := s.leafCtx()
	msgs, ids := pc.msgs, pc.ids
	start := 0 // the first message that may be summarized
	var files fileSet
	plan := &CompactionPlan{LeafID: s.leafID(), TokensBefore: contextTokens(msgs, pc.fresh, o.Estimator), est: o.Estimator}
	if pc.compacted && len(msgs) > 0 && msgs[0].Role == RoleCompactionSummary {
		plan.PreviousSummary = msgs[0].Summary
		if i, ok := s.t.lookup(ids[0]); ok {
			var c Compaction
			s.t.nodes[i].e.payload(&c)
			files.addDetails(c.Details)
		}
		start = 1
	}
	cut, kept, turn := s.findCut(msgs, start, o)
	if cut <= start {
		return nil, ErrNothingToCompact
	}
	plan.FirstKeptEntryID = ids[cut]
	plan.TokensKept = kept
	// A summarizer is a model too: it never gets a blob reference as an
	// image's data.
	plan.Summarize = sendable(msgs[start:turn:turn])
	if turn < cut {
		plan.TurnPrefix = sendable(msgs[turn:cut:cut])
		plan.SplitTurn = true
	}
	files.addCalls(msgs[start:cut], o.FileOp)
	for k := start; k < cut; k++ {
		if msgs[k].Role == RoleBranchSummary {
			if i, ok := s.t.lookup(ids[k]); ok {
				var b BranchSummary
				s.t.nodes[i].e.payload(&b)
				files.addDetails(b.Details)
			}
		}
	}
	plan.Files = files.ops()
	return plan, nil
}

// findCut returns where the kept history starts in msgs (msgs[start:]
// may be summarized), the estimated tokens kept, and where the turn the
// cut falls in starts (the cut itself at a turn boundary): start when it all
// fits in KeepRecentTokens. Otherwise it cuts at a turn boundary (a user
// message or a user's bash execution no earlier call is still waiting
// on): of the boundaries just before and just after the point where the
// kept history reaches KeepRecentTokens, the one whose kept size is
// closer to it. Only when the last turn alone is longer than what is kept
// does it cut inside that turn, at the latest point where a context may
// start (not a tool result, no call before it waiting on a result after
// it) that keeps at least KeepRecentTokens.
func (s *Session) findCut(msgs []*Message, start int, o *CompactionOptions) (cut int, keptTokens int64, turn int) {
	// inside[k] > 0: msgs[k] lies between a call and its result (the
	// result included). A result answers the latest call with its id
	// before it that no result answered yet: ids may repeat.
	inside := make([]int, len(msgs)+1)
	calls := map[string]int{} // call id -> index of its assistant message
	for k := start; k < len(msgs); k++ {
		switch m := msgs[k]; m.Role {
		case RoleAssistant:
			for i := range m.Content {
				if b := &m.Content[i]; b.Type == BlockToolCall {
					calls[b.ID] = k
				}
			}
		case RoleToolResult:
			if a, ok := calls[m.ToolCallID]; ok {
				delete(calls, m.ToolCallID)
				inside[a+1]++
				inside[k+1]--
			}
		}
	}
	// valid[k]: msgs[k] may start a context; boundary[k]: and a turn.
	valid := make([]bool, len(msgs))
	boundary := make([]bool, len(msgs))
	open := 0
	for k := start; k < len(msgs); k++ {
		open += inside[k]
		switch msgs[k].Role {
		case RoleUser, RoleBashExecution:
			boundary[k] = open == 0
			valid[k] = open == 0
		case RoleAssistant, RoleCustom, RoleBranchSummary:
			valid[k] = open == 0
		}
	}
	// kept[k]: the tokens of msgs[k:].
	kept := make([]int64, len(msgs)+1)
	for k := len(msgs) - 1; k >= start; k-- {
		kept[k] = kept[k+1] + o.Estimator.EstimateTokens(msgs[k])
	}
	if kept[start] <= o.KeepRecentTokens {
		return start, kept[start], start // it all fits in what is kept
	}
	// reach: the latest index whose suffix holds KeepRecentTokens.
	reach := len(msgs) - 1
	for reach > start && kept[reach] < o.KeepRecentTokens {
		reach--
	}
	before, after := -1, -1
	for k := reach; k > start; k-- {
		if boundary[k] {
			before = k
			break
		}
	}
	for k := reach + 1; k < len(msgs); k++ {
		if boundary[k] {
			after = k
			break
		}
	}
	switch {
	case before >= 0 && after >= 0:
		if kept[before]-o.KeepRecentTokens <= o.KeepRecentTokens-kept[after] {
			return before, kept[before], before
		}
		return after, kept[after], after
	case after >= 0:
		return after, kept[after], after
	}
	// The last turn is longer than what is kept: cut inside it, at the
	// latest valid point (its own start, before, if there is none).
	for k := reach; k > start; k-- {
		if valid[k] {
			turn := k
			for turn > start && !boundary[turn] {
				turn--
			}
			return k, kept[k], turn
		}
	}
	return start, kept[start], start
}

// SummaryKind says what a summary request covers.
type SummaryKind int

const (
	// SummaryHistory: the history a compaction replaces.
	SummaryHistory SummaryKind = iota
	// SummaryTurnPrefix: the first part of a turn a compaction cuts
	// through (the rest of the turn is kept).
	SummaryTurnPrefix
	// SummaryBranch: the path left behind when moving to another branch.
	SummaryBranch
)

func (k SummaryKind) String() string {
	switch k {
	case SummaryHistory:
		return "history"
	case SummaryTurnPrefix:
		return "turn prefix"
	case SummaryBranch:
		return "branch"
	}
	return fmt.Sprintf("SummaryKind(%d)", int(k))
}

// SummaryRequest is what a Summarizer is asked to summarize.
type SummaryRequest struct {
	Kind     SummaryKind
	Messages []*Message
	// PreviousSummary is the summary the new one updates (compaction), "" if none.
	PreviousSummary string
	// Instructions are the host's or user's own ("focus on the API").
	Instructions string
	// Files lists the files read and modified so far. The library appends
	// these lists to the summary itself (as pi does); they are here for
	// the summarizer to mention.
	Files FileOps
}

// Summarizer makes summaries for compactions and branch summaries. The
// host implements it with its model; ExtractiveSummarizer needs none.
// Messages in a request are shared with the session: read them only.
type Summarizer interface {
	Summarize(ctx context.Context, req *SummaryRequest) (string, error)
}

// SummarizerFunc adapts a function to Summarizer.
type SummarizerFunc func(ctx context.Context, req *SummaryRequest) (string, error)

// Summarize implements Summarizer.
func (f SummarizerFunc) Summarize(ctx context.Context, req *SummaryRequest) (string, error) {
	return f(ctx, req)
}

// CompactionResult is what Compact did.
type CompactionResult struct {
	Entry   Entry // the compaction entry, the new leaf
	Plan    *CompactionPlan
	Summary string // as stored: the summarizer's text and the file lists
	// TokensAfter estimates the context after the compaction.
	TokensAfter int64
}

// Compact summarizes the history of the context at the leaf with sum and
// appends a compaction entry: from then on the context starts with the
// summary, followed by the kept history (see PlanCompaction). A cut
// inside a turn has the turn's first part summarized on its own, and the
// two summaries joined. The session is not locked while sum runs; appends
// made meanwhile are kept.
func (s *Session) Compact(ctx context.Context, sum Summarizer, opts *CompactionOptions) (res *CompactionResult, err error) {
	if err := s.closedErr(ctx); err != nil {
		return nil, err
	}
	start := s.begin()
	defer func() { s.report(ctx, OpCompact, start, summarized(res), err) }()
	o := opts.withDefaults()
	plan, err := s.PlanCompaction(&o)
	if err != nil {
		return nil, err
	}
	summary, err := summarizePlan(ctx, sum, plan, o.Instructions)
	if err != nil {
		return nil, err
	}
	return s.applyCompaction(ctx, plan, summary)
}

// summarized is the count an OpCompact event reports: the messages the
// summary replaced.
func summarized(res *CompactionResult) int {
	if res == nil || res.Plan == nil {
		return 0
	}
	return len(res.Plan.Summarize)
}

// summarizePlan asks for the summaries of a plan and joins them.
func summarizePlan(ctx context.Context, sum Summarizer, plan *CompactionPlan, instructions string) (string, error) {
	var history, prefix string
	if len(plan.Summarize) > 0 || !plan.SplitTurn {
		var err error
		history, err = sum.Summarize(ctx, &SummaryRequest{Kind: SummaryHistory, Messages: plan.Summarize,
			PreviousSummary: plan.PreviousSummary, Instructions: instructions, Files: plan.Files})
		if err != nil {
			return "", fmt.Errorf("session: summarizing history: %w", err)
		}
	}
	if plan.SplitTurn {
		req := &SummaryRequest{Kind: SummaryTurnPrefix, Messages: plan.TurnPrefix, Instructions: instructions, Files: plan.Files}
		if len(plan.Summarize) == 0 {
			req.PreviousSummary = plan.PreviousSummary
		}
		var err error
		if prefix, err = sum.Summarize(ctx, req); err != nil {
			return "", fmt.Errorf("session: summarizing the split turn: %w", err)
		}
	}
	switch {
	case prefix == "":
		return history, nil
	case history == "":
		return prefix, nil
	}
	return history + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix, nil
}

// ApplyCompaction appends the compaction entry of a plan (made by
// PlanCompaction) with a summary made for it by the host's own means; the
// file lists of the plan are appended to the summary and kept in the
// entry's details. Appends made since the plan are kept after it; if the
// leaf moved off the path the plan was made on, it fails with
// ErrConflict.
func (s *Session) ApplyCompaction(ctx context.Context, plan *CompactionPlan, summary string) (res *CompactionResult, err error) {
	if err := s.closedErr(ctx); err != nil {
		return nil, err
	}
	start := s.begin()
	defer func() { s.report(ctx, OpCompact, start, summarized(res), err) }()
	return s.applyCompaction(ctx, plan, summary)
}

// applyCompaction is ApplyCompaction, unreported.
func (s *Session) applyCompaction(ctx context.Context, plan *CompactionPlan, summary string) (*CompactionResult, error) {
	est := plan.est
	if est == nil {
		est = DefaultTokenEstimator
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	// What was planned must still be what the context holds: the plan's
	// leaf on the path (appends since are kept after the compaction).
	leaf, ok := s.t.lookup(plan.LeafID)
	if !ok || !s.onPath(leaf, s.leaf) {
		return nil, fmt.Errorf("%w: the leaf moved off %s, where the compaction was planned", ErrConflict, plan.LeafID)
	}
	if first, ok := s.t.lookup(plan.FirstKeptEntryID); !ok || !s.onPath(first, s.leaf) {
		return nil, fmt.Errorf("%w: entry %s, where the plan keeps history from, is not on the path", ErrConflict, plan.FirstKeptEntryID)
	}
	text := withFiles(summary, plan.Files)
	// What the context will hold: the summary, then everything from the
	// first kept entry (including what was appended since the plan).
	after := est.EstimateTokens(&Message{Role: RoleCompactionSummary, Summary: text})
	pc := s.leafCtx()
	for k, id := range pc.ids {
		if id == plan.FirstKeptEntryID {
			for _, m := range pc.msgs[k:] {
				after += est.EstimateTokens(m)
			}
			break
		}
	}
	c := Compaction{Summary: text, FirstKeptEntryID: plan.FirstKeptEntryID, TokensBefore: plan.TokensBefore,
		TokensAfter: after, Details: plan.Files.details()}
	es, err := s.commit(ctx, s.leafID, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(TypeCompaction, d.newID(), d.parent, d.now, c)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	return &CompactionResult{Entry: es[0], Plan: plan, Summary: text, TokensAfter: after}, nil
}

// onPath reports whether node a is on the path from the root to b.
// Callers hold mu.
func (s *Session) onPath(a, b int32) bool {
	da := s.t.nodes[a].depth
	if da < 0 || b < 0 {
		return false
	}
	for j := b; j >= 0; j = s.t.nodes[j].parent {
		if j == a {
			return true
		}
		if s.t.nodes[j].depth <= da {
			return false
		}
	}
	return false
}

// ---- Prune ----

// PruneResult says what Prune did.
type PruneResult struct {
	Dropped int // entries removed
	Kept    int // entries left
}

// ErrUnclean refuses an operation that rewrites the log of a session whose
// tree has structural problems (duplicate ids, cycles, missing parents):
// Verify lists them.
var ErrUnclean = errors.New("session: the tree has structural problems; see Verify")

// PruneOptions configures Prune. The zero value (or nil) is the safe
// default.
type PruneOptions struct {
	// DropUnreadable lets Prune drop the lines of the stored log that
	// could not be read as entries (see Log.Malformed and
	// RewriteOptions.DropUnreadable). Without it a log with such lines is
	// refused with a *CorruptError naming them.
	DropUnreadable bool
}

// Prune rewrites the session's log without the entries no context needs
// any more: messages, custom messages, branch summaries and compactions
// that a later compaction summarized on every branch that reaches them.
// The contexts of every end of a branch, of the leaf and of every labeled
// entry (checkpoints) stay exactly as they were, and so does the leaf;
// other entries (settings, labels, titles, extension state, unknown
// types) are all kept; the children of dropped entries move up to the
// nearest kept ancestor (their parentId is rewritten, the rest of their
// bytes kept).
//
// The rewrite is atomic and conditional (Store.Rewrite with the last
// entry and the number of entries this handle knows of): if another
// writer changed the log meanwhile, Prune reads it again and decides
// anew, so nothing another writer appended is ever dropped. A log with
// lines that could not be read is refused (*CorruptError, ErrCorrupt)
// unless opts.DropUnreadable is set, and a tree with structural problems
// with ErrUnclean.
//
// Prune keeps what every branch end, label and this handle's leaf need,
// but cannot know where other handles stand: a handle (in this process
// or another) whose leaf is an entry Prune drops, because it opened the
// session there and has appended nothing since, gets ErrConflict ("entry
// ... was removed by another writer") at its next append, and should be
// opened again. A handle that has appended keeps its branch, as every
// branch end is kept; a checkpoint (Checkpoint) keeps a place for good.
func (s *Session) Prune(ctx context.Context, opts *PruneOptions) (PruneResult, error) {
	var o PruneOptions
	if opts != nil {
		o = *opts
	}
	if err := s.lock(ctx); err != nil {
		return PruneResult{}, err
	}
	defer s.mu.Unlock()
	unlock, err := s.takeTurn(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	defer unlock()
	for attempt := 0; ; attempt++ {
		res, err := s.prune(ctx, o)
		if err == nil || !errors.Is(err, ErrConflict) {
			return res, err
		}
		if attempt+1 >= maxConflictRetries {
			return res, conflictErr(attempt+1, err)
		}
		// Another writer changed the log: read it again and decide anew.
		if berr := backoff(ctx, attempt+1); berr != nil {
			return PruneResult{}, errors.Join(err, berr)
		}
		if rerr := s.reload(ctx); rerr != nil {
			return PruneResult{}, errors.Join(err, rerr)
		}
	}
}

// prune is one attempt of Prune; callers hold mu.
func (s *Session) prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	if len(s.malformed)+len(s.partial) > 0 && !o.DropUnreadable {
		return PruneResult{}, unreadableError(s.pathOf(), &Log{Malformed: s.malformed, Partial: s.partial}, "pruning session "+s.id)
	}
	for i := range s.t.nodes {
		if s.t.nodes[i].flags&(fShadowed|fMissingParent|fSelfParent|fCycle) != 0 {
			return PruneResult{}, ErrUnclean
		}
	}
	needed := s.t.neededEntries(s.leaf)
	n := len(s.t.nodes)
	drop := 0
	for i := range needed {
		if !needed[i] {
			drop++
		}
	}
	if drop == 0 {
		return PruneResult{Kept: n}, nil
	}
	entries := make([]Entry, 0, n-drop)
	for i := range s.t.nodes {
		if !needed[i] {
			continue
		}
		e := s.t.nodes[i].e
		p := s.t.nodes[i].parent
		for p >= 0 && !needed[p] {
			p = s.t.nodes[p].parent
		}
		parent := ""
		if p >= 0 {
			parent = s.t.nodes[p].e.id
		}
		if parent != e.parent {
			var err error
			if e, err = e.withParent(parent); err != nil {
				return PruneResult{}, err
			}
		}
		entries = append(entries, e)
	}
	ro := s.rewriteOptions()
	ro.DropUnreadable = o.DropUnreadable
	if err := s.store.Rewrite(ctx, s.id, ro, s.header, entries); err != nil {
		return PruneResult{}, err
	}
	leaf := s.leafID()
	s.reset(&Log{Header: s.header, Entries: entries})
	s.leaf = -1
	if i, ok := s.t.lookup(leaf); ok {
		s.leaf = i
	}
	s.last = lastID(entries)
	return PruneResult{Dropped: drop, Kept: len(entries)}, nil
}

// neededEntries marks the entries some context needs: every entry but the
// messages (and summaries) that the last compaction on every path through
// them summarizes, and for each context the message that names its model.
// The contexts kept are those of the ends of branches, of leaf and of
// labeled entries.
func (t *tree) neededEntries(leaf int32) []bool {
	needed := make([]bool, len(t.nodes))
	var ends []int32
	for i := range t.nodes {
		n := &t.nodes[i]
		switch n.e.kind {
		case kindMessage, kindCustomMessage, kindBranchSummary, kindCompaction:
		default:
			needed[i] = true // settings, labels, extension state, unknown types
		}
		if n.first < 0 || t.labels[n.e.id] != "" {
			ends = append(ends, int32(i))
		}
	}
	if leaf >= 0 {
		ends = append(ends, leaf)
	}
	done := map[int32]bool{}
	for _, end := range ends {
		if done[end] {
			continue
		}
		done[end] = true
		path := t.pathTo(end)
		from := 0
		for pos := len(path) - 1; pos >= 0; pos-- {
			n := &t.nodes[path[pos]]
			if n.e.kind != kindCompaction {
				continue
			}
			from = pos // the compaction itself, then what follows
			var c Compaction
			if n.e.payload(&c); c.FirstKeptEntryID != "" {
				if k, ok := t.lookup(c.FirstKeptEntryID); ok {
					if d := t.nodes[k].depth; d >= 0 && int(d) < pos && path[d] == k {
						from = int(d)
					}
				}
			}
			break
		}
		for _, i := range path[from:] {
			needed[i] = true
		}
		// The context's model may come from an assistant message before
		// the kept part: keep the entry that names it.
		if i, _, ok := t.modelMessage(path); ok {
			needed[i] = true
		}
	}
	return needed
}
