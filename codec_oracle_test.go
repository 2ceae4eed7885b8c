package session

// The hand-written codec this package had before message_codec.go was
// generated (commit 3e3b855), renamed with an "old" prefix: a test oracle the
// generated codec must agree with, byte for byte and field for field.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

// ---- Encoding ----

// oldObjEnc writes the members of a JSON object.
type oldObjEnc struct {
	dst     []byte
	first   bool
	invalid bool // a string written was not valid UTF-8 (and was repaired)
}

// key writes the separator and a key that needs no escaping.
func (e *oldObjEnc) key(k string) {
	if !e.first {
		e.dst = append(e.dst, ',')
	}
	e.first = false
	e.dst = append(e.dst, '"')
	e.dst = append(e.dst, k...)
	e.dst = append(e.dst, '"', ':')
}

func (e *oldObjEnc) str(k, v string) {
	e.key(k)
	var ok bool
	e.dst, ok = jsonx.AppendStringValid(e.dst, v)
	e.invalid = e.invalid || !ok
}

func (e *oldObjEnc) boolean(k string, v bool) {
	e.key(k)
	e.dst = oldAppendBool(e.dst, v)
}

func (e *oldObjEnc) integer(k string, v int64) {
	e.key(k)
	e.dst = oldAppendInt(e.dst, v)
}

func (e *oldObjEnc) float(k string, v float64) {
	e.key(k)
	e.dst = jsonx.AppendFloat(e.dst, v)
}

// extra writes unknown members, leaving out keys written already.
func (e *oldObjEnc) extra(f Fields, written func(string) bool) error {
	var err error
	e.dst, e.first, err = f.appendTo(e.dst, e.first, written)
	return err
}

// MarshalJSON encodes the message in the seed format's JSON shape.
func (m *Message) oldMarshalJSON() ([]byte, error) {
	return m.oldAppendJSONExported(make([]byte, 0, m.oldSizeHint()))
}

// sizeHint estimates the encoded size, to allocate once.
func (m *Message) oldSizeHint() int {
	n := 256 + len(m.Command) + len(m.Output) + len(m.Summary) + len(m.ErrorMessage) + len(m.Details)
	for i := range m.Content {
		b := &m.Content[i]
		n += 48 + len(b.Text) + len(b.Thinking) + len(b.ThinkingSignature) + len(b.Data) + len(b.Arguments)
	}
	return n + n/8 // room for escapes
}

// AppendJSON appends the message's JSON encoding to dst.
func (m *Message) oldAppendJSONExported(dst []byte) ([]byte, error) {
	dst, _, err := m.oldAppendJSON(dst)
	return dst, err
}

