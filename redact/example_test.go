package redact_test

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/agentsession/session/redact"
)

func ExampleRedactor_String() {
	r := redact.New(&redact.Options{Home: []string{"/home/alice"}})
	out, rep := r.String("cd /home/alice/app && DB_PASSWORD=s3cr3t! ./run --token ghp_7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsIlv")
	fmt.Println(out)
	fmt.Println(rep.Counts)
	// Output:
	// cd ~/app && DB_PASSWORD=[REDACTED:password] ./run --token [REDACTED:github-pat]
	// map[github-pat:1 home-path:1 password:1]
}

func ExampleRedactor_JSON() {
	r := redact.New(&redact.Options{Home: []string{}})
	entry := `{"type":"message","id":"a1b2c3d4","message":{"role":"toolResult","content":[{"type":"text","text":"DATABASE_URL=postgres://app:Vq8mZ2pLr@db:5432/prod\n"}],"timestamp":1765234554205}}`
	out, rep, err := r.JSON([]byte(entry))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	fmt.Println(rep.Total(), "redacted")
	// Output:
	// {"type":"message","id":"a1b2c3d4","message":{"role":"toolResult","content":[{"type":"text","text":"DATABASE_URL=postgres://app:[REDACTED:url-password]@db:5432/prod\n"}],"timestamp":1765234554205}}
	// 1 redacted
}

// A host adds its own redactor; its replacements are counted as "custom".
func ExampleOptions_custom() {
	r := redact.New(&redact.Options{
		Home: []string{},
		Custom: func(s string) (string, int) {
			return strings.ReplaceAll(s, "Project Falcon", "[project]"), strings.Count(s, "Project Falcon")
		},
	})
	out, rep := r.String("Project Falcon ships with api_key: 4f3c2b1a9e8d7c6b")
	fmt.Println(out, rep.Counts)
	// Output:
	// [project] ships with api_key: [REDACTED:api-key] map[api-key:1 custom:1]
}

// Passwords given on a command line, and a text attached as base64.
func ExampleRedactor_String_commandLine() {
	r := redact.New(&redact.Options{Home: []string{}})
	out, _ := r.String("mysql -u root -p'hunter2!' prod && docker login -u bob -p s3cr3tPw ghcr.io")
	fmt.Println(out)
	// Output:
	// mysql -u root -p'[REDACTED:cli-password]' prod && docker login -u bob -p [REDACTED:cli-password] ghcr.io
}

func ExampleRedactor_Base64Text() {
	r := redact.New(&redact.Options{Home: []string{}})
	doc := base64.StdEncoding.EncodeToString([]byte("DB_PASSWORD=Xq81-hunter2\n"))
	out, rep := r.Base64Text(doc, "text/plain")
	text, _ := base64.StdEncoding.DecodeString(out)
	fmt.Printf("%q %v\n", text, rep.Counts)
	// Output:
	// "DB_PASSWORD=[REDACTED:password]\n" map[password:1]
}

func ExampleGitleaksVersion() {
	fmt.Println("default rules from gitleaks", redact.GitleaksVersion())
	// Output:
	// default rules from gitleaks v8.30.1
}
