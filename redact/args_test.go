package redact_test

import (
	"slices"
	"strings"
	"testing"
)

// TestArgs: credentials passed as separate strings of an exec-style
// argument list are found as on a command line.
func TestArgs(t *testing.T) {
	r := testRedactor()
	for _, c := range []struct {
		argv   []string
		secret string
	}{
		{[]string{"docker", "login", "-u", "bob", "-p", "Ar9D0ckerPw", "ghcr.io"}, "Ar9D0ckerPw"},
		{[]string{"mysql", "-u", "root", "-pAr9MysqlPw", "prod"}, "Ar9MysqlPw"},
		{[]string{"/usr/bin/sshpass", "-p", "Ar9 Ssh'Pw", "ssh", "host"}, "Ar9 Ssh'Pw"},
		{[]string{"curl", "-u", "alice:Ar9CurlPw", "https://x"}, "Ar9CurlPw"},
		{[]string{"mytool", "--password", "Ar9FlagPw", "--verbose"}, "Ar9FlagPw"},
		{[]string{"openssl", "enc", "-pass", "pass:Ar9OsslPw"}, "Ar9OsslPw"},
	} {
		out, rep := r.Args(c.argv)
		if slices.ContainsFunc(out, func(a string) bool { return strings.Contains(a, c.secret) }) || rep.Total() == 0 {
			t.Errorf("%q -> %q (%v)", c.argv, out, rep.Counts)
		}
		if len(out) != len(c.argv) {
			t.Errorf("%q: %d arguments out", c.argv, len(out))
		}
	}
	for _, argv := range [][]string{
		{"docker", "run", "-p", "8080:80", "nginx"},
		{"git", "checkout", "-b", "feature"},
		{"ls", "-la"},
		{"mysql", "-p", "prod"},
	} {
		if out, rep := r.Args(argv); !slices.Equal(out, argv) || rep.Total() != 0 {
			t.Errorf("%q -> %q", argv, out)
		}
	}
}
