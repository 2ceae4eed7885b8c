package wire

import (
	"bytes"
	"encoding/json"

	"github.com/agentsession/session/internal/jsonx"
)

// Object reports whether args is a JSON object, the only tool arguments
// the APIs take.
func Object(args json.RawMessage) bool {
	t := bytes.TrimLeft(args, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && jsonx.Valid(t)
}

// Marshal is json.Marshal without HTML escaping, for MarshalJSON methods:
// an encoder that escapes (json.Marshal does by default) still escapes
// what this returns, and one that was told not to gets '<' and '>' as
// they are.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
