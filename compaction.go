package session

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Compaction defaults, as pi has them for the large windows of today's
// models; for a smaller window they scale down (see CompactionOptions).
const (
	DefaultReserveTokens    = 16384
	DefaultKeepRecentTokens = 20000
)

// CompactionOptions configures compaction. The zero value (or nil) uses
// the defaults documented on each field.
type CompactionOptions struct {
	// ContextWindow is the model's context window in tokens; NeedsCompaction
	// needs it (it is false without one).
	ContextWindow int64
	// Clear, when the host sends the model ClearedMessages, is what it
	// clears with: NeedsCompaction then measures the cleared list, so a
	// host clears first and compacts only when clearing is not enough.
	Clear *ClearOptions
	// ReserveTokens is room kept free for the model's reply: compaction is
	// due when the context takes more than ContextWindow - ReserveTokens.
	// Default DefaultReserveTokens, or a quarter of the window when that
	// is less.
	ReserveTokens int64
	// KeepRecentTokens is about how much recent history a compaction keeps
	// as it is. Default DefaultKeepRecentTokens, or half of what the window
	// leaves after the reserve when that is less, so that a compaction is
	// always possible when one is due and leaves room for the summary.
	KeepRecentTokens int64
	// Estimator estimates tokens; default DefaultTokenEstimator.
	Estimator TokenEstimator
	// Instructions are passed to the Summarizer (a user's "/compact focus
	// on the API").
	Instructions string
	// FileOp tells which file a tool call reads or modifies; default
	// DefaultFileOp.
	FileOp FileOpFunc

	// MaxMessages is a trigger beside the token one, as OpenCode has:
	// compaction is also due when the context holds more than MaxMessages
	// messages (a compaction summary counts as one). It works with or
	// without a ContextWindow; 0 means no such trigger.
	MaxMessages int
	// KeepRecentMessages is at most how many recent messages a compaction
	// keeps (fewer when KeepRecentTokens keeps fewer); default half of
	// MaxMessages, and no bound when MaxMessages is 0. It must be less
	// than MaxMessages, or a compaction could leave the context due again.
	KeepRecentMessages int
}

func (o *CompactionOptions) withDefaults() CompactionOptions {
	var c CompactionOptions
	if o != nil {
		c = *o
	}
	if c.ReserveTokens <= 0 {
		c.ReserveTokens = DefaultReserveTokens
		if c.ContextWindow > 0 {
			c.ReserveTokens = min(DefaultReserveTokens, c.ContextWindow/4)
		}
	}
	if c.KeepRecentTokens <= 0 {
		c.KeepRecentTokens = DefaultKeepRecentTokens
		if c.ContextWindow > 0 {
			c.KeepRecentTokens = max(1, min(DefaultKeepRecentTokens, (c.ContextWindow-c.ReserveTokens)/2))
		}
	}
	if c.Estimator == nil {
		c.Estimator = DefaultTokenEstimator
	}
	if c.FileOp == nil {
		c.FileOp = DefaultFileOp
	}
	if c.KeepRecentMessages <= 0 && c.MaxMessages > 0 {
		c.KeepRecentMessages = max(1, c.MaxMessages/2)
	}
	return c
}

// check refuses settings with which a due compaction could not bring the
// context under the window (ErrCompactionSettings); o has its defaults.
func (o *CompactionOptions) check() error {
	if o.MaxMessages < 0 || (o.MaxMessages > 0 && o.KeepRecentMessages >= o.MaxMessages) {
		return fmt.Errorf("%w: KeepRecentMessages %d keeps as many messages as MaxMessages %d allows: a compaction could leave the context due again; keep fewer",
			ErrCompactionSettings, o.KeepRecentMessages, o.MaxMessages)
	}
	if o.ContextWindow <= 0 {
		return nil
	}
	limit := o.ContextWindow - o.ReserveTokens
	switch {
	case limit <= 0:
		return fmt.Errorf("%w: ReserveTokens %d leaves nothing of ContextWindow %d", ErrCompactionSettings, o.ReserveTokens, o.ContextWindow)
	case o.KeepRecentTokens >= limit:
		return fmt.Errorf("%w: KeepRecentTokens %d keeps as much as ContextWindow %d minus ReserveTokens %d allows (%d): a compaction could never make the context fit; keep at most half of it",
			ErrCompactionSettings, o.KeepRecentTokens, o.ContextWindow, o.ReserveTokens, limit)
	}
	return nil
}

