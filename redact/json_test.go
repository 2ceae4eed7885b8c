package redact_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsession/session/redact"
)

func TestJSONInPlace(t *testing.T) {
	r := testRedactor()
	in := "{ \"z\":1.50e+2 ,\"a\" : [true,null, \"caf\\u00e9\"],\n\t\"cmd\":\"export GITHUB_TOKEN=ghp_7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsIlv\\nls\", \"n\": -0 }"
	want := "{ \"z\":1.50e+2 ,\"a\" : [true,null, \"caf\\u00e9\"],\n\t\"cmd\":\"export GITHUB_TOKEN=[REDACTED:github-pat]\\nls\", \"n\": -0 }"
	out, rep, err := r.JSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if rep.Counts["github-pat"] != 1 || rep.Total() != 1 {
		t.Fatalf("report %v", rep.Counts)
	}
}

func TestJSONUnchangedIsInput(t *testing.T) {
	r := testRedactor()
	in := []byte(`{"type":"message","id":"a1b2c3d4","message":{"role":"user","content":[{"type":"text","text":"hello \"world\"\n"}],"timestamp":1765234554205}}`)
	out, rep, err := r.JSON(in)
	if err != nil || rep.Total() != 0 {
		t.Fatal(err, rep.Counts)
	}
	if &out[0] != &in[0] || len(out) != len(in) {
		t.Fatal("unchanged JSON was copied")
	}
}

