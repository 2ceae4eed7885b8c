package session

import (
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentsession/session/internal/jsonx"
)

// Context is what the model sees at one point of the tree: the message
// list rebuilt from the path root → leaf by the seed format's rules, and
// the settings in force there.
//
// The copy rule: Messages (and what ForModel builds from them) are deep
// copies that belong to the caller (Session.SharedMessages is the
// session's own list, for a loop that only reads it). Edit them, append
// to them, keep them: the session does not see it (what it keeps changes
// only by appends), and no later answer carries the edit. A session makes
// the copy of a message once and hands it out again, from Session.Context
// and ContextAt at the leaf, and from Session.Messages (each kind of
// answer its own copies: the two never share one), while it still equals
// the session's message (an edited copy is replaced by a fresh one), so
// asking after every append costs a read of the list plus a copy of what
// is new, measured beside the agent loop in docs/agent-loop.md ("The copy
// rule"). Two answers of one kind may therefore share messages: edit a
// list before you ask again and in the goroutine that asked, and Clone a
// message you mean to edit after a later call. The other slices (EntryIDs, Dangling,
// Orphans, Unresolved) are shared with the session: read them, or append
// to them (their capacity is capped, so appending copies).
type Context struct {
	// LeafID is the entry the context was built at ("" for an empty path).
	LeafID string
	// ThinkingLevel is the latest thinking_level_change on the path, "off"
	// when there is none.
	ThinkingLevel string
	// Model is the latest model selected on the path, by a model_change
	// entry or by an assistant message's provider and model; nil if none.
	Model *ModelRef
	// Models holds the latest model_change per role ("default" for changes
	// without a role, as pi writes them).
	Models map[string]ModelRef
	// Mode is the latest mode_change's mode, "none" when there is none,
	// with its data.
	Mode     string
	ModeData json.RawMessage
	// InjectedRules lists the rules named by ttsr_injection entries, in
	// the order first injected.
	InjectedRules []string

	// Messages is the seed reconstruction, exactly as the seed agents
	// build it: messages and custom messages on the path, non-empty
	// branch summaries, and after a compaction its summary first, then
	// the kept entries. It may hold tool calls without results and
	// results without calls, as real sessions do; see Dangling, Pending
	// and Orphans, and Session.Messages for the list to send to a model.
	Messages []*Message
	// EntryIDs holds, for each message, the entry it came from (the
	// compaction entry for a compaction summary).
	EntryIDs []string

	// Dangling lists tool calls that were never answered before the
	// conversation moved on (an aborted or failed turn).
	Dangling []ToolCallRef
	// Pending lists the calls of the last assistant message still waiting
	// for their results at the end of the path, which the agent is to
	// run: those suspended on purpose are in Suspended instead.
	Pending []ToolCallRef
	// Suspended lists the pending calls a host suspended on purpose
	// (Session.Suspend): they get no failure when the conversation goes
	// on; what comes meanwhile waits behind them in ForModel.
	Suspended []ToolCallRef
	// susp is the pairing's suspension marks, for ForModel.
	susp []callKey
	// Orphans lists tool results that answer no call awaiting one: a call
	// not on the path, answered already, or no longer awaited.
	Orphans []ToolCallRef
	// Unresolved lists the images of Messages whose data is still a blob
	// reference, since the store could not read the blob back (see
	// Log.Unresolved for why). ForModel and Session.Messages send
	// UnresolvedImageText in their place.
	Unresolved []ImageRef
}

// ModelRef names a model.
type ModelRef struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// String returns "provider/modelId".
func (m ModelRef) String() string {
	if m.Provider == "" {
		return m.ModelID
	}
	return m.Provider + "/" + m.ModelID
}

// ImageRef locates an unresolved image: the entry holding it and its
// blob reference.
type ImageRef struct {
	EntryID string
	Ref     string
}

// ToolCallRef locates a tool call or tool result.
type ToolCallRef struct {
	EntryID string // the entry holding the call (or the result, for orphans)
	CallID  string
	Name    string
}

