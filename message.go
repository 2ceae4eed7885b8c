package session

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsession/session/internal/jsonx"
)

// Message roles of the seed format. A message of any other role is kept
// and written back unchanged.
const (
	RoleUser          = "user"
	RoleAssistant     = "assistant"
	RoleToolResult    = "toolResult"
	RoleBashExecution = "bashExecution"
	RoleCustom        = "custom"

	// Roles that only appear in a reconstructed context: they are made from
	// branch_summary and compaction entries, never stored as messages.
	RoleBranchSummary     = "branchSummary"
	RoleCompactionSummary = "compactionSummary"
)

// Content block types.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockImage    = "image"
	BlockToolCall = "toolCall"
)

// Stop reasons of assistant messages.
const (
	StopEnd     = "stop"
	StopLength  = "length"
	StopToolUse = "toolUse"
	StopError   = "error"
	StopAborted = "aborted"
)

var errEmptyRaw = errors.New("empty raw JSON value")

// Message is one agent message in the seed format's JSON shape. Which
// fields apply depends on Role; the others stay zero. Members this type
// does not model are kept in Extra, so a message read from any agent is
// written back with nothing lost.
//
// A Message decoded from JSON remembers which members it had, so that
// encoding it again produces the same members (a false isError or a zero
// cost stays present; an absent totalTokens stays absent). A Message built
// in Go gets the members the seed agents always write for its role.
//
// Messages handed out by a Session are shared with it: treat them as
// read-only and Clone one before changing it.
type Message struct {
	Role string
	// Content holds the blocks. A message whose content was a JSON string
	// has a single text block and is written back as a string.
	Content []Block
	// Timestamp is in Unix milliseconds. Session fills a zero Timestamp
	// with the append time.
	Timestamp int64

	// Assistant messages.
	API          string
	Provider     string
	Model        string
	Usage        *Usage
	StopReason   string
	ErrorMessage string

	// Tool results.
	ToolCallID string
	ToolName   string
	IsError    bool
	// Details is tool- or extension-specific JSON (tool results and custom
	// messages); it is never sent to a model.
	Details json.RawMessage

	// Bash executions run by the user (not by a tool call).
	Command            string
	Output             string
	ExitCode           *int
	Cancelled          bool
	Truncated          bool
	FullOutputPath     string
	ExcludeFromContext bool

	// Custom messages injected by extensions.
	CustomType string
	Display    bool

	// Summaries (context-only roles).
	Summary      string
	FromID       string
	TokensBefore int64

	// Extra holds members this type does not model, verbatim.
	Extra Fields

	has       uint32 // members present when decoded
	decoded   bool
	synthetic bool
}

// Presence bits of Message members.
const (
	mRole uint32 = 1 << iota
	mContent
	mTimestamp
	mAPI
	mProvider
	mModel
	mUsage
	mStopReason
	mErrorMessage
	mToolCallID
	mToolName
	mIsError
	mDetails
	mCommand
	mOutput
	mExitCode
	mCancelled
	mTruncated
	mFullOutputPath
	mExcludeFromContext
	mCustomType
	mDisplay
	mSummary
	mFromID
	mTokensBefore
	mContentString // content was a JSON string
)

var messageKeys = map[string]uint32{
	"role": mRole, "content": mContent, "timestamp": mTimestamp, "api": mAPI,
	"provider": mProvider, "model": mModel, "usage": mUsage, "stopReason": mStopReason,
	"errorMessage": mErrorMessage, "toolCallId": mToolCallID, "toolName": mToolName,
	"isError": mIsError, "details": mDetails, "command": mCommand, "output": mOutput,
	"exitCode": mExitCode, "cancelled": mCancelled, "truncated": mTruncated,
	"fullOutputPath": mFullOutputPath, "excludeFromContext": mExcludeFromContext,
	"customType": mCustomType, "display": mDisplay, "summary": mSummary, "fromId": mFromID,
	"tokensBefore": mTokensBefore,
}

// requiredFor lists the members the seed agents always write for a role.
func requiredFor(role string) uint32 {
	switch role {
	case RoleUser:
		return mRole | mContent | mTimestamp
	case RoleAssistant:
		return mRole | mContent | mAPI | mProvider | mModel | mUsage | mStopReason | mTimestamp
	case RoleToolResult:
		return mRole | mToolCallID | mToolName | mContent | mIsError | mTimestamp
	case RoleBashExecution:
		return mRole | mCommand | mOutput | mCancelled | mTruncated | mTimestamp
	case RoleCustom:
		return mRole | mCustomType | mContent | mDisplay | mTimestamp
	case RoleBranchSummary:
		return mRole | mSummary | mFromID | mTimestamp
	case RoleCompactionSummary:
		return mRole | mSummary | mTokensBefore | mTimestamp
	}
	return mRole
}

