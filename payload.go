package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/agentsession/session/internal/jsonx"
)

// Entry types and their payloads: the table of the types this package
// knows (entryTypes), the payload struct of each structural type, and
// how their members are read.
//
// pi reads an entry as a JavaScript object: a member of an unexpected
// type (a tokensBefore of 1234.5, a fromHook of "yes") does not stop the
// entry from counting. Decoding a compaction with encoding/json would fail
// on such a member and drop the whole entry from the context, and Prune,
// which follows the compactions, would then delete the history it keeps.
// So the package reads these payloads member by member: one of the wrong
// type is left at its zero value, and Verify names it.

// payload decodes the entry's members into v, a pointer to one of the
// payload structs (Compaction, Label ...), member by member. It returns
// the json names of the members it left out because their type was
// wrong; the others are set whatever happened to those.
func (e Entry) payload(v any) (bad []string) {
	rv := reflect.ValueOf(v).Elem()
	fields := fieldsOf(rv.Type())
	raw, err := jsonx.Trim(e.bytes())
	if err != nil {
		return nil
	}
	it, _ := jsonx.Object(raw)
	for it.Next() {
		k := it.Key()
		f, ok := fields[k]
		if !ok {
			continue
		}
		fv := rv.Field(f)
		val := it.Value()
		if bytes.Equal(val, []byte("null")) {
			fv.SetZero() // as encoding/json leaves a null
			continue
		}
		p := reflect.New(fv.Type())
		if err := json.Unmarshal(val, p.Interface()); err != nil {
			fv.SetZero()
			bad = append(bad, k)
			continue
		}
		fv.Set(p.Elem())
	}
	return bad
}

// payloadFields caches, per payload type, the field index of each json
// member name.
var payloadFields sync.Map // reflect.Type -> map[string]int

func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := payloadFields.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	payloadFields.Store(t, m)
	return m
}

// Entry types of the seed format.
const (
	TypeMessage             = "message"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeModelChange         = "model_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
	TypeSessionInit         = "session_init"
	TypeModeChange          = "mode_change"
	TypeTTSRInjection       = "ttsr_injection"
)

// entryKind is an entry type this package knows, as a number to switch
// on; kindUnknown for every other type.
type entryKind uint8

const (
	kindUnknown entryKind = iota
	kindMessage
	kindThinkingLevelChange
	kindModelChange
	kindCompaction
	kindBranchSummary
	kindCustom
	kindCustomMessage
	kindLabel
	kindSessionInfo
	kindSessionInit
	kindModeChange
	kindTTSRInjection
	numKinds
)

// entryTypes describes each kind: its type name, and for the structural
// kinds the payload its members are read into (nil for messages and
// custom messages, whose members make a Message, and for unknown
// types). A new entry type is a Type constant, a kind, a row here and
// its payload type below; what the context makes of it is context.go's.
var entryTypes = [numKinds]struct {
	typ     string
	payload func() any
}{
	kindUnknown:             {"", nil},
	kindMessage:             {TypeMessage, nil},
	kindThinkingLevelChange: {TypeThinkingLevelChange, func() any { return &ThinkingLevelChange{} }},
	kindModelChange:         {TypeModelChange, func() any { return &ModelChange{} }},
	kindCompaction:          {TypeCompaction, func() any { return &Compaction{} }},
	kindBranchSummary:       {TypeBranchSummary, func() any { return &BranchSummary{} }},
	kindCustom:              {TypeCustom, func() any { return &Custom{} }},
	kindCustomMessage:       {TypeCustomMessage, nil},
	kindLabel:               {TypeLabel, func() any { return &Label{} }},
	kindSessionInfo:         {TypeSessionInfo, func() any { return &SessionInfoEntry{} }},
	kindSessionInit:         {TypeSessionInit, func() any { return &SessionInit{} }},
	kindModeChange:          {TypeModeChange, func() any { return &ModeChange{} }},
	kindTTSRInjection:       {TypeTTSRInjection, func() any { return &TTSRInjection{} }},
}

// kindOf returns the kind of the entry type typ. Messages, by far the
// most common, are found first.
func kindOf(typ string) entryKind {
	for k := kindMessage; k < numKinds; k++ {
		if entryTypes[k].typ == typ {
			return k
		}
	}
	return kindUnknown
}