// NeedsCompaction reports whether the context at the leaf takes more than
// the context window minus the reserve, or holds more than MaxMessages
// messages. It is false with neither a window nor MaxMessages.
// The context's size is ContextTokens: the usage the latest reply
// reported, where it did, and estimates after it, so a model (or a proxy,
// or a test double) that reports too little usage delays compaction.
// Whenever it is true, Compact either brings the context under the
// window, or returns an error that says what the host must do: settings
// that cannot work (ErrCompactionSettings, and NeedsCompaction is true
// for them, so that the host hears of it), a context with nothing before
// its latest turn (ErrNothingToCompact), or one whose latest turn alone is
// over what the window leaves (ErrCompactionDoesNotFit), each with the
// sizes. On a nil *Session it is true, for the same reason: Compact then
// returns ErrNilSession.
func (s *Session) NeedsCompaction(opts *CompactionOptions) bool {
	if s == nil {
		return true
	}
	o := opts.withDefaults()
	if o.ContextWindow <= 0 && o.MaxMessages == 0 {
		return false
	}
	if o.check() != nil {
		return true
	}
	if o.MaxMessages > 0 && s.contextLen() > o.MaxMessages {
		return true
	}
	return o.ContextWindow > 0 && s.contextTokensFor(&o) > o.ContextWindow-o.ReserveTokens
}

// contextTokensFor is the context's size as the model gets it: cleared
// (o.Clear) or not.
func (s *Session) contextTokensFor(o *CompactionOptions) int64 {
	if o.Clear == nil {
		return s.ContextTokens(o.Estimator)
	}
	c := o.Clear.withDefaults()
	if o.Clear.Estimator == nil {
		c.Estimator = o.Estimator
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, st := s.clearedLocked(c)
	return st.TokensAfter
}

// contextLen is the number of messages of the context at the leaf.
func (s *Session) contextLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	return len(s.leafCtx().msgs)
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
	// SummaryTokens is what the summary may take for the compacted
	// context to fit the window with room to spare (half of what the
	// window, less the reserve and the kept history, leaves); 0 without
	// a window. Summarizers get it as SummaryRequest.MaxTokens.
	SummaryTokens int64

	est    TokenEstimator // the estimator the plan was made with
	window int64          // the window it was made for, 0 for none
	limit  int64          // what the window leaves, the reserve taken off
}

