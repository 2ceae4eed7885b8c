//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalSize returns the height and width of the terminal f is, if
// it is one.
func terminalSize(f *os.File) (rows, cols int, ok bool) {
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	return int(ws.rows), int(ws.cols), errno == 0 && ws.rows > 0
}

// isTTY reports whether f is a terminal: one that answers the terminal
// size request (a character device such as /dev/null does not).
func isTTY(f *os.File) bool {
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	return errno == 0
}
