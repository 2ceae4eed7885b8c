package redact

import "strings"

// Home directories: /home/<user>, /Users/<user> and C:\Users\<user>
// (also with doubled backslashes, as in escaped strings, or slashes)
// become "~", and so do the directories of Options.Home.

// isPathChar reports the characters of a path's component.
func isPathChar(c byte) bool { return isWord(c) || c == '.' || c == '-' || c == '~' }

// userEnd returns the end of the user name that starts at i, or i.
func userEnd(s string, i int) int {
	e := i
	for e < len(s) && e-i < 128 && (isWord(s[e]) || s[e] == '.' || s[e] == '-') {
		e++
	}
	if u := s[i:e]; u == "." || u == ".." {
		return i
	}
	return e
}

// findHomes finds the home directories of any user.
func findHomes(s string, add func(start, end int)) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/':
			var root int
			switch {
			case strings.HasPrefix(s[i+1:], "home/"):
				root = i + len("/home/")
			case strings.HasPrefix(s[i+1:], "Users/"):
				root = i + len("/Users/")
			default:
				continue
			}
			if i > 0 && isPathChar(s[i-1]) {
				continue
			}
			if e := userEnd(s, root); e > root {
				add(i, e)
				i = e - 1
			}
		case ':':
			if e := windowsHome(s, i); e > 0 {
				add(i-1, e)
				i = e - 1
			}
		}
	}
}

// windowsHome returns the end of the home directory whose drive's colon
// is s[i] (C:\Users\name), or 0.
func windowsHome(s string, i int) int {
	if i == 0 || !isUpper(s[i-1]) && !isLower(s[i-1]) || i > 1 && isPathChar(s[i-2]) {
		return 0
	}
	j := i + 1
	sep := 0
	for j < len(s) && (s[j] == '\\' || s[j] == '/') && sep < 2 {
		j++
		sep++
	}
	if sep == 0 || !hasFoldPrefix(s[j:], "users") {
		return 0
	}
	sepStr := s[i+1 : i+1+sep]
	j += len("users")
	if !strings.HasPrefix(s[j:], sepStr) {
		return 0
	}
	j += sep
	if e := userEnd(s, j); e > j {
		return e
	}
	return 0
}

// findDirs finds the given directories, whole path components.
func findDirs(dirs []string) finder {
	return func(s string, add func(start, end int)) {
		for _, d := range dirs {
			for start := range indices(s, d) {
				end := start + len(d)
				if start > 0 && isPathChar(s[start-1]) {
					continue
				}
				if end < len(s) && (isWord(s[end]) || s[end] == '.' || s[end] == '-') {
					continue
				}
				add(start, end)
			}
		}
	}
}
