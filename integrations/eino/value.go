package eino

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// stored is how a checkpoint's bytes are kept as the value of StateKey:
// as JSON when they are JSON that encoding/json writes back byte for byte
// (Eino's own serializer writes JSON: the log stays readable, and a value
// takes its own size), else as base64.
type stored struct {
	JSON   json.RawMessage `json:"json,omitempty"`
	Base64 *string         `json:"base64,omitempty"`
}

// encodeValue returns what Set stores for checkpoint bytes b.
func encodeValue(b []byte) stored {
	if len(b) > 0 {
		// json.Marshal validates a RawMessage, compacts it and escapes <,
		// > and &: the bytes are kept as JSON only when that changes
		// nothing.
		if enc, err := json.Marshal(json.RawMessage(b)); err == nil && bytes.Equal(enc, b) {
			return stored{JSON: enc}
		}
	}
	s := base64.StdEncoding.EncodeToString(b)
	return stored{Base64: &s}
}

// decodeValue returns the checkpoint bytes of a value of StateKey; an
// error wrapping ErrCorruptCheckPoint for a value no Set wrote.
func decodeValue(raw json.RawMessage) ([]byte, error) {
	var v stored
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptCheckPoint, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the value", ErrCorruptCheckPoint)
	}
	switch {
	case v.JSON != nil && v.Base64 == nil:
		return []byte(v.JSON), nil
	case v.Base64 != nil && v.JSON == nil:
		b, err := base64.StdEncoding.DecodeString(*v.Base64)
		if err != nil {
			return nil, fmt.Errorf("%w: base64: %v", ErrCorruptCheckPoint, err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("%w: a value holds exactly one of \"json\" and \"base64\"", ErrCorruptCheckPoint)
	}
}
