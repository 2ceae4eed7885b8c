package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
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

// Content block types. Text, thinking, image and toolCall are pi's; the
// others are this package's homes for what the provider APIs have besides
// (see Block).
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockImage    = "image"
	BlockToolCall = "toolCall"

	BlockDocument = "document" // a PDF, a plain text, a URL or a file id
	BlockAudio    = "audio"    // audio input, base64 (OpenAI input_audio)
	BlockRefusal  = "refusal"  // a model's refusal (OpenAI), in Text
	// BlockRedactedThinking is oh-my-pi's block for redacted thinking,
	// its opaque data in Data; pi and this package write redacted
	// thinking as a thinking block marked Redacted (see RedactedThinking).
	BlockRedactedThinking = "redactedThinking"
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
// Messages handed out by a Session (Messages, Context, ContextAt,
// Resume) are deep copies that belong to the caller: editing them changes
// nothing in the session (see Context for the copy rule).
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

	// The JSON codec of the fields above is generated from their lines in
	// internal/codecgen/tables.go: a new field needs one there too.
	has       uint32 // members present when decoded
	decoded   bool
	synthetic bool
}

// requiredFor lists the members a Message built in Go writes for a role
// even when empty; a member left out here is written only when set. A
// message decoded from a file keeps the members it had, empty or not.
//
// It is what the seed agents always write, less what pi reads as well
// without:
//   - A tool result's toolName: results of other frameworks name only
//     their call, and no converter needs the name (Anthropic's
//     tool_result and OpenAI's tool message and function_call_output
//     carry the call id alone).
//   - An assistant message's api, provider and model: pi only compares
//     them (transformMessages' same-model test, the model a session
//     restores through modelRegistry.find), and an absent one compares
//     as an empty one does: with no model, the session restores none.
//
// An assistant message's usage stays, zero or not, with all its members:
// pi's footer adds up usage.input, output, cacheRead, cacheWrite and
// cost.total of every assistant message of the session without a check,
// and a message without usage stops it with a TypeError (a member left
// out makes a NaN). totalTokens, which pi's older sessions lack and pi
// reads as totalTokens || the sum of the four, stays too: pi's providers
// always write it, and the provider packages write what they write.
func requiredFor(role string) uint32 {
	switch role {
	case RoleUser:
		return mRole | mContent | mTimestamp
	case RoleAssistant:
		return mRole | mContent | mUsage | mStopReason | mTimestamp
	case RoleToolResult:
		return mRole | mToolCallID | mContent | mIsError | mTimestamp
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

// Block is one content block. Type says which fields apply; the others
// stay zero. Members this type does not model are kept in Extra.
//
// pi's types are text, thinking, image and toolCall. The others are
// homes for what the provider APIs have besides, which the provider
// packages read and write: documents (BlockDocument), audio input
// (BlockAudio), refusals (BlockRefusal), the citations of a text block
// (Citations), and redacted thinking in oh-my-pi's form
// (BlockRedactedThinking). pi leaves block types it does not know out of
// an assistant message, so refusals and oh-my-pi's redacted thinking are
// safe there; but pi sends every block of a user message or tool result
// that is not text as an image, so a session whose user content holds
// documents or audio is one pi cannot send as it is.
type Block struct {
	Type string

	// text; refusal; document: a plain-text document's text
	Text string
	// text: the citations of the text, an array of Anthropic's citation
	// objects as the API gives them (see Citation, CitationList);
	// document: {"enabled":true} when the model may cite it.
	Citations json.RawMessage

	Thinking          string // thinking
	ThinkingSignature string
	Redacted          bool

	// image, audio, document: the data, base64 (redactedThinking: the
	// opaque data)
	Data     string
	MimeType string

	URL      string // document: a document given by URL
	FileID   string // document: a file uploaded to the provider
	Filename string // document
	Title    string // document
	Context  string // document: what the document is, for the model

	ID        string // toolCall
	Name      string
	Arguments json.RawMessage // a JSON object

	Extra Fields

	// A new field needs its line in internal/codecgen/tables.go.
	has     uint16
	decoded bool
}

func blockRequired(typ string) uint16 {
	switch typ {
	case BlockText, BlockRefusal:
		return bType | bText
	case BlockThinking:
		return bType | bThinking
	case BlockImage, BlockAudio:
		return bType | bData | bMimeType
	case BlockToolCall:
		return bType | bID | bName | bArguments
	case BlockRedactedThinking:
		return bType | bData
	}
	return bType
}

// Usage is the token accounting of one assistant message. Input,
// Output, CacheRead, CacheWrite, TotalTokens and Cost are pi's, always
// written; the other counters are those some providers report besides,
// written only when not zero, under the member names oh-my-pi writes
// where it has them (reasoningTokens, cttl, server) and names of their
// own elsewhere, so that neither agent misreads them.
type Usage struct {
	Input       int64 // input neither read from the cache nor written to it
	Output      int64 // output, reasoning included
	CacheRead   int64
	CacheWrite  int64
	TotalTokens int64
	Cost        Cost

	// ReasoningTokens is the part of Output the model spent reasoning
	// (OpenAI's reasoning_tokens), when the provider reports it.
	ReasoningTokens int64
	// CacheTTL splits CacheWrite by how long the entries last
	// (Anthropic's cache_creation).
	CacheTTL CacheTTL
	// Server counts the requests of server-side tools (Anthropic's
	// server_tool_use).
	Server ServerToolUse
	// InputAudioTokens and OutputAudioTokens are the audio parts of the
	// input and the output (OpenAI's audio_tokens).
	InputAudioTokens  int64
	OutputAudioTokens int64
	// AcceptedPredictionTokens and RejectedPredictionTokens count the
	// tokens of a predicted output that the reply did and did not use
	// (OpenAI's Predicted Outputs).
	AcceptedPredictionTokens int64
	RejectedPredictionTokens int64
	// ServiceTier is the tier that served the request ("standard",
	// "priority", "default", "flex", ...), as the provider names it.
	ServiceTier string

	Extra Fields

	// A new field needs its line in internal/codecgen/tables.go.
	has     uint16
	decoded bool
}

// CacheTTL splits a usage's cache writes by how long they last: written
// as oh-my-pi writes it (usage.cttl), each member only when not zero.
type CacheTTL struct {
	Ephemeral5m int64 // written for five minutes
	Ephemeral1h int64 // written for an hour
	Extra       Fields

	// A new field needs its line in internal/codecgen/tables.go.
	has     uint8
	decoded bool
}

// ServerToolUse counts the requests a reply made of server-side tools:
// written as oh-my-pi writes it (usage.server), each member only when
// not zero.
type ServerToolUse struct {
	WebSearch int64
	WebFetch  int64
	Extra     Fields

	// A new field needs its line in internal/codecgen/tables.go.
	has     uint8
	decoded bool
}

// Cost is the price of a message's usage, in the provider's currency unit.
type Cost struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
	Total      float64
	Extra      Fields

	// A new field needs its line in internal/codecgen/tables.go.
	has     uint8
	decoded bool
}

// Add returns the sum of two usages, as used for session and branch
// totals: every counter is summed; the service tier is kept where both
// have the same one (or one has none), and is empty for a mix.
func (u Usage) Add(v Usage) Usage {
	tier := u.ServiceTier
	switch {
	case tier == "":
		tier = v.ServiceTier
	case v.ServiceTier != "" && v.ServiceTier != tier:
		tier = ""
	}
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
		ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens,
		CacheTTL: CacheTTL{
			Ephemeral5m: u.CacheTTL.Ephemeral5m + v.CacheTTL.Ephemeral5m,
			Ephemeral1h: u.CacheTTL.Ephemeral1h + v.CacheTTL.Ephemeral1h,
		},
		Server: ServerToolUse{
			WebSearch: u.Server.WebSearch + v.Server.WebSearch,
			WebFetch:  u.Server.WebFetch + v.Server.WebFetch,
		},
		InputAudioTokens:         u.InputAudioTokens + v.InputAudioTokens,
		OutputAudioTokens:        u.OutputAudioTokens + v.OutputAudioTokens,
		AcceptedPredictionTokens: u.AcceptedPredictionTokens + v.AcceptedPredictionTokens,
		RejectedPredictionTokens: u.RejectedPredictionTokens + v.RejectedPredictionTokens,
		ServiceTier:              tier,
	}
}