// appendJSON is AppendJSON, and reports whether every string was valid
// UTF-8: a message that encodes as it is, which canonicalize can take on
// trust.
func (m *Message) oldAppendJSON(dst []byte) ([]byte, bool, error) {
	want := m.has
	if !m.decoded {
		want |= requiredFor(m.Role)
	}
	on := func(bit uint32, nonZero bool) bool { return nonZero || want&bit != 0 }
	e := oldObjEnc{dst: append(dst, '{'), first: true}
	if on(mRole, m.Role != "") {
		e.str("role", m.Role)
	}
	if on(mToolCallID, m.ToolCallID != "") {
		e.str("toolCallId", m.ToolCallID)
	}
	if on(mToolName, m.ToolName != "") {
		e.str("toolName", m.ToolName)
	}
	if on(mCommand, m.Command != "") {
		e.str("command", m.Command)
	}
	if on(mOutput, m.Output != "") {
		e.str("output", m.Output)
	}
	if m.ExitCode != nil {
		e.integer("exitCode", int64(*m.ExitCode))
	}
	if on(mCancelled, m.Cancelled) {
		e.boolean("cancelled", m.Cancelled)
	}
	if on(mTruncated, m.Truncated) {
		e.boolean("truncated", m.Truncated)
	}
	if on(mFullOutputPath, m.FullOutputPath != "") {
		e.str("fullOutputPath", m.FullOutputPath)
	}
	if on(mCustomType, m.CustomType != "") {
		e.str("customType", m.CustomType)
	}
	if on(mSummary, m.Summary != "") {
		e.str("summary", m.Summary)
	}
	if on(mFromID, m.FromID != "") {
		e.str("fromId", m.FromID)
	}
	if on(mTokensBefore, m.TokensBefore != 0) {
		e.integer("tokensBefore", m.TokensBefore)
	}
	if on(mContent, m.Content != nil) {
		e.key("content")
		var err error
		if e.dst, err = oldAppendContentValid(e.dst, m.Content, m.ContentIsString(), &e.invalid); err != nil {
			return nil, false, err
		}
	}
	if on(mDisplay, m.Display) {
		e.boolean("display", m.Display)
	}
	if on(mDetails, m.Details != nil) {
		v, err := rawValue(m.Details, "null")
		if err != nil {
			return nil, false, fmt.Errorf("message details: %w", err)
		}
		e.key("details")
		e.dst = append(e.dst, v...)
	}
	if on(mIsError, m.IsError) {
		e.boolean("isError", m.IsError)
	}
	if on(mAPI, m.API != "") {
		e.str("api", m.API)
	}
	if on(mProvider, m.Provider != "") {
		e.str("provider", m.Provider)
	}
	if on(mModel, m.Model != "") {
		e.str("model", m.Model)
	}
	if on(mUsage, m.Usage != nil) {
		e.key("usage")
		u := m.Usage
		if u == nil {
			u = &Usage{}
		}
		var err error
		if e.dst, err = u.oldAppendJSON(e.dst); err != nil {
			return nil, false, err
		}
	}
	if on(mStopReason, m.StopReason != "") {
		e.str("stopReason", m.StopReason)
	}
	if on(mTimestamp, m.Timestamp != 0) {
		e.integer("timestamp", m.Timestamp)
	}
	if on(mErrorMessage, m.ErrorMessage != "") {
		e.str("errorMessage", m.ErrorMessage)
	}
	if on(mExcludeFromContext, m.ExcludeFromContext) {
		e.boolean("excludeFromContext", m.ExcludeFromContext)
	}
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
			return want&bit != 0 || !oldIsZeroMessageField(m, bit)
		}
		if err := e.extra(m.Extra, written); err != nil {
			return nil, false, fmt.Errorf("message: %w", err)
		}
	}
	return append(e.dst, '}'), !e.invalid, nil
}

