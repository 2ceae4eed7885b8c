//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package main

import "os"

// terminalSize is not known here (Windows and the rest): the pager's
// threshold comes from $LINES, else 24 rows, and ls's width from
// $COLUMNS.
func terminalSize(f *os.File) (rows, cols int, ok bool) { return 0, 0, false }

// isTTY takes a character device for a terminal here (the console on
// Windows).
func isTTY(f *os.File) bool { return true }
