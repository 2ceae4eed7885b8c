package session

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentsession/session/internal/jsonx"
)

// Field is one JSON object member that this package does not model. It is
// kept verbatim so that data written by newer agents or by extensions
// survives every read and write.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Fields is an ordered list of unknown members, in the order they were read.
type Fields []Field

// Get returns the raw value of key.
func (f Fields) Get(key string) (json.RawMessage, bool) {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i].Key == key {
			return f[i].Value, true
		}
	}
	return nil, false
}

// Set replaces the value of key, or adds it at the end. The value must be
// valid JSON; it is not copied.
func (f *Fields) Set(key string, value json.RawMessage) {
	for i := range *f {
		if (*f)[i].Key == key {
			(*f)[i].Value = value
			return
		}
	}
	*f = append(*f, Field{Key: key, Value: value})
}

// Delete removes key.
func (f *Fields) Delete(key string) {
	*f = slices.DeleteFunc(*f, func(x Field) bool { return x.Key == key })
}

// Clone returns a deep copy.
func (f Fields) Clone() Fields {
	if f == nil {
		return nil
	}
	out := make(Fields, len(f))
	for i, x := range f {
		out[i] = Field{Key: x.Key, Value: cloneRaw(x.Value)}
	}
	return out
}

func (f Fields) equal(g Fields) bool {
	return slices.EqualFunc(f, g, func(a, b Field) bool {
		return a.Key == b.Key && string(a.Value) == string(b.Value)
	})
}

// appendTo writes the fields as object members. skip reports keys already
// written from typed fields, which take precedence.
func (f Fields) appendTo(dst []byte, first bool, skip func(string) bool) ([]byte, bool, error) {
	for _, x := range f {
		if skip != nil && skip(x.Key) {
			continue
		}
		v, err := rawValue(x.Value, "")
		if err != nil {
			return dst, first, fmt.Errorf("field %q: %w", x.Key, err)
		}
		dst, first = member(dst, first, x.Key), false
		dst = append(dst, v...)
	}
	return dst, first, nil
}

// member writes the separator and key of the next member; the key is
// escaped.
func member(dst []byte, first bool, key string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = jsonx.AppendString(dst, key)
	return append(dst, ':')
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// rawValue validates a caller-supplied raw JSON value; an empty value
// stands for def, or is an error when def is empty.
func rawValue(v json.RawMessage, def string) ([]byte, error) {
	if len(v) == 0 {
		if def == "" {
			return nil, errEmptyRaw
		}
		return []byte(def), nil
	}
	return jsonx.Trim(v)
}
