package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/agentsession/session/internal/jsonx"
)

// Reading the payloads of structural entries.
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

// payloadOf returns a new payload value for the structural kinds, nil
// for the others (messages, custom messages and unknown types).
func payloadOf(k entryKind) any {
	switch k {
	case kindThinkingLevelChange:
		return &ThinkingLevelChange{}
	case kindModelChange:
		return &ModelChange{}
	case kindCompaction:
		return &Compaction{}
	case kindBranchSummary:
		return &BranchSummary{}
	case kindCustom:
		return &Custom{}
	case kindLabel:
		return &Label{}
	case kindSessionInfo:
		return &SessionInfoEntry{}
	case kindSessionInit:
		return &SessionInit{}
	case kindModeChange:
		return &ModeChange{}
	case kindTTSRInjection:
		return &TTSRInjection{}
	}
	return nil
}