// oldIsZeroMessageField reports whether the scalar field behind bit is zero.
func oldIsZeroMessageField(m *Message, bit uint32) bool {
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

func oldAppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func oldAppendInt(dst []byte, v int64) []byte {
	return strconv.AppendInt(dst, v, 10)
}

// oldAppendContent writes content as a JSON string or a list of blocks.
func oldAppendContent(dst []byte, blocks []Block, asString bool) ([]byte, error) {
	var invalid bool
	return oldAppendContentValid(dst, blocks, asString, &invalid)
}

// oldAppendContentValid is oldAppendContent, setting *invalid when a string was
// not valid UTF-8.
func oldAppendContentValid(dst []byte, blocks []Block, asString bool, invalid *bool) ([]byte, error) {
	if asString {
		dst, ok := jsonx.AppendStringValid(dst, blocks[0].Text)
		*invalid = *invalid || !ok
		return dst, nil
	}
	dst = append(dst, '[')
	for i := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = blocks[i].oldAppendJSON(dst, invalid); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// MarshalJSON encodes the block.
func (b Block) oldMarshalJSON() ([]byte, error) {
	var invalid bool
	return b.oldAppendJSON(nil, &invalid)
}

func (b *Block) oldAppendJSON(dst []byte, invalid *bool) ([]byte, error) {

	want := b.has
	if !b.decoded {
		want |= blockRequired(b.Type)
	}
	on := func(bit uint16, nonZero bool) bool { return nonZero || want&bit != 0 }
	e := oldObjEnc{dst: append(dst, '{'), first: true}
	if on(bType, b.Type != "") {
		e.str("type", b.Type)
	}
	if on(bText, b.Text != "") {
		e.str("text", b.Text)
	}
	if on(bThinking, b.Thinking != "") {
		e.str("thinking", b.Thinking)
	}
	if on(bThinkingSignature, b.ThinkingSignature != "") {
		e.str("thinkingSignature", b.ThinkingSignature)
	}
	if on(bRedacted, b.Redacted) {
		e.boolean("redacted", b.Redacted)
	}
	if on(bID, b.ID != "") {
		e.str("id", b.ID)
	}
	if on(bName, b.Name != "") {
		e.str("name", b.Name)
	}
	if on(bArguments, b.Arguments != nil) {
		v, err := rawValue(b.Arguments, "{}")
		if err != nil {
			return nil, fmt.Errorf("tool call %q arguments: %w", b.ID, err)
		}
		e.key("arguments")
		e.dst = append(e.dst, v...)
	}
	if on(bData, b.Data != "") {
		e.str("data", b.Data)
	}
	if on(bMimeType, b.MimeType != "") {
		e.str("mimeType", b.MimeType)
	}
	if len(b.Extra) > 0 {
		written := func(k string) bool {
			bit, ok := blockKeys[k]
			if !ok {
				return false
			}
			switch bit {
			case bArguments:
				return on(bArguments, b.Arguments != nil)
			case bRedacted:
				return on(bRedacted, b.Redacted)
			}
			return want&bit != 0 || oldBlockStringField(b, bit) != ""
		}
		if err := e.extra(b.Extra, written); err != nil {
			return nil, fmt.Errorf("block: %w", err)
		}
	}
	*invalid = *invalid || e.invalid
	return append(e.dst, '}'), nil
}

func oldBlockStringField(b *Block, bit uint16) string {
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
func (u Usage) oldMarshalJSON() ([]byte, error) { return u.oldAppendJSON(nil) }

var oldUsageKeys = map[string]uint8{
	"input": uInput, "output": uOutput, "cacheRead": uCacheRead, "cacheWrite": uCacheWrite,
	"totalTokens": uTotalTokens, "cost": uCost,
}

func (u *Usage) oldAppendJSON(dst []byte) ([]byte, error) {
	want := u.has
	if !u.decoded {
		want = 0xFF
	}
	var wrote uint8
	e := oldObjEnc{dst: append(dst, '{'), first: true}
	num := func(k string, bit uint8, v int64) {
		if v != 0 || want&bit != 0 {
			e.integer(k, v)
			wrote |= bit
		}
	}
	num("input", uInput, u.Input)
	num("output", uOutput, u.Output)
	num("cacheRead", uCacheRead, u.CacheRead)
	num("cacheWrite", uCacheWrite, u.CacheWrite)
	num("totalTokens", uTotalTokens, u.TotalTokens)
	if want&uCost != 0 || !u.Cost.oldIsZero() {
		e.key("cost")
		wrote |= uCost
		var err error
		if e.dst, err = u.Cost.oldAppendJSON(e.dst); err != nil {
			return nil, err
		}
	}
	if len(u.Extra) > 0 {
		skip := func(k string) bool { return wrote&oldUsageKeys[k] != 0 }
		if err := e.extra(u.Extra, skip); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
	}
	return append(e.dst, '}'), nil
}

func (c *Cost) oldIsZero() bool {
	return c.Input == 0 && c.Output == 0 && c.CacheRead == 0 && c.CacheWrite == 0 && c.Total == 0 && len(c.Extra) == 0
}

var oldCostKeys = map[string]uint8{"input": cInput, "output": cOutput, "cacheRead": cCacheRead, "cacheWrite": cCacheWrite, "total": cTotal}

func (c *Cost) oldAppendJSON(dst []byte) ([]byte, error) {
	want := c.has
	if !c.decoded {
		want = 0xFF
	}
	var wrote uint8
	e := oldObjEnc{dst: append(dst, '{'), first: true}
	num := func(k string, bit uint8, v float64) {
		if v != 0 || want&bit != 0 {
			e.float(k, v)
			wrote |= bit
		}
	}
	num("input", cInput, c.Input)
	num("output", cOutput, c.Output)
	num("cacheRead", cCacheRead, c.CacheRead)
	num("cacheWrite", cCacheWrite, c.CacheWrite)
	num("total", cTotal, c.Total)
	if len(c.Extra) > 0 {
		skip := func(k string) bool { return wrote&oldCostKeys[k] != 0 }
		if err := e.extra(c.Extra, skip); err != nil {
			return nil, fmt.Errorf("cost: %w", err)
		}
	}
	return append(e.dst, '}'), nil
}

// ---- Decoding ----

// UnmarshalJSON decodes a message of any role. Members of an unexpected
// type are kept in Extra rather than rejected.
func (m *Message) oldUnmarshalJSON(b []byte) error {
	return m.oldDecode(b, true)
}

// decode reads the object v. copyRaw says whether raw values must be
// copied (v may be shared with an Entry's bytes).
func (m *Message) oldDecode(v []byte, copyRaw bool) error {
	var c jsonx.Cursor
	c.Reset(v)
	if !m.oldRead(&c, copyRaw) {
		if c.Err() != nil {
			return c.Err()
		}
		return errNotObject
	}
	if !c.AtEnd() {
		return &jsonx.SyntaxError{Offset: c.Pos(), Msg: "unexpected data after message"}
	}
	return nil
}

// oldMemberKey returns the key as a string, allocating only when needed.
func oldMemberKey(ms *jsonx.Members, kb []byte, esc bool) string {
	if esc {
		return ms.Key()
	}
	return string(kb)
}

// read reads a message object at the cursor; false, reading nothing, if
// the next value is not an object, or on a syntax error.
func (m *Message) oldRead(c *jsonx.Cursor, copyRaw bool) bool {
	ms, ok := c.Object()
	if !ok {
		return false
	}
	*m = Message{decoded: true}
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		var bit uint32
		var known bool
		if esc {
			bit, known = messageKeys[ms.Key()]
		} else {
			bit, known = messageKeys[string(kb)]
		}
		if known && m.oldReadMember(c, bit, copyRaw) {
			m.has |= bit
			if len(m.Extra) > 0 {
				m.Extra.Delete(oldMemberKey(&ms, kb, esc)) // a later member wins
			}
			continue
		}
		if c.Err() != nil {
			return false
		}
		if known {
			m.oldClearMember(bit)
		}
		raw := c.Skip()
		m.Extra.Set(oldMemberKey(&ms, kb, esc), oldKeepRaw(raw, copyRaw))
	}
	return c.Err() == nil
}

func oldKeepRaw(v []byte, copyRaw bool) json.RawMessage {
	if copyRaw {
		return append(json.RawMessage(nil), v...)
	}
	return v
}

// readMember reads a known member; false, reading nothing, if its value
// has an unexpected type.
func (m *Message) oldReadMember(c *jsonx.Cursor, bit uint32, copyRaw bool) bool {
	var ok bool
	switch bit {
	case mRole:
		m.Role, ok = c.Str()
	case mContent:
		var asString bool
		m.Content, asString, ok = oldReadContent(c, copyRaw)
		if ok && asString {
			m.has |= mContentString
		} else {
			m.has &^= mContentString
		}
	case mTimestamp:
		m.Timestamp, ok = c.Int()
	case mAPI:
		m.API, ok = c.Str()
	case mProvider:
		m.Provider, ok = c.Str()
	case mModel:
		m.Model, ok = c.Str()
	case mUsage:
		var u Usage
		if ok = u.oldRead(c, copyRaw); ok {
			m.Usage = &u
		}
	case mStopReason:
		m.StopReason, ok = c.Str()
	case mErrorMessage:
		m.ErrorMessage, ok = c.Str()
	case mToolCallID:
		m.ToolCallID, ok = c.Str()
	case mToolName:
		m.ToolName, ok = c.Str()
	case mIsError:
		m.IsError, ok = c.Bool()
	case mDetails:
		raw := c.Skip()
		m.Details, ok = oldKeepRaw(raw, copyRaw), raw != nil
	case mCommand:
		m.Command, ok = c.Str()
	case mOutput:
		m.Output, ok = c.Str()
	case mExitCode:
		mark := c.Mark()
		var n int64
		if n, ok = c.Int(); ok && int64(int(n)) == n {
			e := int(n)
			m.ExitCode = &e
		} else if ok {
			c.Restore(mark)
			ok = false
		}
	case mCancelled:
		m.Cancelled, ok = c.Bool()
	case mTruncated:
		m.Truncated, ok = c.Bool()
	case mFullOutputPath:
		m.FullOutputPath, ok = c.Str()
	case mExcludeFromContext:
		m.ExcludeFromContext, ok = c.Bool()
	case mCustomType:
		m.CustomType, ok = c.Str()
	case mDisplay:
		m.Display, ok = c.Bool()
	case mSummary:
		m.Summary, ok = c.Str()
	case mFromID:
		m.FromID, ok = c.Str()
	case mTokensBefore:
		m.TokensBefore, ok = c.Int()
	}
	return ok
}

// clearMember resets a typed member whose latest value went to Extra.
func (m *Message) oldClearMember(bit uint32) {
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

// oldReadContent reads a string or a list of block objects; false, reading
// nothing, for anything else.
func oldReadContent(c *jsonx.Cursor, copyRaw bool) (blocks []Block, asString, ok bool) {
	switch c.Kind() {
	case jsonx.KindString:
		s, ok := c.Str()
		if !ok {
			return nil, false, false
		}
		return []Block{{Type: BlockText, Text: s, has: bType | bText, decoded: true}}, true, true
	case jsonx.KindArray:
		mark := c.Mark()
		es, _ := c.Array()
		blocks = make([]Block, 0, 1) // most messages have one block; a second grows it
		for es.Next() {
			var b Block
			if !b.oldRead(c, copyRaw) {
				c.Restore(mark)
				return nil, false, false
			}
			blocks = append(blocks, b)
		}
		return blocks, false, c.Err() == nil
	}
	return nil, false, false
}

var oldErrNotBlock = errors.New("content element is not an object")

// UnmarshalJSON decodes a block.
func (b *Block) oldUnmarshalJSON(data []byte) error {
	var c jsonx.Cursor
	c.Reset(data)
	if !b.oldRead(&c, true) {
		if c.Err() != nil {
			return c.Err()
		}
		return oldErrNotBlock
	}
	if !c.AtEnd() {
		return &jsonx.SyntaxError{Offset: c.Pos(), Msg: "unexpected data after block"}
	}
	return nil
}

func (b *Block) oldRead(c *jsonx.Cursor, copyRaw bool) bool {
	ms, ok := c.Object()
	if !ok {
		return false
	}
	*b = Block{decoded: true}
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		var bit uint16
		var known bool
		if esc {
			bit, known = blockKeys[ms.Key()]
		} else {
			bit, known = blockKeys[string(kb)]
		}
		ok := false
		if known {
			switch bit {
			case bType:
				b.Type, ok = c.Str()
			case bText:
				b.Text, ok = c.Str()
			case bThinking:
				b.Thinking, ok = c.Str()
			case bThinkingSignature:
				b.ThinkingSignature, ok = c.Str()
			case bRedacted:
				b.Redacted, ok = c.Bool()
			case bData:
				b.Data, ok = c.Str()
			case bMimeType:
				b.MimeType, ok = c.Str()
			case bID:
				b.ID, ok = c.Str()
			case bName:
				b.Name, ok = c.Str()
			case bArguments:
				raw := c.Skip()
				b.Arguments, ok = oldKeepRaw(raw, copyRaw), raw != nil
			}
		}
		if ok {
			b.has |= bit
			if len(b.Extra) > 0 {
				b.Extra.Delete(oldMemberKey(&ms, kb, esc))
			}
			continue
		}
		if c.Err() != nil {
			return false
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
		b.Extra.Set(oldMemberKey(&ms, kb, esc), oldKeepRaw(c.Skip(), copyRaw))
	}
	return c.Err() == nil
}

// UnmarshalJSON decodes a usage object.
func (u *Usage) oldUnmarshalJSON(data []byte) error {
	var c jsonx.Cursor
	c.Reset(data)
	if !u.oldRead(&c, true) {
		if c.Err() != nil {
			return c.Err()
		}
		return errors.New("usage is not an object")
	}
	if !c.AtEnd() {
		return &jsonx.SyntaxError{Offset: c.Pos(), Msg: "unexpected data after usage"}
	}
	return nil
}

func (u *Usage) oldRead(c *jsonx.Cursor, copyRaw bool) bool {
	ms, ok := c.Object()
	if !ok {
		return false
	}
	*u = Usage{decoded: true}
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			kb = []byte(ms.Key())
		}
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
			if u.Cost.oldRead(c, copyRaw) {
				u.has |= uCost
				if len(u.Extra) > 0 {
					u.Extra.Delete(string(kb))
				}
				continue
			}
			u.Cost = Cost{}
		}
		if dst != nil {
			if n, ok := c.Int(); ok {
				*dst = n
				u.has |= bit
				if len(u.Extra) > 0 {
					u.Extra.Delete(string(kb))
				}
				continue
			}
			*dst = 0
		}
		if c.Err() != nil {
			return false
		}
		u.has &^= bit
		u.Extra.Set(string(kb), oldKeepRaw(c.Skip(), copyRaw))
	}
	return c.Err() == nil
}

