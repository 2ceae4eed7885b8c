package search

import (
	"bytes"
	"compress/flate"
	"database/sql/driver"
	"fmt"
	"io"
	"sync"

	"modernc.org/sqlite"
)

// The text of the entries is kept deflated in docs, and the FTS5 table
// reads it through the view text_content (an external content table):
// the index is then about a third of the size it has when FTS5 keeps its
// own copy of the text. inflateFunc is the SQL function that inflates
// it (the view calls indexedFunc, which segments it too: segment.go);
// both are registered with the driver for every connection, under names
// no one else uses.
const inflateFunc = "agentsession_search_inflate"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(inflateFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case []byte:
			return inflate(v)
		}
		return nil, fmt.Errorf("%s: %T is not a blob", inflateFunc, args[0])
	})
}

var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// deflate compresses s; nil for "", which is stored as NULL.
func deflate(s string) []byte {
	if s == "" {
		return nil
	}
	var b bytes.Buffer
	w := deflaters.Get().(*flate.Writer)
	w.Reset(&b)
	io.WriteString(w, s)
	w.Close()
	deflaters.Put(w)
	return b.Bytes()
}

func inflate(p []byte) (string, error) {
	r := flate.NewReader(bytes.NewReader(p))
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", inflateFunc, err)
	}
	return string(b), nil
}