// Block is one content block: text, thinking, image or tool call. Blocks
// of other types are kept whole in Extra.
type Block struct {
	Type string

	Text string // text

	Thinking          string // thinking
	ThinkingSignature string
	Redacted          bool

	Data     string // image, base64
	MimeType string

	ID        string // toolCall
	Name      string
	Arguments json.RawMessage // a JSON object

	Extra Fields

	has     uint16
	decoded bool
}

const (
	bType uint16 = 1 << iota
	bText
	bThinking
	bThinkingSignature
	bRedacted
	bData
	bMimeType
	bID
	bName
	bArguments
)

var blockKeys = map[string]uint16{
	"type": bType, "text": bText, "thinking": bThinking, "thinkingSignature": bThinkingSignature,
	"redacted": bRedacted, "data": bData, "mimeType": bMimeType, "id": bID, "name": bName,
	"arguments": bArguments,
}

func blockRequired(typ string) uint16 {
	switch typ {
	case BlockText:
		return bType | bText
	case BlockThinking:
		return bType | bThinking
	case BlockImage:
		return bType | bData | bMimeType
	case BlockToolCall:
		return bType | bID | bName | bArguments
	}
	return bType
}

// Usage is the token accounting of one assistant message.
type Usage struct {
	Input       int64
	Output      int64
	CacheRead   int64
	CacheWrite  int64
	TotalTokens int64
	Cost        Cost
	Extra       Fields

	has     uint8
	decoded bool
}

const (
	uInput uint8 = 1 << iota
	uOutput
	uCacheRead
	uCacheWrite
	uTotalTokens
	uCost
)

// Cost is the price of a message's usage, in the provider's currency unit.
type Cost struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
	Total      float64
	Extra      Fields

	has     uint8
	decoded bool
}

const (
	cInput uint8 = 1 << iota
	cOutput
	cCacheRead
	cCacheWrite
	cTotal
)

// Add returns the sum of two usages, as used for session and branch totals.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Input:       u.Input + v.Input,
		Output:      u.Output + v.Output,
		CacheRead:   u.CacheRead + v.CacheRead,
		CacheWrite:  u.CacheWrite + v.CacheWrite,
		TotalTokens: u.TotalTokens + v.TotalTokens,
		Cost: Cost{
			Input:      u.Cost.Input + v.Cost.Input,
			Output:     u.Cost.Output + v.Cost.Output,
			CacheRead:  u.Cost.CacheRead + v.Cost.CacheRead,
			CacheWrite: u.Cost.CacheWrite + v.Cost.CacheWrite,
			Total:      u.Cost.Total + v.Cost.Total,
		},
	}
}

// ---- Constructors ----

// UserText returns a user message holding one text block.
func UserText(text string) *Message {
	return &Message{Role: RoleUser, Content: []Block{Text(text)}}
}

// User returns a user message with the given blocks (text and images).
func User(blocks ...Block) *Message {
	return &Message{Role: RoleUser, Content: blocks}
}

// AssistantText returns an assistant message holding one text block, with
// stop reason "stop". Set Provider, Model and Usage with the With methods.
func AssistantText(text string) *Message {
	return &Message{Role: RoleAssistant, Content: []Block{Text(text)}, StopReason: StopEnd}
}

// Assistant returns an assistant message with the given blocks. Its stop
// reason is "toolUse" when a block is a tool call and "stop" otherwise.
func Assistant(blocks ...Block) *Message {
	m := &Message{Role: RoleAssistant, Content: blocks, StopReason: StopEnd}
	for _, b := range blocks {
		if b.Type == BlockToolCall {
			m.StopReason = StopToolUse
			break
		}
	}
	return m
}

// ToolResult returns the successful result of the tool call callID.
func ToolResult(callID, toolName, text string) *Message {
	return &Message{Role: RoleToolResult, ToolCallID: callID, ToolName: toolName, Content: []Block{Text(text)}}
}

// ToolError returns a failed result of the tool call callID.
func ToolError(callID, toolName, text string) *Message {
	m := ToolResult(callID, toolName, text)
	m.IsError = true
	return m
}