// hasExtra reports whether u or one of its nested objects has unknown
// members.
func (u *Usage) hasExtra() bool {
	for _, f := range u.extras() {
		if len(f) > 0 {
			return true
		}
	}
	return false
}

// extras returns the unknown members of u and of its nested objects.
func (u *Usage) extras() [4]Fields {
	return [4]Fields{u.Extra, u.Cost.Extra, u.CacheTTL.Extra, u.Server.Extra}
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
// stop reason "stop". Set Provider, Model and Usage with the With methods:
// empty, api, provider and model are not written; usage is, zero.
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
// toolName may be empty: a result is paired with its call by callID
// alone, and one without a name is written without a toolName member.
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

// UnresolvedImageText is the text Session.Messages, Context.ForModel and
// the provider conversions send in place of an unresolved image (see
// Block.Unresolved).
const UnresolvedImageText = "[image unavailable: its data could not be read from the blob store]"

// Unresolved reports whether b is an image whose data is still a blob
// reference ("blob:sha256:<hex>"): the store could not read the blob
// back (Log.Unresolved says why). Such data is not an image, and is never
// sent to a model: UnresolvedImageText goes in its place.
func (b Block) Unresolved() bool {
	return b.Type == BlockImage && strings.HasPrefix(b.Data, BlobPrefix)
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

// Synthetic reports whether the message was made by this package (an
// error result for a dangling tool call) rather than read from the log.
func (m *Message) Synthetic() bool { return m.synthetic }

// mayHoldImage reports whether m has an image block, or JSON of its own
// (extra members, details, tool arguments) in which one could hide.
func (m *Message) mayHoldImage() bool {
	if len(m.Extra) > 0 || m.Details != nil || (m.Usage != nil && m.Usage.hasExtra()) {
		return true
	}
	for i := range m.Content {
		b := &m.Content[i]
		switch {
		case b.Type == BlockImage, len(b.Extra) > 0:
			return true
		case b.Type == BlockToolCall && bytes.Contains(b.Arguments, []byte(`"image"`)):
			return true
		}
	}
	return false
}

// Clone returns a deep copy of m.
func (m *Message) Clone() *Message {
	if m == nil {
		return nil
	}
	c := m.clone()
	return &c
}