// PlanCompaction plans a compaction of the context at the leaf, keeping
// about opts.KeepRecentTokens of recent history. ErrNothingToCompact if
// there is no history before what it would keep.
func (s *Session) PlanCompaction(opts *CompactionOptions) (*CompactionPlan, error) {
	if err := s.makeWhole(context.Background()); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNilSession
	}
	o := opts.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
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
	plan := &CompactionPlan{LeafID: s.leafID(), TokensBefore: contextTokens(msgs, pc.fresh, o.Estimator), est: o.Estimator, window: o.ContextWindow, limit: o.ContextWindow - o.ReserveTokens}
	if pc.compacted && len(msgs) > 0 && msgs[0].Role == RoleCompactionSummary {
		plan.PreviousSummary = msgs[0].Summary
		if i, ok := s.t.lookup(ids[0]); ok {
			var c Compaction
			s.t.nodes[i].e.payload(&c)
			files.addDetails(c.Details)
		}
		start = 1
	}
	// A suspended call awaits its result, which must find it: no cut
	// after its assistant message.
	hold := len(msgs)
	for _, c := range pc.pair.suspendedOpen() {
		if k := slices.Index(ids, c.EntryID); k >= 0 && k < hold {
			hold = k
		}
	}
	cut, kept, turn := s.findCut(msgs, pc.estimates(o.Estimator), start, hold, o)
	if cut <= start {
		if limit := o.ContextWindow - o.ReserveTokens; o.ContextWindow > 0 && plan.TokensBefore > limit {
			return nil, fmt.Errorf("%w: the context takes about %d tokens, over the %d the window leaves, but its last %d tokens hold no point to cut at (a turn, or a message, that long): trim it, or use a model with a larger window",
				ErrNothingToCompact, plan.TokensBefore, limit, o.KeepRecentTokens)
		}
		return nil, ErrNothingToCompact
	}
	plan.FirstKeptEntryID = ids[cut]
	plan.TokensKept = kept
	if o.ContextWindow > 0 {
		limit := o.ContextWindow - o.ReserveTokens
		if kept >= limit {
			return nil, fmt.Errorf("%w: the history a compaction must keep (from entry %s on: tool calls are never separated from their results) takes about %d tokens, over the %d the window leaves: trim its longest tool output, or use a model with a larger window",
				ErrCompactionDoesNotFit, ids[cut], kept, limit)
		}
		plan.SummaryTokens = max(1, (limit-kept)/2)
	}
	// A summarizer is a model too: it never gets a blob reference as an
	// image's data.
	plan.Summarize = pc.sendable(start, turn)
	if turn < cut {
		plan.TurnPrefix = pc.sendable(turn, cut)
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
func (s *Session) findCut(msgs []*Message, tok []int64, start, hold int, o *CompactionOptions) (cut int, keptTokens int64, turn int) {
	// inside[k] > 0: msgs[k] lies between a call and its result (the
	// result included). A result answers the latest call with its id
	// before it that no result answered yet: ids may repeat.
	inside := make([]int, len(msgs)+1)
	// starts[k]: what msgs[k] may start if no call is open there (read
	// here once, so that the second walk needs no message).
	const (
		startsContext = 1 << iota
		startsTurn
	)
	starts := make([]uint8, len(msgs))
	calls := map[string]int{} // call id -> index of its assistant message
	for k := start; k < len(msgs); k++ {
		switch m := msgs[k]; m.Role {
		case RoleAssistant:
			starts[k] = startsContext
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
		case RoleUser, RoleBashExecution:
			starts[k] = startsContext | startsTurn
		case RoleCustom, RoleBranchSummary:
			starts[k] = startsContext
		}
	}
	if hold < len(msgs) {
		inside[hold+1]++ // a suspended call's message: everything after it is inside
	}
	// valid[k]: msgs[k] may start a context; boundary[k]: and a turn.
	valid := make([]bool, len(msgs))
	boundary := make([]bool, len(msgs))
	open := 0
	for k := start; k < len(msgs); k++ {
		open += inside[k]
		if open == 0 {
			valid[k] = starts[k]&startsContext != 0
			boundary[k] = starts[k]&startsTurn != 0
		}
	}
	// kept[k]: the tokens of msgs[k:].
	kept := make([]int64, len(msgs)+1)
	for k := len(msgs) - 1; k >= start; k-- {
		kept[k] = kept[k+1] + tok[k]
	}
	// byCount: KeepRecentMessages keeps less than KeepRecentTokens would.
	byCount := o.KeepRecentMessages > 0 && len(msgs)-start > o.KeepRecentMessages
	if kept[start] <= o.KeepRecentTokens && !byCount {
		return start, kept[start], start // it all fits in what is kept
	}
	// reach: the latest index whose suffix holds KeepRecentTokens.
	reach := len(msgs) - 1
	for reach > start && kept[reach] < o.KeepRecentTokens {
		reach--
	}
	// minCut: with the count trigger, a cut keeps at most
	// KeepRecentMessages, whatever the tokens would keep.
	minCut := start + 1
	if byCount {
		minCut = len(msgs) - o.KeepRecentMessages
		if minCut > reach {
			return cutByCount(msgs, start, minCut, kept, valid, boundary)
		}
	}
	before, after := -1, -1
	for k := reach; k >= minCut; k-- {
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
	for k := reach; k >= minCut; k-- {
		if valid[k] {
			return k, kept[k], turnOf(k, start, boundary)
		}
	}
	if byCount {
		return cutByCount(msgs, start, minCut, kept, valid, boundary)
	}
	return start, kept[start], start
}

// cutByCount is findCut when KeepRecentMessages decides: the first turn
// boundary from reach on, so that no more than that many are kept; when
// the last turn alone holds more, the first point from reach on where a
// context may start; and when there is none, the latest before reach.
func cutByCount(msgs []*Message, start, reach int, kept []int64, valid, boundary []bool) (cut int, keptTokens int64, turn int) {
	for k := reach; k < len(msgs); k++ {
		if boundary[k] {
			return k, kept[k], k
		}
	}
	for k := reach; k < len(msgs); k++ {
		if valid[k] {
			return k, kept[k], turnOf(k, start, boundary)
		}
	}
	for k := reach - 1; k > start; k-- {
		if valid[k] {
			return k, kept[k], turnOf(k, start, boundary)
		}
	}
	return start, kept[start], start
}

// turnOf is where the turn holding msgs[k] starts.
func turnOf(k, start int, boundary []bool) int {
	for k > start && !boundary[k] {
		k--
	}
	return k
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
	// MaxTokens, when not 0, is about how long the summary may be for the
	// compacted context to fit the window with room to spare: a model's
	// max_tokens for the call. A summary past it may make the compaction
	// fail with ErrCompactionDoesNotFit, or leave the context over the window.
	MaxTokens int64
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
	// Grew is set when the context after the compaction takes as many
	// tokens as before or more (by the plan's estimator): a compaction of
	// a context small next to its summary. Only a compaction made without
	// a window can grow; with one it is refused (ErrCompactionDoesNotFit).
	Grew bool
}

// Compact summarizes the history of the context at the leaf with sum and
// appends a compaction entry: from then on the context starts with the
// summary, followed by the kept history (see PlanCompaction). A cut
// inside a turn has the turn's first part summarized on its own, and the
// two summaries joined. The session is not locked while sum runs; appends
// made meanwhile are kept.
func (s *Session) Compact(ctx context.Context, sum Summarizer, opts *CompactionOptions) (res *CompactionResult, err error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
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
	// The store says a compaction runs (SessionInfo.Compacting) until it
	// ends, well or not: one whose process crashed stays visible.
	marker, marks := findAbility[CompactionMarker](s.store)
	if marks && !s.Persisted() {
		marks = false // the store knows nothing of the session yet
	}
	if marks {
		if err := marker.MarkCompacting(ctx, s.id, s.now().UTC()); err != nil {
			return nil, err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if cerr := marker.MarkCompacting(cctx, s.id, time.Time{}); cerr != nil && err == nil {
				err = fmt.Errorf("session: the compaction is done, recording that it ended failed: %w", cerr)
			}
		}()
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
	budget := plan.SummaryTokens
	if plan.SplitTurn && len(plan.Summarize) > 0 && budget > 1 {
		budget /= 2 // two summaries, joined
	}
	if len(plan.Summarize) > 0 || !plan.SplitTurn {
		var err error
		history, err = sum.Summarize(ctx, &SummaryRequest{Kind: SummaryHistory, Messages: plan.Summarize,
			PreviousSummary: plan.PreviousSummary, Instructions: instructions, Files: plan.Files, MaxTokens: budget})
		if err != nil {
			return "", fmt.Errorf("session: summarizing history: %w", err)
		}
	}
	if plan.SplitTurn {
		req := &SummaryRequest{Kind: SummaryTurnPrefix, Messages: plan.TurnPrefix, Instructions: instructions, Files: plan.Files, MaxTokens: budget}
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
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
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
	// first kept entry (including what was appended since the plan);
	// estimated as what it holds now is, to compare the two.
	summaryTokens := est.EstimateTokens(&Message{Role: RoleCompactionSummary, Summary: text})
	after := summaryTokens
	var now int64
	pc := s.leafCtx()
	tok := pc.estimates(est)
	kept := len(tok)
	for k := len(pc.ids) - 1; k >= 0; k-- {
		if pc.ids[k] == plan.FirstKeptEntryID {
			kept = k
			break
		}
	}
	for k, n := range tok {
		now += n
		if k >= kept {
			after += n
		}
	}
	grew := after >= now
	if plan.window > 0 && (grew || after > plan.limit) {
		return nil, fmt.Errorf("%w: the summary (%d tokens with its file lists) and the kept history (%d) would take about %d tokens, the context takes %d and the window leaves %d; not applied",
			ErrCompactionDoesNotFit, summaryTokens, after-summaryTokens, after, now, plan.limit)
	}
	c := Compaction{Summary: text, FirstKeptEntryID: plan.FirstKeptEntryID, TokensBefore: plan.TokensBefore,
		TokensAfter: after, Details: plan.Files.details()}
	es, err := s.commit(ctx, s.leafID, func(d *draft) ([]Entry, error) {
		e, err := NewEntry(TypeCompaction, d.newID(), d.parent, d.now, c)
		if err == nil {
			e, err = s.withStateSnapshot(e) // the state at its point (statefold.go)
		}
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	return &CompactionResult{Entry: es[0], Plan: plan, Summary: text, TokensAfter: after, Grew: grew}, nil
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