// BashExecution returns the record of a shell command the user ran
// directly (the seed agents' "!command").
func BashExecution(command, output string, exitCode int) *Message {
	return &Message{Role: RoleBashExecution, Command: command, Output: output, ExitCode: &exitCode}
}

// CustomMessage returns an extension message that takes part in the
// context. display tells a user interface whether to show it. Its content
// is written as a JSON string, as the seed agents do for text.
func CustomMessage(customType, text string, display bool) *Message {
	return &Message{
		Role: RoleCustom, CustomType: customType, Display: display,
		Content: []Block{Text(text)}, has: mContentString,
	}
}

// Text returns a text block.
func Text(text string) Block { return Block{Type: BlockText, Text: text} }

// Thinking returns a thinking block. signature is the provider's opaque
// signature, needed to send the block back to some providers ("" if none).
func Thinking(thinking, signature string) Block {
	return Block{Type: BlockThinking, Thinking: thinking, ThinkingSignature: signature}
}

// Image returns an image block holding data, base64-encoded.
func Image(mimeType string, data []byte) Block {
	return Block{Type: BlockImage, MimeType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}
}

// ImageBase64 returns an image block from data that is already base64.
func ImageBase64(mimeType, data string) Block {
	return Block{Type: BlockImage, MimeType: mimeType, Data: data}
}

// ToolCall returns a tool call block. args is the JSON object of arguments
// as the model produced it; nil means {}.
func ToolCall(id, name string, args json.RawMessage) Block {
	if args == nil {
		args = json.RawMessage("{}")
	}
	return Block{Type: BlockToolCall, ID: id, Name: name, Arguments: args}
}

// WithModel sets the API, provider and model of an assistant message and
// returns it.
func (m *Message) WithModel(api, provider, model string) *Message {
	m.API, m.Provider, m.Model = api, provider, model
	return m
}

// WithUsage sets the usage of an assistant message and returns it.
func (m *Message) WithUsage(u Usage) *Message {
	m.Usage = &u
	return m
}

// WithStopReason sets the stop reason of an assistant message and returns it.
func (m *Message) WithStopReason(reason string) *Message {
	m.StopReason = reason
	return m
}

// WithTimestamp sets the timestamp (Unix milliseconds) and returns m.
func (m *Message) WithTimestamp(ms int64) *Message {
	m.Timestamp = ms
	return m
}

// ---- Accessors ----

// Text returns the text blocks joined by newlines; for bash executions the
// command and output, for summaries the summary.
func (m *Message) Text() string {
	switch m.Role {
	case RoleBranchSummary, RoleCompactionSummary:
		return m.Summary
	case RoleBashExecution:
		if m.Output == "" {
			return "$ " + m.Command
		}
		return "$ " + m.Command + "\n" + m.Output
	}
	return joinText(m.Content, "\n")
}

