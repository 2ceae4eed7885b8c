package opencodedb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// member is one member of a JSON object, in its place.
type member struct {
	key string
	val json.RawMessage
}

// errNotObject is the error of a record whose data is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// members reads the members of the JSON object b in their order.
func members(b []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, errNotObject
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNotObject, err)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", errNotObject, err)
		}
		out = append(out, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more after it", errNotObject)
	}
	return out, nil
}

// assign is {...data, k1: v1, k2: v2}, as JavaScript builds it: a member
// of data keeps its place and takes the new value; the others follow,
// in their order. OpenCode rebuilds its messages and parts from their
// rows so.
func assign(data []byte, kv ...string) ([]byte, error) {
	ms, err := members(data)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v, _ := json.Marshal(kv[i+1])
		found := false
		for j := range ms {
			if ms[j].key == kv[i] {
				ms[j].val, found = v, true
			}
		}
		if !found {
			ms = append(ms, member{kv[i], v})
		}
	}
	return object(ms), nil
}

// object writes the members as a JSON object.
func object(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// str is s as a JSON string.
func str(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