// ForModel returns the message list to send to a model: the context's
// messages with tool pairing repaired, so that every tool call is answered
// right after its assistant message and no tool result lacks its call.
//
//   - A dangling call gets a synthesized error result (Message.Synthetic)
//     placed after the results its assistant message did get.
//   - An orphaned result is left out.
//   - A bash execution marked ExcludeFromContext is left out.
//   - An image whose data is still a blob reference (Unresolved) is
//     replaced by a text block, UnresolvedImageText.
//   - The calls of the last assistant message, still pending, are left
//     as they are: the agent is about to run them.
//   - A custom message that arrives while calls are open (an extension
//     injecting one while tools run) is moved after the results of that
//     run; if the list ends with calls still open and such a message
//     held, those calls get synthesized results so it can follow.
//
// Session.Messages returns the same list without rebuilding it.
func (c *Context) ForModel() []*Message {
	b := pairing{susp: c.susp}
	for i, m := range c.Messages {
		id := ""
		if i < len(c.EntryIDs) {
			id = c.EntryIDs[i]
		}
		b.push(m, id)
	}
	return b.list()
}

// pairing tracks tool-call pairing over a message list as it grows and
// builds the model-facing list next to it.
type pairing struct {
	open     []openCall // calls of the last assistant message not yet answered
	held     []*Message // custom messages that arrived while calls were open
	susp     []callKey  // calls marked suspended (suspend.go), answered or not
	late     []lateCall // suspended calls the conversation went past, unanswered
	gen      int        // counts changes of model's earlier elements (a late result in place)
	model    []*Message
	dangling []ToolCallRef
	orphans  []ToolCallRef
	images   []ImageRef // unresolved images
}

type openCall struct {
	ref ToolCallRef
	ts  int64
}

// callKey names a call: its assistant message's entry and its id (ids
// may repeat across messages).
type callKey struct{ entry, call string }

func keyOf(r ToolCallRef) callKey { return callKey{r.EntryID, r.CallID} }

// lateCall is a suspended call whose place in the model list a
// placeholder holds (at model[at]) until its result comes.
type lateCall struct {
	openCall
	at int
}

func (p *pairing) push(m *Message, entryID string) {
	m = p.resolved(m, entryID)
	switch {
	case m.Role == RoleToolResult:
		for k := range p.open {
			if p.open[k].ref.CallID == m.ToolCallID {
				p.open = append(p.open[:k], p.open[k+1:]...)
				p.model = append(p.model, m)
				if len(p.open) == 0 {
					p.release()
				}
				return
			}
		}
		for k, c := range p.late {
			if c.ref.CallID == m.ToolCallID {
				// The result of a call suspended while the conversation
				// went on takes its placeholder's place, on a copy of the
				// list: earlier lists share its array.
				if c.at < len(p.model) { // not in checkPairing's dry run
					p.model = slices.Clone(p.model)
					p.gen++
					p.model[c.at] = m
				}
				p.late = slices.Delete(p.late, k, k+1)
				return
			}
		}
		p.orphans = append(p.orphans, ToolCallRef{EntryID: entryID, CallID: m.ToolCallID, Name: m.ToolName})
		return
	case m.Role == RoleBashExecution && m.ExcludeFromContext:
		return
	case m.Role == RoleCustom && len(p.open) > 0:
		// An extension may inject a message while tools run. Holding it
		// until the run is answered keeps the results next to their calls
		// (what model APIs require) and lets the results still come.
		p.held = append(p.held, m)
		return
	}
	p.closeRun()
	p.model = append(p.model, m)
	if m.Role == RoleAssistant {
		for i := range m.Content {
			if b := &m.Content[i]; b.Type == BlockToolCall {
				p.open = append(p.open, openCall{ToolCallRef{EntryID: entryID, CallID: b.ID, Name: b.Name}, m.Timestamp})
			}
		}
	}
}