func (k *Cost) oldRead(c *jsonx.Cursor, copyRaw bool) bool {
	ms, ok := c.Object()
	if !ok {
		return false
	}
	*k = Cost{decoded: true}
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			kb = []byte(ms.Key())
		}
		var dst *float64
		var bit uint8
		switch string(kb) {
		case "input":
			dst, bit = &k.Input, cInput
		case "output":
			dst, bit = &k.Output, cOutput
		case "cacheRead":
			dst, bit = &k.CacheRead, cCacheRead
		case "cacheWrite":
			dst, bit = &k.CacheWrite, cCacheWrite
		case "total":
			dst, bit = &k.Total, cTotal
		}
		if dst != nil {
			if f, ok := c.Float(); ok {
				*dst = f
				k.has |= bit
				if len(k.Extra) > 0 {
					k.Extra.Delete(string(kb))
				}
				continue
			}
			*dst = 0
			k.has &^= bit
		}
		if c.Err() != nil {
			return false
		}
		k.Extra.Set(string(kb), oldKeepRaw(c.Skip(), copyRaw))
	}
	return c.Err() == nil
}

// ---- Canonical form ----

// canonicalize turns m, a message the session owns, into exactly what
// decoding its encoding gives (the form every message read back from a
// store has), without the cost of decoding. It reports false, leaving m
// unusable, when m holds something only a real decode reproduces: unknown
// members, strings that are not valid UTF-8, numbers JSON cannot hold.
// valid says every string is known to be valid UTF-8 (the message was
// just encoded without repairs), which spares checking them again.
func (m *Message) oldCanonicalize(valid bool) bool {
	if len(m.Extra) > 0 || !valid && !oldValidStrings(m.Role, m.API, m.Provider, m.Model, m.StopReason, m.ErrorMessage,
		m.ToolCallID, m.ToolName, m.Command, m.Output, m.FullOutputPath, m.CustomType, m.Summary, m.FromID) {
		return false
	}
	want := m.has
	if !m.decoded {
		want |= requiredFor(m.Role)
	}
	var has uint32
	set := func(bit uint32, nonZero bool) bool {
		if nonZero || want&bit != 0 {
			has |= bit
			return true
		}
		return false
	}
	set(mRole, m.Role != "")
	set(mToolCallID, m.ToolCallID != "")
	set(mToolName, m.ToolName != "")
	set(mCommand, m.Command != "")
	set(mOutput, m.Output != "")
	if m.ExitCode != nil {
		has |= mExitCode
	}
	set(mCancelled, m.Cancelled)
	set(mTruncated, m.Truncated)
	set(mFullOutputPath, m.FullOutputPath != "")
	set(mCustomType, m.CustomType != "")
	set(mSummary, m.Summary != "")
	set(mFromID, m.FromID != "")
	set(mTokensBefore, m.TokensBefore != 0)
	if set(mContent, m.Content != nil) {
		switch {
		case m.ContentIsString():
			has |= mContentString
			m.Content = []Block{{Type: BlockText, Text: m.Content[0].Text, has: bType | bText, decoded: true}}
			if !valid && !oldValidStrings(m.Content[0].Text) {
				return false
			}
		case m.Content == nil:
			m.Content = []Block{}
		default:
			for i := range m.Content {
				if !m.Content[i].oldCanonicalize(valid) {
					return false
				}
			}
		}
	}
	set(mDisplay, m.Display)
	if set(mDetails, m.Details != nil) {
		v, err := rawValue(m.Details, "null")
		if err != nil {
			return false
		}
		m.Details = cloneRaw(v)
	}
	set(mIsError, m.IsError)
	set(mAPI, m.API != "")
	set(mProvider, m.Provider != "")
	set(mModel, m.Model != "")
	if set(mUsage, m.Usage != nil) {
		if m.Usage == nil {
			m.Usage = &Usage{}
		}
		if !m.Usage.oldCanonicalize() {
			return false
		}
	}
	set(mStopReason, m.StopReason != "")
	set(mTimestamp, m.Timestamp != 0)
	set(mErrorMessage, m.ErrorMessage != "")
	set(mExcludeFromContext, m.ExcludeFromContext)
	m.has, m.decoded, m.synthetic = has, true, false
	return true
}