func joinText(blocks []Block, sep string) string {
	n, count := 0, 0
	for _, b := range blocks {
		if b.Type == BlockText {
			n += len(b.Text)
			count++
		}
	}
	if count == 1 {
		for _, b := range blocks {
			if b.Type == BlockText {
				return b.Text
			}
		}
	}
	var sb strings.Builder
	sb.Grow(n + len(sep)*count)
	first := true
	for _, b := range blocks {
		if b.Type != BlockText {
			continue
		}
		if !first {
			sb.WriteString(sep)
		}
		first = false
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// ToolCalls returns the tool call blocks of an assistant message.
func (m *Message) ToolCalls() []Block {
	var calls []Block
	for _, b := range m.Content {
		if b.Type == BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}

// HasToolCalls reports whether the message holds a tool call block.
func (m *Message) HasToolCalls() bool {
	for i := range m.Content {
		if m.Content[i].Type == BlockToolCall {
			return true
		}
	}
	return false
}

// ContentIsString reports whether the content is written as a JSON string
// rather than a list of blocks (it then holds a single text block).
func (m *Message) ContentIsString() bool {
	return m.has&mContentString != 0 && len(m.Content) == 1 && m.Content[0].Type == BlockText && len(m.Content[0].Extra) == 0
}

// Clone returns a deep copy of m.
func (m *Message) Clone() *Message {
	if m == nil {
		return nil
	}
	c := *m
	if m.Content != nil {
		c.Content = make([]Block, len(m.Content))
		for i := range m.Content {
			c.Content[i] = m.Content[i].clone()
		}
	}
	if m.Usage != nil {
		u := *m.Usage
		u.Extra = m.Usage.Extra.Clone()
		u.Cost.Extra = m.Usage.Cost.Extra.Clone()
		c.Usage = &u
	}
	if m.ExitCode != nil {
		e := *m.ExitCode
		c.ExitCode = &e
	}
	c.Details = cloneRaw(m.Details)
	c.Extra = m.Extra.Clone()
	return &c
}

func (b Block) clone() Block {
	b.Arguments = cloneRaw(b.Arguments)
	b.Extra = b.Extra.Clone()
	return b
}

// ---- Encoding ----

// MarshalJSON encodes the message in the seed format's JSON shape.
func (m *Message) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(nil)
}

// AppendJSON appends the message's JSON encoding to dst.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	want := m.has
	if !m.decoded {
		want |= requiredFor(m.Role)
	}
	on := func(bit uint32, nonZero bool) bool { return nonZero || want&bit != 0 }
	var err error
	dst = append(dst, '{')
	first := true
	str := func(key string, bit uint32, v string) {
		if on(bit, v != "") {
			dst, first = member(dst, first, key), false
			dst = jsonx.AppendString(dst, v)
		}
	}
	boolean := func(key string, bit uint32, v bool) {
		if on(bit, v) {
			dst, first = member(dst, first, key), false
			dst = appendBool(dst, v)
		}
	}
	integer := func(key string, bit uint32, v int64) {
		if on(bit, v != 0) {
			dst, first = member(dst, first, key), false
			dst = appendInt(dst, v)
		}
	}
	str("role", mRole, m.Role)
	str("toolCallId", mToolCallID, m.ToolCallID)
	str("toolName", mToolName, m.ToolName)
	str("command", mCommand, m.Command)
	str("output", mOutput, m.Output)
	if m.ExitCode != nil {
		dst, first = member(dst, first, "exitCode"), false
		dst = appendInt(dst, int64(*m.ExitCode))
	}
	boolean("cancelled", mCancelled, m.Cancelled)
	boolean("truncated", mTruncated, m.Truncated)
	str("fullOutputPath", mFullOutputPath, m.FullOutputPath)
	str("customType", mCustomType, m.CustomType)
	str("summary", mSummary, m.Summary)
	str("fromId", mFromID, m.FromID)
	integer("tokensBefore", mTokensBefore, m.TokensBefore)
	if on(mContent, m.Content != nil) {
		dst, first = member(dst, first, "content"), false
		if dst, err = appendContent(dst, m.Content, m.ContentIsString()); err != nil {
			return nil, err
		}
	}
	boolean("display", mDisplay, m.Display)
	if on(mDetails, m.Details != nil) {
		v, err := rawValue(m.Details, "null")
		if err != nil {
			return nil, fmt.Errorf("message details: %w", err)
		}
		dst, first = member(dst, first, "details"), false
		dst = append(dst, v...)
	}
	boolean("isError", mIsError, m.IsError)
	str("api", mAPI, m.API)
	str("provider", mProvider, m.Provider)
	str("model", mModel, m.Model)
	if on(mUsage, m.Usage != nil) {
		dst, first = member(dst, first, "usage"), false
		u := m.Usage
		if u == nil {
			u = &Usage{}
		}
		if dst, err = u.appendJSON(dst); err != nil {
			return nil, err
		}
	}
	str("stopReason", mStopReason, m.StopReason)
	integer("timestamp", mTimestamp, m.Timestamp)
	str("errorMessage", mErrorMessage, m.ErrorMessage)
	boolean("excludeFromContext", mExcludeFromContext, m.ExcludeFromContext)
	if len(m.Extra) > 0 {
		written := func(k string) bool {
			bit, ok := messageKeys[k]
			if !ok {
				return false
			}
			switch bit {
			case mExitCode:
				return m.ExitCode != nil
			case mContent:
				return on(mContent, m.Content != nil)
			case mDetails:
				return on(mDetails, m.Details != nil)
			case mUsage:
				return on(mUsage, m.Usage != nil)
			}
			return want&bit != 0 || !isZeroMessageField(m, bit)
		}
		if dst, first, err = m.Extra.appendTo(dst, first, written); err != nil {
			return nil, fmt.Errorf("message: %w", err)
		}
	}
	_ = first
	return append(dst, '}'), nil
}

// isZeroMessageField reports whether the scalar field behind bit is zero.
func isZeroMessageField(m *Message, bit uint32) bool {
	switch bit {
	case mRole:
		return m.Role == ""
	case mTimestamp:
		return m.Timestamp == 0
	case mAPI:
		return m.API == ""
	case mProvider:
		return m.Provider == ""
	case mModel:
		return m.Model == ""
	case mStopReason:
		return m.StopReason == ""
	case mErrorMessage:
		return m.ErrorMessage == ""
	case mToolCallID:
		return m.ToolCallID == ""
	case mToolName:
		return m.ToolName == ""
	case mIsError:
		return !m.IsError
	case mCommand:
		return m.Command == ""
	case mOutput:
		return m.Output == ""
	case mCancelled:
		return !m.Cancelled
	case mTruncated:
		return !m.Truncated
	case mFullOutputPath:
		return m.FullOutputPath == ""
	case mExcludeFromContext:
		return !m.ExcludeFromContext
	case mCustomType:
		return m.CustomType == ""
	case mDisplay:
		return !m.Display
	case mSummary:
		return m.Summary == ""
	case mFromID:
		return m.FromID == ""
	case mTokensBefore:
		return m.TokensBefore == 0
	}
	return true
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func appendInt(dst []byte, v int64) []byte {
	if v >= 0 && v < 10 {
		return append(dst, byte('0'+v))
	}
	var buf [20]byte
	i := len(buf)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for u >= 10 {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	i--
	buf[i] = byte('0' + u)
	if neg {
		i--
		buf[i] = '-'
	}
	return append(dst, buf[i:]...)
}

// appendContent writes content as a JSON string or a list of blocks.
func appendContent(dst []byte, blocks []Block, asString bool) ([]byte, error) {
	if asString {
		return jsonx.AppendString(dst, blocks[0].Text), nil
	}
	dst = append(dst, '[')
	for i := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = blocks[i].appendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// MarshalJSON encodes the block.
func (b Block) MarshalJSON() ([]byte, error) { return b.appendJSON(nil) }

func (b *Block) appendJSON(dst []byte) ([]byte, error) {
	want := b.has
	if !b.decoded {
		want |= blockRequired(b.Type)
	}
	on := func(bit uint16, nonZero bool) bool { return nonZero || want&bit != 0 }
	dst = append(dst, '{')
	first := true
	str := func(key string, bit uint16, v string) {
		if on(bit, v != "") {
			dst, first = member(dst, first, key), false
			dst = jsonx.AppendString(dst, v)
		}
	}
	str("type", bType, b.Type)
	str("text", bText, b.Text)
	str("thinking", bThinking, b.Thinking)
	str("thinkingSignature", bThinkingSignature, b.ThinkingSignature)
	if on(bRedacted, b.Redacted) {
		dst, first = member(dst, first, "redacted"), false
		dst = appendBool(dst, b.Redacted)
	}
	str("id", bID, b.ID)
	str("name", bName, b.Name)
	if on(bArguments, b.Arguments != nil) {
		v, err := rawValue(b.Arguments, "{}")
		if err != nil {
			return nil, fmt.Errorf("tool call %q arguments: %w", b.ID, err)
		}
		dst, first = member(dst, first, "arguments"), false
		dst = append(dst, v...)
	}
	str("data", bData, b.Data)
	str("mimeType", bMimeType, b.MimeType)
	if len(b.Extra) > 0 {
		written := func(k string) bool {
			bit, ok := blockKeys[k]
			if !ok {
				return false
			}
			if bit == bArguments {
				return on(bArguments, b.Arguments != nil)
			}
			if bit == bRedacted {
				return on(bRedacted, b.Redacted)
			}
			return want&bit != 0 || blockStringField(b, bit) != ""
		}
		var err error
		if dst, first, err = b.Extra.appendTo(dst, first, written); err != nil {
			return nil, fmt.Errorf("block: %w", err)
		}
	}
	_ = first
	return append(dst, '}'), nil
}

func blockStringField(b *Block, bit uint16) string {
	switch bit {
	case bType:
		return b.Type
	case bText:
		return b.Text
	case bThinking:
		return b.Thinking
	case bThinkingSignature:
		return b.ThinkingSignature
	case bData:
		return b.Data
	case bMimeType:
		return b.MimeType
	case bID:
		return b.ID
	case bName:
		return b.Name
	}
	return ""
}

// MarshalJSON encodes the usage.
func (u Usage) MarshalJSON() ([]byte, error) { return u.appendJSON(nil) }

func (u *Usage) appendJSON(dst []byte) ([]byte, error) {
	want := u.has
	if !u.decoded {
		want = 0xFF
	}
	dst = append(dst, '{')
	first := true
	num := func(key string, bit uint8, v int64) {
		if v != 0 || want&bit != 0 {
			dst, first = member(dst, first, key), false
			dst = appendInt(dst, v)
		}
	}
	num("input", uInput, u.Input)
	num("output", uOutput, u.Output)
	num("cacheRead", uCacheRead, u.CacheRead)
	num("cacheWrite", uCacheWrite, u.CacheWrite)
	num("totalTokens", uTotalTokens, u.TotalTokens)
	if want&uCost != 0 || !u.Cost.isZero() {
		dst, first = member(dst, first, "cost"), false
		var err error
		if dst, err = u.Cost.appendJSON(dst); err != nil {
			return nil, err
		}
	}
	if len(u.Extra) > 0 {
		var err error
		skip := func(k string) bool {
			switch k {
			case "input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost":
				return true
			}
			return false
		}
		if dst, first, err = u.Extra.appendTo(dst, first, skip); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
	}
	_ = first
	return append(dst, '}'), nil
}

func (c *Cost) isZero() bool {
	return c.Input == 0 && c.Output == 0 && c.CacheRead == 0 && c.CacheWrite == 0 && c.Total == 0 && len(c.Extra) == 0
}

func (c *Cost) appendJSON(dst []byte) ([]byte, error) {
	want := c.has
	if !c.decoded {
		want = 0xFF
	}
	dst = append(dst, '{')
	first := true
	num := func(key string, bit uint8, v float64) {
		if v != 0 || want&bit != 0 {
			dst, first = member(dst, first, key), false
			dst = jsonx.AppendFloat(dst, v)
		}
	}
	num("input", cInput, c.Input)
	num("output", cOutput, c.Output)
	num("cacheRead", cCacheRead, c.CacheRead)
	num("cacheWrite", cCacheWrite, c.CacheWrite)
	num("total", cTotal, c.Total)
	if len(c.Extra) > 0 {
		var err error
		skip := func(k string) bool {
			switch k {
			case "input", "output", "cacheRead", "cacheWrite", "total":
				return true
			}
			return false
		}
		if dst, first, err = c.Extra.appendTo(dst, first, skip); err != nil {
			return nil, fmt.Errorf("cost: %w", err)
		}
	}
	_ = first
	return append(dst, '}'), nil
}

// ---- Decoding ----

// UnmarshalJSON decodes a message of any role. Members of an unexpected
// type are kept in Extra rather than rejected.
func (m *Message) UnmarshalJSON(b []byte) error {
	v, err := jsonx.Trim(b)
	if err != nil {
		return err
	}
	return m.decode(v, true)
}

// decode reads the object v. copyRaw says whether raw values must be
// copied (v may be shared with an Entry's bytes).
func (m *Message) decode(v []byte, copyRaw bool) error {
	*m = Message{decoded: true}
	it, err := jsonx.Object(v)
	if err != nil {
		return err
	}
	for it.Next() {
		kb := it.KeyBytes()
		val := it.Value()
		bit, known := messageKeys[string(kb)]
		if known && m.decodeMember(bit, val, copyRaw) {
			m.has |= bit
			if len(m.Extra) > 0 {
				m.Extra.Delete(string(kb)) // a later member wins
			}
			continue
		}
		if known {
			m.clearMember(bit)
		}
		m.Extra.Set(string(kb), keepRaw(val, copyRaw))
	}
	return it.Err()
}

func keepRaw(v []byte, copyRaw bool) json.RawMessage {
	if copyRaw {
		return append(json.RawMessage(nil), v...)
	}
	return v
}

// decodeMember stores a known member and reports whether its type fitted.
func (m *Message) decodeMember(bit uint32, v []byte, copyRaw bool) bool {
	var ok bool
	switch bit {
	case mRole:
		m.Role, ok = jsonx.String(v)
	case mContent:
		var asString bool
		m.Content, asString, ok = decodeContent(v, copyRaw)
		if ok && asString {
			m.has |= mContentString
		} else {
			m.has &^= mContentString
		}
	case mTimestamp:
		m.Timestamp, ok = jsonx.ParseInt(v)
	case mAPI:
		m.API, ok = jsonx.String(v)
	case mProvider:
		m.Provider, ok = jsonx.String(v)
	case mModel:
		m.Model, ok = jsonx.String(v)
	case mUsage:
		var u Usage
		if ok = u.decode(v, copyRaw); ok {
			m.Usage = &u
		}
	case mStopReason:
		m.StopReason, ok = jsonx.String(v)
	case mErrorMessage:
		m.ErrorMessage, ok = jsonx.String(v)
	case mToolCallID:
		m.ToolCallID, ok = jsonx.String(v)
	case mToolName:
		m.ToolName, ok = jsonx.String(v)
	case mIsError:
		m.IsError, ok = jsonx.ParseBool(v)
	case mDetails:
		m.Details, ok = keepRaw(v, copyRaw), true
	case mCommand:
		m.Command, ok = jsonx.String(v)
	case mOutput:
		m.Output, ok = jsonx.String(v)
	case mExitCode:
		var n int64
		if n, ok = jsonx.ParseInt(v); ok && int64(int(n)) == n {
			c := int(n)
			m.ExitCode = &c
		} else {
			ok = false
		}
	case mCancelled:
		m.Cancelled, ok = jsonx.ParseBool(v)
	case mTruncated:
		m.Truncated, ok = jsonx.ParseBool(v)
	case mFullOutputPath:
		m.FullOutputPath, ok = jsonx.String(v)
	case mExcludeFromContext:
		m.ExcludeFromContext, ok = jsonx.ParseBool(v)
	case mCustomType:
		m.CustomType, ok = jsonx.String(v)
	case mDisplay:
		m.Display, ok = jsonx.ParseBool(v)
	case mSummary:
		m.Summary, ok = jsonx.String(v)
	case mFromID:
		m.FromID, ok = jsonx.String(v)
	case mTokensBefore:
		m.TokensBefore, ok = jsonx.ParseInt(v)
	}
	return ok
}

// clearMember resets a typed member whose latest value went to Extra.
func (m *Message) clearMember(bit uint32) {
	m.has &^= bit
	switch bit {
	case mRole:
		m.Role = ""
	case mContent:
		m.Content = nil
		m.has &^= mContentString
	case mTimestamp:
		m.Timestamp = 0
	case mAPI:
		m.API = ""
	case mProvider:
		m.Provider = ""
	case mModel:
		m.Model = ""
	case mUsage:
		m.Usage = nil
	case mStopReason:
		m.StopReason = ""
	case mErrorMessage:
		m.ErrorMessage = ""
	case mToolCallID:
		m.ToolCallID = ""
	case mToolName:
		m.ToolName = ""
	case mIsError:
		m.IsError = false
	case mCommand:
		m.Command = ""
	case mOutput:
		m.Output = ""
	case mExitCode:
		m.ExitCode = nil
	case mCancelled:
		m.Cancelled = false
	case mTruncated:
		m.Truncated = false
	case mFullOutputPath:
		m.FullOutputPath = ""
	case mExcludeFromContext:
		m.ExcludeFromContext = false
	case mCustomType:
		m.CustomType = ""
	case mDisplay:
		m.Display = false
	case mSummary:
		m.Summary = ""
	case mFromID:
		m.FromID = ""
	case mTokensBefore:
		m.TokensBefore = 0
	}
}

// decodeContent reads a string or a list of block objects.
func decodeContent(v []byte, copyRaw bool) (blocks []Block, asString, ok bool) {
	switch jsonx.KindOf(v) {
	case jsonx.KindString:
		s, ok := jsonx.String(v)
		if !ok {
			return nil, false, false
		}
		return []Block{{Type: BlockText, Text: s, has: bType | bText, decoded: true}}, true, true
	case jsonx.KindArray:
		blocks = []Block{}
		err := jsonx.Elements(v, func(elem []byte) error {
			var b Block
			if !b.decode(elem, copyRaw) {
				return errNotBlock
			}
			blocks = append(blocks, b)
			return nil
		})
		return blocks, false, err == nil
	}
	return nil, false, false
}

var errNotBlock = errors.New("content element is not an object")

// UnmarshalJSON decodes a block.
func (b *Block) UnmarshalJSON(data []byte) error {
	v, err := jsonx.Trim(data)
	if err != nil {
		return err
	}
	if !b.decode(v, true) {
		return errNotBlock
	}
	return nil
}

func (b *Block) decode(v []byte, copyRaw bool) bool {
	*b = Block{decoded: true}
	it, err := jsonx.Object(v)
	if err != nil {
		return false
	}
	for it.Next() {
		kb := it.KeyBytes()
		val := it.Value()
		bit, known := blockKeys[string(kb)]
		ok := false
		if known {
			switch bit {
			case bType:
				b.Type, ok = jsonx.String(val)
			case bText:
				b.Text, ok = jsonx.String(val)
			case bThinking:
				b.Thinking, ok = jsonx.String(val)
			case bThinkingSignature:
				b.ThinkingSignature, ok = jsonx.String(val)
			case bRedacted:
				b.Redacted, ok = jsonx.ParseBool(val)
			case bData:
				b.Data, ok = jsonx.String(val)
			case bMimeType:
				b.MimeType, ok = jsonx.String(val)
			case bID:
				b.ID, ok = jsonx.String(val)
			case bName:
				b.Name, ok = jsonx.String(val)
			case bArguments:
				b.Arguments, ok = keepRaw(val, copyRaw), true
			}
		}
		if ok {
			b.has |= bit
			if len(b.Extra) > 0 {
				b.Extra.Delete(string(kb))
			}
			continue
		}
		if known {
			b.has &^= bit
			switch bit {
			case bType:
				b.Type = ""
			case bText:
				b.Text = ""
			case bThinking:
				b.Thinking = ""
			case bThinkingSignature:
				b.ThinkingSignature = ""
			case bRedacted:
				b.Redacted = false
			case bData:
				b.Data = ""
			case bMimeType:
				b.MimeType = ""
			case bID:
				b.ID = ""
			case bName:
				b.Name = ""
			}
		}
		b.Extra.Set(string(kb), keepRaw(val, copyRaw))
	}
	return it.Err() == nil
}

// UnmarshalJSON decodes a usage object.
func (u *Usage) UnmarshalJSON(data []byte) error {
	v, err := jsonx.Trim(data)
	if err != nil {
		return err
	}
	if !u.decode(v, true) {
		return errors.New("usage is not an object")
	}
	return nil
}

func (u *Usage) decode(v []byte, copyRaw bool) bool {
	*u = Usage{decoded: true}
	it, err := jsonx.Object(v)
	if err != nil {
		return false
	}
	for it.Next() {
		kb, val := it.KeyBytes(), it.Value()
		var dst *int64
		var bit uint8
		switch string(kb) {
		case "input":
			dst, bit = &u.Input, uInput
		case "output":
			dst, bit = &u.Output, uOutput
		case "cacheRead":
			dst, bit = &u.CacheRead, uCacheRead
		case "cacheWrite":
			dst, bit = &u.CacheWrite, uCacheWrite
		case "totalTokens":
			dst, bit = &u.TotalTokens, uTotalTokens
		case "cost":
			bit = uCost
			if u.Cost.decode(val, copyRaw) {
				u.has |= uCost
				continue
			}
			u.Cost = Cost{}
		}
		if dst != nil {
			if n, ok := jsonx.ParseInt(val); ok {
				*dst = n
				u.has |= bit
				if len(u.Extra) > 0 {
					u.Extra.Delete(string(kb))
				}
				continue
			}
			*dst = 0
		}
		u.has &^= bit
		u.Extra.Set(string(kb), keepRaw(val, copyRaw))
	}
	return it.Err() == nil
}

func (c *Cost) decode(v []byte, copyRaw bool) bool {
	*c = Cost{decoded: true}
	it, err := jsonx.Object(v)
	if err != nil {
		return false
	}
	for it.Next() {
		kb, val := it.KeyBytes(), it.Value()
		var dst *float64
		var bit uint8
		switch string(kb) {
		case "input":
			dst, bit = &c.Input, cInput
		case "output":
			dst, bit = &c.Output, cOutput
		case "cacheRead":
			dst, bit = &c.CacheRead, cCacheRead
		case "cacheWrite":
			dst, bit = &c.CacheWrite, cCacheWrite
		case "total":
			dst, bit = &c.Total, cTotal
		}
		if dst != nil {
			if f, ok := jsonx.ParseFloat(val); ok {
				*dst = f
				c.has |= bit
				if len(c.Extra) > 0 {
					c.Extra.Delete(string(kb))
				}
				continue
			}
			*dst = 0
			c.has &^= bit
		}
		c.Extra.Set(string(kb), keepRaw(val, copyRaw))
	}
	return it.Err() == nil
}