func TestJSONEscapes(t *testing.T) {
	r := testRedactor()
	cases := []struct{ name, in, want, rule string }{
		{"escaped operator", `["password\u003dhunter22"]`, `["password=[REDACTED:password]"]`, "password"},
		{"escaped prefix", `["sk\u002dant-api03-1MULwJodFX1GOZrhrztAQpiN0k8s0Rc3VgTg9VaZEoBFUh"]`, `["[REDACTED:anthropic-key]"]`, "anthropic-key"},
		{"escaped slashes", `{"cwd":"\/home\/alice\/src"}`, `{"cwd":"~/src"}`, "home-path"},
		{"quotes around value", `["{\"password\": \"hunter22\"}"]`, `["{\"password\": \"[REDACTED:password]\"}"]`, "password"},
		{"newlines kept", "[\"a\\nDB_PASSWORD=s3cr3t!\\n\\tb\\u2028\"]", "[\"a\\nDB_PASSWORD=[REDACTED:password]\\n\\tb\u2028\"]", "password"},
		{"backslash before quote", `["C:\\Users\\bob\\x \" token: 9f8e7d6c5b4a"]`, `["~\\x \" token: [REDACTED:token]"]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, rep, err := r.JSON([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("got  %s\nwant %s", out, c.want)
			}
			if c.rule != "" && rep.Counts[c.rule] != 1 {
				t.Errorf("report %v", rep.Counts)
			}
			if !json.Valid(out) {
				t.Errorf("invalid output %s", out)
			}
		})
	}
}

func TestJSONKeys(t *testing.T) {
	r := testRedactor()
	cases := []struct{ in, want string }{
		// Keys are never changed, even when they look like secrets.
		{`{"sk-ant-api03-1MULwJodFX1GOZrhrztAQpiN0k8s0Rc3VgTg9VaZEoBFUh":1}`, ""},
		// A member whose key names a secret has its value replaced.
		{`{"user":"bob","password":"hunter2"}`, `{"user":"bob","password":"[REDACTED:password]"}`},
		{`{"apiKey": "a8f5f167f44f"}`, `{"apiKey": "[REDACTED:api-key]"}`},
		{`{"GITHUB_TOKEN":"v1.4f3c2b1a9e8d"}`, `{"GITHUB_TOKEN":"[REDACTED:token]"}`},
		{`{"client_secret":"Zx8Kq2Lm9Np4"}`, `{"client_secret":"[REDACTED:secret]"}`},
		{`{"aws_secret_access_key":"vKWetKxQuRO/D6L1Bv2N7NhQrPeaMmkUoBlVu+8O"}`, `{"aws_secret_access_key":"[REDACTED:aws-secret-key]"}`},
		{`{"pass\u0077ord":"hunter2"}`, `{"pass\u0077ord":"[REDACTED:password]"}`},
		// ... unless it is empty, a placeholder, or not a string.
		{`{"password":"","token":"<your-token>","apiKey":"${API_KEY}","secret":null,"totalTokens":4096}`, ""},
		{`{"token_type":"bearer","max_tokens":"4096","tokenizer":"cl100k_base"}`, ""},
		// An array under a secret key is not the key's value.
		{`{"password":["hunter2"]}`, ""},
	}
	for _, c := range cases {
		out, _, err := r.JSON([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == "" {
			want = c.in
		}
		if string(out) != want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.in, out, want)
		}
	}
}

func TestJSONInvalid(t *testing.T) {
	r := testRedactor()
	for _, in := range []string{``, ` `, `{"a":`, `"abc`, `{} x`, `["\x"]`, `{"a" 1}`, "[\"a\tb\"]", `[1,]`, `nul`} {
		_, _, err := r.JSON([]byte(in))
		if !errors.Is(err, redact.ErrInvalidJSON) {
			t.Errorf("%q: err %v", in, err)
		}
	}
}

func TestCustomAndHome(t *testing.T) {
	r := redact.New(&redact.Options{
		Rules: []redact.Rule{},
		Home:  []string{"/var/lib/builder/"},
		Custom: func(s string) (string, int) {
			n := strings.Count(s, "ACME-")
			return strings.ReplaceAll(s, "ACME-", "[REDACTED:acme]-"), n
		},
	})
	out, rep, err := r.JSON([]byte(`["ACME-1 /var/lib/builder/x", "/var/lib/builderx password=hunter2", 7]`))
	if err != nil {
		t.Fatal(err)
	}
	want := `["[REDACTED:acme]-1 ~/x", "/var/lib/builderx password=hunter2", 7]`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if rep.Counts["custom"] != 1 || rep.Counts["home-path"] != 1 || rep.Total() != 2 {
		t.Fatalf("report %v", rep.Counts)
	}
}

func TestHostRule(t *testing.T) {
	rules := append(redact.DefaultRules(), redact.Rule{
		Name:     "employee-id",
		Keywords: []string{"emp-"},
		Pattern:  regexpMust(`\bemp-(?P<secret>[0-9]{6})\b`),
	})
	r := redact.New(&redact.Options{Rules: rules, Home: []string{}})
	out, rep := r.String("ticket by emp-123456, not emp-12")
	if out != "ticket by emp-[REDACTED:employee-id], not emp-12" || rep.Counts["employee-id"] != 1 {
		t.Fatalf("%q %v", out, rep.Counts)
	}
}

func TestReportAdd(t *testing.T) {
	var r redact.Report
	r.Add(redact.Report{Counts: map[string]int{"jwt": 2}})
	r.Add(redact.Report{Counts: map[string]int{"jwt": 1, "password": 4}})
	r.Add(redact.Report{})
	if r.Total() != 7 || r.Counts["jwt"] != 3 {
		t.Fatal(r.Counts)
	}
	b, _ := json.Marshal(r)
	if string(b) != `{"counts":{"jwt":3,"password":4}}` {
		t.Fatal(string(b))
	}
}

func regexpMust(p string) *regexp.Regexp { return regexp.MustCompile(p) }

// Member judges a value by its key as JSON does, for callers that walk
// JSON themselves.
func TestMember(t *testing.T) {
	r := redact.New(&redact.Options{Home: []string{}})
	for _, tc := range []struct {
		key, value string
		redacted   bool
	}{
		{"password", "hunter2secretpw", true},
		{"apiKey", "abcd1234efgh5678ijkl", true},
		{"GITHUB_TOKEN", "abcd1234efgh5678ijkl", true},
		{"password", "<your-password>", false}, // a placeholder
		{"max_tokens", "4096", false},
		{"user", "ops", false},
		{"", "hunter2secretpw", false}, // no key, no rule
		{"note", "sk-ant-api03-" + strings.Repeat("aB3_x-Z9", 10), true},
	} {
		out, rep := r.Member(tc.key, tc.value)
		if got := out != tc.value; got != tc.redacted || (rep.Total() > 0) != tc.redacted {
			t.Errorf("Member(%q, %q) = %q, %v", tc.key, tc.value, out, rep.Counts)
		}
		if tc.redacted && strings.Contains(out, tc.value) {
			t.Errorf("Member(%q, %q) kept the secret: %q", tc.key, tc.value, out)
		}
	}
}