func (b *Block) oldCanonicalize(valid bool) bool {
	if len(b.Extra) > 0 || !valid && !oldValidStrings(b.Type, b.Text, b.Thinking, b.ThinkingSignature, b.Data, b.MimeType, b.ID, b.Name) {
		return false
	}
	want := b.has
	if !b.decoded {
		want |= blockRequired(b.Type)
	}
	var has uint16
	set := func(bit uint16, nonZero bool) bool {
		if nonZero || want&bit != 0 {
			has |= bit
			return true
		}
		return false
	}
	set(bType, b.Type != "")
	set(bText, b.Text != "")
	set(bThinking, b.Thinking != "")
	set(bThinkingSignature, b.ThinkingSignature != "")
	set(bRedacted, b.Redacted)
	set(bID, b.ID != "")
	set(bName, b.Name != "")
	if set(bArguments, b.Arguments != nil) {
		v, err := rawValue(b.Arguments, "{}")
		if err != nil {
			return false
		}
		b.Arguments = cloneRaw(v)
	}
	set(bData, b.Data != "")
	set(bMimeType, b.MimeType != "")
	b.has, b.decoded = has, true
	return true
}

func (u *Usage) oldCanonicalize() bool {
	if len(u.Extra) > 0 {
		return false
	}
	want := u.has
	if !u.decoded {
		want = 0xFF
	}
	var has uint8
	for _, f := range []struct {
		bit     uint8
		nonZero bool
	}{
		{uInput, u.Input != 0}, {uOutput, u.Output != 0}, {uCacheRead, u.CacheRead != 0},
		{uCacheWrite, u.CacheWrite != 0}, {uTotalTokens, u.TotalTokens != 0},
	} {
		if f.nonZero || want&f.bit != 0 {
			has |= f.bit
		}
	}
	if want&uCost != 0 || !u.Cost.oldIsZero() {
		has |= uCost
		c := &u.Cost
		if len(c.Extra) > 0 {
			return false
		}
		cwant := c.has
		if !c.decoded {
			cwant = 0xFF
		}
		var chas uint8
		for _, f := range []struct {
			bit uint8
			v   float64
		}{
			{cInput, c.Input}, {cOutput, c.Output}, {cCacheRead, c.CacheRead}, {cCacheWrite, c.CacheWrite}, {cTotal, c.Total},
		} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return false
			}
			if f.v != 0 || cwant&f.bit != 0 {
				chas |= f.bit
			}
		}
		c.has, c.decoded = chas, true
	} else {
		u.Cost = Cost{}
	}
	u.has, u.decoded = has, true
	return true
}

func oldValidStrings(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of m.
func (m *Message) oldClone() *Message {
	if m == nil {
		return nil
	}
	c := *m
	if m.Content != nil {
		c.Content = make([]Block, len(m.Content))
		for i := range m.Content {
			c.Content[i] = m.Content[i].oldClone()
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

func (b Block) oldClone() Block {
	b.Arguments = cloneRaw(b.Arguments)
	b.Extra = b.Extra.Clone()
	return b
}
