package session

import (
	"cmp"
	"context"
)

// The model cascade: which model and thinking level a turn runs with.

// SettingSource says where a turn's setting came from.
type SettingSource string

const (
	// SettingExplicit: the host gave it for this turn.
	SettingExplicit SettingSource = "explicit"
	// SettingSession: the session saved it (the latest on the path).
	SettingSession SettingSource = "session"
	// SettingDefault: the host's default.
	SettingDefault SettingSource = "default"
	// SettingNone: none of the three had one.
	SettingNone SettingSource = ""
)

// TurnRequest is what a host knows of a turn's settings before the
// cascade: what it asks for explicitly, its defaults, and whether to
// save an explicit choice in the session. The zero value asks for what
// the session saved.
type TurnRequest struct {
	// Model is the model asked for this turn (a user's /model, a flag),
	// nil for none; ThinkingLevel likewise ("" for none).
	Model         *ModelRef
	ThinkingLevel string
	// Role is the model role the turn needs (oh-my-pi's "smol", "slow",
	// ...), "" or "default" for the conversation's own model.
	Role string
	// DefaultModel and DefaultThinkingLevel are the host's defaults, for a
	// session that saved none.
	DefaultModel         *ModelRef
	DefaultThinkingLevel string
	// Save records an explicit model or thinking level that differs from
	// the session's (a model_change or thinking_level_change entry), so
	// that the next turn, and the session reopened, run with it.
	Save bool
}

// TurnSettings is the result of the cascade: each setting and where it
// came from.
type TurnSettings struct {
	// Model is nil when neither the turn, the session nor the defaults
	// name one.
	Model          *ModelRef
	ModelSource    SettingSource
	ThinkingLevel  string
	ThinkingSource SettingSource
	// Saved holds the entries Save appended (none when nothing changed).
	Saved []Entry
}

// TurnSettings resolves the model and the thinking level of a turn, as
// the Opal agent does: the explicit one, else the one the session saved
// (the latest model change of the role on the path to the leaf, as
// oh-my-pi reads its model roles; for the default role with no model
// change on the path, the model of the latest assistant message, as pi
// resumes; the latest thinking level change), else the host's default.
// A reply made with another role's model does not change the default
// role's (Context.Model, pi's rule, follows the latest reply instead). With req.Save, an explicit setting that differs from the
// session's is appended first (its error is returned, and no settings).
// A nil req is the zero TurnRequest.
func (s *Session) TurnSettings(ctx context.Context, req *TurnRequest) (TurnSettings, error) {
	if err := s.makeWhole(ctx); err != nil {
		return TurnSettings{}, err
	}
	var r TurnRequest
	if req != nil {
		r = *req
	}
	if r.Role == "default" {
		r.Role = ""
	}
	if err := s.lock(ctx); err != nil {
		return TurnSettings{}, err
	}
	pc := s.leafCtx()
	var saved *ModelRef
	role := cmp.Or(r.Role, "default")
	if m, ok := pc.models[role]; ok {
		saved = &m
	} else if r.Role == "" && pc.hasModel {
		m := pc.model // no model change: the model the replies name, as pi resumes
		saved = &m
	}
	savedLevel, hasLevel := pc.thinking, pc.thought
	s.mu.Unlock()

	var out TurnSettings
	switch {
	case r.Model != nil:
		m := *r.Model
		out.Model, out.ModelSource = &m, SettingExplicit
	case saved != nil:
		out.Model, out.ModelSource = saved, SettingSession
	case r.DefaultModel != nil:
		m := *r.DefaultModel
		out.Model, out.ModelSource = &m, SettingDefault
	}
	switch {
	case r.ThinkingLevel != "":
		out.ThinkingLevel, out.ThinkingSource = r.ThinkingLevel, SettingExplicit
	case hasLevel:
		out.ThinkingLevel, out.ThinkingSource = savedLevel, SettingSession
	case r.DefaultThinkingLevel != "":
		out.ThinkingLevel, out.ThinkingSource = r.DefaultThinkingLevel, SettingDefault
	}
	if !r.Save {
		return out, nil
	}
	if out.ModelSource == SettingExplicit && (saved == nil || *saved != *out.Model) {
		var role []string
		if r.Role != "" {
			role = []string{r.Role}
		}
		e, err := s.AppendModelChange(ctx, out.Model.Provider, out.Model.ModelID, role...)
		if err != nil {
			return TurnSettings{}, err
		}
		out.Saved = append(out.Saved, e)
	}
	if out.ThinkingSource == SettingExplicit && (!hasLevel || savedLevel != out.ThinkingLevel) {
		e, err := s.AppendThinkingLevel(ctx, out.ThinkingLevel)
		if err != nil {
			return TurnSettings{}, err
		}
		out.Saved = append(out.Saved, e)
	}
	return out, nil
}