// payloadOf returns a new payload value for the structural kinds, nil
// for the others (messages, custom messages and unknown types).
func payloadOf(k entryKind) any {
	if p := entryTypes[k].payload; p != nil {
		return p()
	}
	return nil
}

// ThinkingLevelChange is the payload of a thinking_level_change entry.
type ThinkingLevelChange struct {
	ThinkingLevel string `json:"thinkingLevel"`
}

// ModelChange is the payload of a model_change entry. pi writes Provider
// and ModelID; oh-my-pi writes Model as "provider/modelId" with an
// optional Role ("default" when absent).
type ModelChange struct {
	Provider string `json:"provider,omitempty"`
	ModelID  string `json:"modelId,omitempty"`
	Model    string `json:"model,omitempty"`
	Role     string `json:"role,omitempty"`
}

// ref returns the model the change selects.
func (c ModelChange) ref() (ModelRef, bool) {
	if c.Provider != "" || c.ModelID != "" {
		return ModelRef{Provider: c.Provider, ModelID: c.ModelID}, true
	}
	if c.Model != "" {
		p, id, ok := strings.Cut(c.Model, "/")
		if !ok {
			return ModelRef{ModelID: c.Model}, true
		}
		return ModelRef{Provider: p, ModelID: id}, true
	}
	return ModelRef{}, false
}

// Compaction is the payload of a compaction entry: the history before
// FirstKeptEntryID is replaced in the context by Summary.
//
// pi writes the first four and FromHook; oh-my-pi adds ShortSummary,
// PreserveData and FromExtension. None of them changes the context: it
// starts with Summary whatever else the entry holds.
type Compaction struct {
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int64           `json:"tokensBefore"`
	TokensAfter      int64           `json:"tokensAfter,omitempty"`
	Details          json.RawMessage `json:"details,omitempty"`
	FromHook         bool            `json:"fromHook,omitempty"`
	// ShortSummary is a recap of a line or two, for listings and a
	// collapsed view (oh-my-pi's shortSummary).
	ShortSummary string `json:"shortSummary,omitempty"`
	// PreserveData is state an extension keeps across the compaction
	// (oh-my-pi's preserveData), any JSON.
	PreserveData json.RawMessage `json:"preserveData,omitempty"`
	// FromExtension says an extension made the compaction, not the agent
	// (oh-my-pi's name for pi's fromHook).
	FromExtension bool `json:"fromExtension,omitempty"`
}

// BranchSummary is the payload of a branch_summary entry: a summary of the
// path abandoned when the leaf moved to this entry's parent.
type BranchSummary struct {
	FromID   string          `json:"fromId"`
	Summary  string          `json:"summary"`
	Details  json.RawMessage `json:"details,omitempty"`
	FromHook bool            `json:"fromHook,omitempty"`
	// FromExtension says an extension wrote the summary (oh-my-pi's name
	// for pi's fromHook).
	FromExtension bool `json:"fromExtension,omitempty"`
}

// Custom is the payload of a custom entry: extension state that never
// reaches the model.
type Custom struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// Label is the payload of a label entry; an empty Label clears the label
// of TargetID.
type Label struct {
	TargetID string `json:"targetId"`
	Label    string `json:"label,omitempty"`
	// Metadata is the host's record of a checkpoint (see
	// CheckpointOptions), an extra member pi ignores.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// SessionInfoEntry is the payload of a session_info entry: the session's
// display name.
type SessionInfoEntry struct {
	Name string `json:"name,omitempty"`
}

// SessionInit is the payload of a session_init entry, which records how a
// subagent session was started.
type SessionInit struct {
	SystemPrompt json.RawMessage `json:"systemPrompt,omitempty"`
	Task         string          `json:"task,omitempty"`
	Tools        []string        `json:"tools,omitempty"`
	// OutputSchema is the JSON Schema the session's final answer must
	// follow (oh-my-pi's subagents with structured output), any JSON.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ModeChange is the payload of a mode_change entry ("none" leaves a mode).
type ModeChange struct {
	Mode string          `json:"mode"`
	Data json.RawMessage `json:"data,omitempty"`
}

// TTSRInjection is the payload of a ttsr_injection entry: rules injected
// into the conversation.
type TTSRInjection struct {
	InjectedRules []string `json:"injectedRules"`
}