// resolved returns m, or if it holds unresolved images (Block.Unresolved)
// a copy with UnresolvedImageText in their place, noting them.
func (p *pairing) resolved(m *Message, entryID string) *Message {
	c := withoutUnresolved(m)
	if c != m {
		for _, b := range m.Content {
			if b.Unresolved() {
				p.images = append(p.images, ImageRef{EntryID: entryID, Ref: b.Data})
			}
		}
	}
	return c
}

// withoutUnresolved returns m, or if it holds images whose data a store
// could not resolve (Block.Unresolved), a copy with UnresolvedImageText
// in their place: what of m may go to a model.
func withoutUnresolved(m *Message) *Message {
	var c *Message
	for i := range m.Content {
		if m.Content[i].Unresolved() {
			if c == nil {
				c = m.Clone()
			}
			c.Content[i] = Block{Type: BlockText, Text: UnresolvedImageText}
		}
	}
	if c == nil {
		return m
	}
	return c
}

// sendable returns msgs as they may go to a model or a summarizer (see
// withoutUnresolved): msgs itself when no message holds an unresolved
// image, otherwise a copy of the slice sharing the messages that hold
// none.
func sendable(msgs []*Message) []*Message {
	var out []*Message
	for i, m := range msgs {
		if c := withoutUnresolved(m); c != m {
			if out == nil {
				out = slices.Clip(slices.Clone(msgs))
			}
			out[i] = c
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// closeRun answers the calls still open when the conversation moves on:
// a suspended call with a placeholder its result replaces when it comes,
// any other as dangling, with a synthesized failure.
func (p *pairing) closeRun() {
	for _, c := range p.open {
		if p.isSuspended(c) {
			p.late = append(p.late, lateCall{c, len(p.model)})
			p.model = append(p.model, placeholderResult(c))
			continue
		}
		p.dangling = append(p.dangling, c.ref)
		p.model = append(p.model, synthesizedResult(c))
	}
	p.open = p.open[:0]
	p.release()
}

// release moves the held custom messages to the model list.
func (p *pairing) release() {
	p.model = append(p.model, p.held...)
	p.held = p.held[:0]
}

// suspend marks the pending calls among ids suspended.
func (p *pairing) suspend(ids []string) {
	for _, c := range p.open {
		if k := keyOf(c.ref); slices.Contains(ids, c.ref.CallID) && !slices.Contains(p.susp, k) {
			p.susp = append(p.susp, k)
		}
	}
}

// endSuspension unmarks ids: those still pending are answered as
// dangling when the conversation goes on, and those it went past are
// dangling now.
func (p *pairing) endSuspension(ids []string) {
	p.susp = slices.DeleteFunc(slices.Clone(p.susp), func(k callKey) bool { return slices.Contains(ids, k.call) })
	var keep []lateCall
	for _, c := range p.late {
		if !slices.Contains(ids, c.ref.CallID) {
			keep = append(keep, c)
			continue
		}
		if c.at < len(p.model) {
			p.model = slices.Clone(p.model)
			p.gen++
			p.model[c.at] = synthesizedResult(c.openCall)
		}
		p.dangling = append(p.dangling, c.ref)
	}
	p.late = keep
}

func (p *pairing) isSuspended(c openCall) bool { return slices.Contains(p.susp, keyOf(c.ref)) }

// suspendedOpen returns the suspended calls still without a result.
func (p *pairing) suspendedOpen() []ToolCallRef {
	var out []ToolCallRef
	for _, c := range p.late {
		out = append(out, c.ref)
	}
	for _, c := range p.open {
		if p.isSuspended(c) {
			out = append(out, c.ref)
		}
	}
	return out
}

// list returns the model-facing list as of now. Calls still open at the
// end stay unanswered, unless custom messages are held behind them: then
// the list closes the run as if the conversation had moved on, without
// changing the state, so a result appended later still pairs.
func (p *pairing) list() []*Message {
	m := p.model[:len(p.model):len(p.model)]
	if len(p.held) == 0 {
		return m
	}
	for _, c := range p.open {
		if p.isSuspended(c) {
			m = append(m, placeholderResult(c))
		} else {
			m = append(m, synthesizedResult(c))
		}
	}
	return append(m, p.held...)
}

// placeholderResult stands in the model view for the result of a
// suspended call the conversation went past.
func placeholderResult(c openCall) *Message {
	return &Message{
		Role: RoleToolResult, ToolCallID: c.ref.CallID, ToolName: c.ref.Name,
		Content: []Block{Text(SuspendedResultText)}, Timestamp: c.ts, synthetic: true,
	}
}

// accepts reports whether a tool result for callID may be appended now.
func (p *pairing) accepts(callID string) bool {
	for _, c := range p.open {
		if c.ref.CallID == callID {
			return true
		}
	}
	for _, c := range p.late {
		if c.ref.CallID == callID {
			return true
		}
	}
	return false
}

// pending returns the calls awaiting their results that the agent is to
// run: the open ones but those suspended (suspendedOpen has them).
func (p *pairing) pending() []ToolCallRef {
	if len(p.open) == 0 {
		return nil
	}
	out := make([]ToolCallRef, 0, len(p.open))
	for _, c := range p.open {
		if !p.isSuspended(c) {
			out = append(out, c.ref)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SyntheticResultText is the text of the error result given to a tool
// call that never got one.
const SyntheticResultText = "No result was recorded for this tool call: the turn was interrupted or failed before it completed."

func synthesizedResult(c openCall) *Message {
	m := &Message{
		Role: RoleToolResult, ToolCallID: c.ref.CallID, ToolName: c.ref.Name,
		Content: []Block{Text(SyntheticResultText)}, IsError: true, Timestamp: c.ts,
		synthetic: true,
	}
	return m
}

// pathCtx is the context at a leaf, kept up to date as entries are
// appended under it.
type pathCtx struct {
	leaf int32
	path []int32 // root .. leaf

	thinking  string
	thought   bool // a thinking_level_change on the path set thinking
	model     ModelRef
	hasModel  bool
	models    map[string]ModelRef
	mode      string
	modeData  json.RawMessage
	rules     []string
	compacted bool
	// fresh is where the messages after the last compaction start in
	// msgs (0 without one): only their usage measures this context.
	fresh int

	msgs []*Message
	ids  []string
	// tok[k] is DefaultTokenEstimator's estimate of msgs[k], and
	// unresolved counts the messages of msgs[:len(tok)] holding an
	// unresolved image: taken when a compaction first asks (facts), and
	// kept up to date from there, so that a compaction's plan and its
	// check read a long context's estimates without a walk over every
	// message each, and appends and opens pay nothing for them.
	tok        []int64
	unresolved int
	pair       pairing
}

// buildContext computes the context at leaf from scratch: O(path) to walk,
// plus decoding the messages it emits.
func (t *tree) buildContext(leaf int32) *pathCtx {
	pc := &pathCtx{leaf: leaf, thinking: "off", mode: "none"}
	if leaf < 0 {
		return pc
	}
	pc.path = t.pathTo(leaf)
	// Settings: the latest of each on the path wins; model changes per
	// role and injected rules accumulate.
	comp := -1
	for pos, i := range pc.path {
		n := &t.nodes[i]
		switch n.e.kind {
		case kindCompaction:
			comp = pos
		case kindMessage:
			// Only the latest model-setting entry matters; handled below.
		default:
			pc.applySetting(t, i)
		}
	}
	if _, ref, ok := t.modelMessage(pc.path); ok {
		pc.model, pc.hasModel = ref, true
	}
	// Messages.
	if comp < 0 {
		t.predecode(pc.path)
		for _, i := range pc.path {
			pc.emit(t, i)
		}
		return pc
	}
	t.predecode(pc.path[comp+1:])
	pc.emitCompacted(t, comp)
	for _, i := range pc.path[comp+1:] {
		pc.emit(t, i)
	}
	return pc
}

// emitCompacted restarts the message list at the compaction at path
// position comp: its summary, then the kept entries before it.
func (pc *pathCtx) emitCompacted(t *tree, comp int) {
	pc.msgs, pc.ids, pc.tok, pc.unresolved, pc.pair = nil, nil, nil, 0, pairing{}
	pc.compacted = true
	ci := pc.path[comp]
	c := &t.nodes[ci]
	if m := t.contextMessage(ci); m != nil {
		pc.push(m, c.e.id)
	}
	pc.fresh = len(pc.msgs)
	var cp Compaction
	c.e.payload(&cp)
	if cp.FirstKeptEntryID == "" {
		return
	}
	// The seed rule: the first entry on the path, before the compaction,
	// with that id.
	start := -1
	if k, ok := t.lookup(cp.FirstKeptEntryID); ok {
		if d := t.nodes[k].depth; d >= 0 && int(d) < comp && pc.path[d] == k {
			start = int(d)
		}
	}
	if start < 0 {
		return
	}
	t.predecode(pc.path[start:comp])
	for _, i := range pc.path[start:comp] {
		pc.emit(t, i)
	}
	pc.fresh = len(pc.msgs)
}

// extend appends node i, a child of the current leaf, to the context.
func (pc *pathCtx) extend(t *tree, i int32) {
	pc.path = append(pc.path, i)
	pc.leaf = i
	n := &t.nodes[i]
	switch n.e.kind {
	case kindCompaction:
		pc.emitCompacted(t, len(pc.path)-1)
		return
	case kindMessage:
		pc.emit(t, i) // decodes (or finds) the message first
		if ref, ok := assistantModel(t, i); ok {
			pc.model, pc.hasModel = ref, true
		}
		return
	default:
		pc.applySetting(t, i)
	}
	pc.emit(t, i)
}

// applySetting takes the settings an entry changes.
func (pc *pathCtx) applySetting(t *tree, i int32) {
	e := t.nodes[i].e
	switch e.kind {
	case kindThinkingLevelChange:
		var c ThinkingLevelChange
		if e.payload(&c); c.ThinkingLevel != "" {
			pc.thinking = c.ThinkingLevel
		} else {
			pc.thinking = "off"
		}
		pc.thought = true
	case kindModelChange:
		c, ok := modelChangeOf(e)
		if !ok {
			return
		}
		ref, ok := c.ref()
		if !ok {
			return
		}
		role := c.Role
		if role == "" {
			role = "default"
		}
		if pc.models == nil {
			pc.models = map[string]ModelRef{}
		}
		pc.models[role] = ref
		if role == "default" {
			pc.model, pc.hasModel = ref, true
		}
	case kindModeChange:
		var c ModeChange
		e.payload(&c)
		pc.mode, pc.modeData = c.Mode, c.Data
		if pc.mode == "" {
			pc.mode = "none"
		}
	case kindTTSRInjection:
		var c TTSRInjection
		e.payload(&c)
		for _, r := range c.InjectedRules {
			seen := false
			for _, x := range pc.rules {
				if x == r {
					seen = true
					break
				}
			}
			if !seen {
				pc.rules = append(pc.rules, r)
			}
		}
	}
}

func modelChangeOf(e Entry) (ModelChange, bool) {
	var c ModelChange
	e.payload(&c)
	return c, true
}

// modelMessage finds the assistant message on path whose provider and
// model are the context's model: the latest one, unless a later
// model_change of the default role names a model (applySetting takes
// that one; a change that names none is skipped there and here).
func (t *tree) modelMessage(path []int32) (int32, ModelRef, bool) {
	for pos := len(path) - 1; pos >= 0; pos-- {
		i := path[pos]
		switch e := t.nodes[i].e; e.kind {
		case kindModelChange:
			if c, ok := modelChangeOf(e); ok && (c.Role == "" || c.Role == "default") {
				if _, named := c.ref(); named {
					return -1, ModelRef{}, false
				}
			}
		case kindMessage:
			if ref, ok := assistantModel(t, i); ok {
				return i, ref, true
			}
		}
	}
	return -1, ModelRef{}, false
}

// assistantModel reads the provider and model of an assistant message
// without decoding the rest of it.
func assistantModel(t *tree, i int32) (ModelRef, bool) {
	n := &t.nodes[i]
	m := n.msg
	if n.state != msgReady {
		m = n.e.readMessage()
	}
	if m != nil {
		if m.Role != RoleAssistant || (m.Provider == "" && m.Model == "") {
			return ModelRef{}, false
		}
		return ModelRef{Provider: m.Provider, ModelID: m.Model}, true
	}
	v, ok := n.e.field("message")
	if !ok {
		return ModelRef{}, false
	}
	var c jsonx.Cursor
	c.Reset(v)
	ms, ok := c.Object()
	if !ok {
		return ModelRef{}, false
	}
	var role, provider, model string
	for {
		kb, _, more := ms.Next()
		if !more {
			break
		}
		switch string(kb) {
		case "role":
			role, _ = c.Str()
		case "provider":
			provider, _ = c.Str()
		case "model":
			model, _ = c.Str()
		}
	}
	if role != RoleAssistant || (provider == "" && model == "") {
		return ModelRef{}, false
	}
	return ModelRef{Provider: provider, ModelID: model}, true
}

func (pc *pathCtx) emit(t *tree, i int32) {
	switch e := t.nodes[i].e; e.kind {
	case kindCompaction:
		return // only the last compaction counts, and it is emitted first
	case kindCustom:
		pc.mark(e)
		return
	}
	if m := t.contextMessage(i); m != nil {
		pc.push(m, t.nodes[i].e.id)
	}
}

// mark takes a suspension entry's marks into the pairing.
func (pc *pathCtx) mark(e Entry) {
	if sp, ok := suspensionOf(e); ok {
		ids := make([]string, len(sp.Calls))
		for k, c := range sp.Calls {
			ids[k] = c.CallID
		}
		pc.pair.suspend(ids)
	} else if end, ok := decodeCustom[SuspensionEnd](e, CustomSuspensionEnd); ok {
		pc.pair.endSuspension(end.CallIDs)
	}
}

func (pc *pathCtx) push(m *Message, id string) {
	pc.msgs = append(pc.msgs, m)
	pc.ids = append(pc.ids, id)
	pc.pair.push(m, id)
}

// facts brings tok and unresolved up to the messages pushed since they
// were last asked for (msgs only grows, or starts again with them).
func (pc *pathCtx) facts() {
	for _, m := range pc.msgs[len(pc.tok):] {
		tok, unresolved := messageFacts(m)
		pc.tok = append(pc.tok, tok)
		if unresolved {
			pc.unresolved++
		}
	}
}

// estimates returns est's estimate of each message of the context:
// the ones kept for DefaultTokenEstimator, else est's own.
func (pc *pathCtx) estimates(est TokenEstimator) []int64 {
	if isDefault(est) {
		pc.facts()
		return pc.tok
	}
	tok := make([]int64, len(pc.msgs))
	for k, m := range pc.msgs {
		tok[k] = est.EstimateTokens(m)
	}
	return tok
}

// sendable is the package function sendable of pc.msgs[from:to],
// without the walk when the context holds no unresolved image.
func (pc *pathCtx) sendable(from, to int) []*Message {
	msgs := pc.msgs[from:to:to]
	if pc.facts(); pc.unresolved == 0 {
		return msgs
	}
	return sendable(msgs)
}

// Decoding a long path is spread over the processors once there is
// enough of it to pay for the goroutines.
const (
	parallelDecodeBytes = 1 << 20 // bytes of entries
	decodeBatch         = 64      // entries a worker takes at a time
)

// predecode decodes the context messages of the entries idx, in parallel
// when there are many, so that emitting them finds them ready. Each
// worker writes only the nodes of its batches.
func (t *tree) predecode(idx []int32) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	if workers < 2 {
		return
	}
	size := 0
	for _, i := range idx {
		if n := &t.nodes[i]; n.state == msgUnknown && n.e.readMessage() == nil {
			size += len(n.e.raw)
		}
	}
	if size < parallelDecodeBytes {
		return // emit decodes them one by one
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(decodeBatch)) - decodeBatch
				if lo >= len(idx) {
					return
				}
				for _, i := range idx[lo:min(lo+decodeBatch, len(idx))] {
					t.contextMessage(i)
				}
			}
		}()
	}
	wg.Wait()
}

// decodedMessages counts the messages decoded, for contexts or by the
// file reader (compactLine), when countDecodes is set, which only the
// tests that check a context decodes no more than it emits do (the count
// costs nothing otherwise).
var (
	countDecodes    bool
	decodedMessages atomic.Int64
)

// contextMessage returns the message entry i contributes (decoded once
// and cached), or nil.
func (t *tree) contextMessage(i int32) *Message {
	n := &t.nodes[i]
	switch n.state {
	case msgReady:
		return n.msg
	case msgNone:
		return nil
	}
	n.msg = decodeContextMessage(n.e)
	if countDecodes && n.e.readMessage() == nil {
		decodedMessages.Add(1) // compactLine counted the others
	}
	if n.msg == nil {
		n.state = msgNone
	} else {
		n.state = msgReady
	}
	return n.msg
}

func decodeContextMessage(e Entry) *Message {
	switch e.kind {
	case kindMessage:
		if m := e.readMessage(); m != nil {
			return m
		}
		// Context messages are shared read-only, so their strings may be
		// views of the entry's bytes.
		m, err := e.message(true)
		if err != nil {
			return nil
		}
		return m
	case kindCustomMessage:
		m, err := e.customMessage()
		if err != nil {
			return nil
		}
		return m
	case kindBranchSummary:
		var b BranchSummary
		if e.payload(&b); b.Summary == "" {
			return nil
		}
		return &Message{
			Role: RoleBranchSummary, Summary: b.Summary, FromID: b.FromID,
			Timestamp: entryMillis(e), decoded: true, has: mRole | mSummary | mFromID | mTimestamp,
		}
	case kindCompaction:
		var c Compaction
		e.payload(&c)
		return &Message{
			Role: RoleCompactionSummary, Summary: c.Summary, TokensBefore: c.TokensBefore,
			Timestamp: entryMillis(e), decoded: true, has: mRole | mSummary | mTokensBefore | mTimestamp,
		}
	}
	return nil
}

func entryMillis(e Entry) int64 {
	t := e.Time()
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// snapshot returns the public view of pc: its messages are copies, from
// cc when it is the cache of the leaf's context (msgreuse.go), made anew
// when nil (copyMessages); the other slices are shared, with their
// capacity capped.
func (pc *pathCtx) snapshot(t *tree, cc *copyCaches) *Context {
	var msgs []*Message
	if cc != nil {
		msgs = cc.forContext(pc.msgs)
	} else {
		msgs = copyMessages(pc.msgs)
	}
	c := &Context{
		ThinkingLevel: pc.thinking,
		Mode:          pc.mode,
		ModeData:      cloneRaw(pc.modeData),
		Messages:      msgs,
		EntryIDs:      pc.ids[:len(pc.ids):len(pc.ids)],
		Dangling:      pc.pair.dangling[:len(pc.pair.dangling):len(pc.pair.dangling)],
		Orphans:       pc.pair.orphans[:len(pc.pair.orphans):len(pc.pair.orphans)],
		Unresolved:    pc.pair.images[:len(pc.pair.images):len(pc.pair.images)],
		Pending:       pc.pair.pending(),
		Suspended:     pc.pair.suspendedOpen(),
		susp:          slices.Clip(slices.Clone(pc.pair.susp)),
	}
	if pc.leaf >= 0 {
		c.LeafID = t.nodes[pc.leaf].e.id
	}
	if pc.hasModel {
		m := pc.model
		c.Model = &m
	}
	if pc.models != nil {
		c.Models = maps.Clone(pc.models)
	}
	if len(pc.rules) > 0 {
		c.InjectedRules = append([]string(nil), pc.rules...)
	}
	return c
}

// forModel returns the shared model-facing list.
func (pc *pathCtx) forModel() []*Message {
	return pc.pair.list()
}
