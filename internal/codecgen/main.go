// Command codecgen writes message_codec.go, the JSON codec of Message,
// Block, Usage (with CacheTTL and ServerToolUse) and Cost, from the
// tables in tables.go. It is run by go generate in the module's root:
//
//	go generate .
//
// The code it writes reads, writes, compares with zero, clones and makes
// canonical each member the tables list; the rules the tables do not say
// (which members a role always has, a content that is a JSON string, the
// range of exitCode) are written by hand in message_json.go and message.go.
//
// It imports the standard library only, and nothing imports it.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "message_codec.go", "the file to write")
	flag.Parse()
	src, err := generate(tables)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codecgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "codecgen:", err)
		os.Exit(1)
	}
}
