package redact_test

import (
	"encoding/base64"
	"testing"
)

// leaks are the shapes issue 38 found reaching disk or an export in
// clear, each with the secret (or a part only the secret has) that must
// not be left. The secrets are made up.
var leaks = []struct{ name, in, secret string }{
	// Passwords given as arguments.
	{"mysql -p attached", "mysql -pS3cr3tPw1 -h db prod", "S3cr3tPw1"},
	{"mysql -p quoted", "mysql -u root -p'S3cr3t Pw2' prod", "S3cr3t Pw2"},
	{"mysqldump --password X", "mysqldump --password Kx9vLq2wZ prod > dump.sql", "Kx9vLq2wZ"},
	{"--password=X", "psql --password=Zt8uW1qs postgres", "Zt8uW1qs"},
	{"docker login -p", "docker login -u bob -p Dk8sP4ss9 registry.example.com", "Dk8sP4ss9"},
	{"docker login --password", "docker login --password Dk8sP4ss8 --username bob ghcr.io", "Dk8sP4ss8"},
	{"curl -u", "curl -u alice:Cu9rlPw7 https://api.example.com/v1/me", "Cu9rlPw7"},
	{"curl --user quoted", "curl --user 'alice:Cu9rl Pw8' https://api.example.com", "Cu9rl Pw8"},
	{"sshpass -p", "sshpass -p 'Ss7hPass' ssh root@10.0.0.5", "Ss7hPass"},
	{"sshpass -p attached", "sshpass -pSs7hPas2 ssh root@host", "Ss7hPas2"},
	{"PGPASSWORD env", "PGPASSWORD=Pg5ecret9 psql -h db -U app prod", "Pg5ecret9"},
	{"redis-cli -a", "redis-cli -h cache -a R3disPw77 ping", "R3disPw77"},
	{"mongosh -p", "mongosh --host db -u admin -p M0ngoPw42 --authenticationDatabase admin", "M0ngoPw42"},
	{"ldapsearch -w", "ldapsearch -x -D cn=admin,dc=example,dc=org -w Ld4pPw99 -b dc=example,dc=org", "Ld4pPw99"},
	{"zip -P", "zip -P Z1pPass55 out.zip report.csv", "Z1pPass55"},
	{"7z -p", "7z a -pS3venZip9 backup.7z data/", "S3venZip9"},
	{"openssl -pass pass:", "openssl enc -aes-256-cbc -pass pass:0penSslPw -in a -out b", "0penSslPw"},
	{"keytool -storepass", "keytool -importkeystore -srcstorepass K3yst0re1 -deststorepass K3yst0r2x", "K3yst0re1"},
	{"keytool -deststorepass", "keytool -importkeystore -srcstorepass K3yst0re1 -deststorepass K3yst0r2x", "K3yst0r2x"},
	{"smbclient -U user%pass", "smbclient //srv/share -U bob%Smb9Pass", "Smb9Pass"},
	{"sqlcmd -P", "sqlcmd -S srv -U sa -P 'Sq1Pass!9' -Q 'select 1'", "Sq1Pass!9"},
	{"mosquitto -P", "mosquitto_pub -h broker -u u -P Mq7tPass -t t -m m", "Mq7tPass"},
	{"htpasswd -b", "htpasswd -b .htpasswd bob Ht9Passwd", "Ht9Passwd"},
	{"xfreerdp /p:", "xfreerdp /u:bob /p:Rdp9Pass /v:host", "Rdp9Pass"},
	{"az login -p", "az login -u bob@example.com -p Az9Passw0rd", "Az9Passw0rd"},
	{"--token X", "vercel deploy --token Vc9TokenAbc123 --prod", "Vc9TokenAbc123"},
	{"--api-key X", "mytool --api-key Ak9f3e2d1c0b --verbose", "Ak9f3e2d1c0b"},
	{"--client-secret quoted", `gcloud x --client-secret "Cs9Secret-42" y`, "Cs9Secret-42"},
	{"-password X", "influx -username admin -password Inf9Pass -execute 'show databases'", "Inf9Pass"},
	{"mysql -p short", "mysql -pX prod", "-pX"},
	{"mysql -p word", "mysql -u root -psecret prod", "secret"},
	{"--password word", "mytool --password hunter2 --verbose", "hunter2"},
	{"wget --http-password", "wget --http-user=bob --http-password=Wg3tPass1 http://x/f", "Wg3tPass1"},
	// Credential files an agent prints.
	{"netrc one line", "$ cat ~/.netrc\nmachine api.example.com login bob password N3trcPw9\n", "N3trcPw9"},
	{"netrc lines", "machine github.com\n  login bob\n  password N3trcPw8\nmachine x.org login a password N3trcPw7", "N3trcPw8"},
	{"netrc default", "default login anonymous password N3trcPw6", "N3trcPw6"},
	{"docker config auth", `{"auths": {"https://index.docker.io/v1/": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("bob:D0ckerPw9")) + `"}}}`, base64.StdEncoding.EncodeToString([]byte("bob:D0ckerPw9"))},
	{"pgpass", "db.example.com:5432:prod:app:Pgp4ss99\nlocalhost:*:*:postgres:Pgp4ss98", "Pgp4ss99"},
	{"pgpass wildcard", "localhost:*:*:postgres:Pgp4ss98", "Pgp4ss98"},
	{"aws credentials", "[default]\naws_access_key_id = AKIAQZA4RKNNGCWHCMWU\naws_secret_access_key = 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\naws_session_token = IQoJb3JpZ2luX2VjEHYaCXVzLWVhc3QtMSJHMEUCIQD6m", "IQoJb3JpZ2luX2VjEHYa"},
	{"npmrc authToken", "//npm.pkg.github.com/:_authToken=3f8a9c2e-7b1d-4e5f-9a8b-0c1d2e3f4a5b", "3f8a9c2e-7b1d-4e5f"},
	{"npmrc _auth", "_auth=" + base64.StdEncoding.EncodeToString([]byte("bob:NpmPw9x")), base64.StdEncoding.EncodeToString([]byte("bob:NpmPw9x"))},
	{"npmrc _password", "//registry.example.com/:_password=TnBtUHc5eA==", "TnBtUHc5eA=="},
	{"git-credentials", "https://bob:G1tCredPw9@github.com\nhttps://x:y@gitlab.com", "G1tCredPw9"},
	// Authorization of other schemes.
	{"authorization token", "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "9944b09199c62bcf9418"},
	{"authorization token json", `{"headers": {"Authorization": "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"}}`, "9944b09199c62bcf9418"},
	{"authorization bot", "Authorization: Bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs", "ZnCjm1XVW7vRze4b7Cq4se7kKWs"},
	{"authorization ssws", "-H 'Authorization: SSWS 00QCjAl4MlV-WPXM8zQ0pK6cT2yLx9aB1dE3fG5hJ7'", "00QCjAl4MlV-WPXM8zQ0"},
	{"authorization digest", `Authorization: Digest username="bob", realm="x", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", response="6629fae49393a05397450978507c4ef1"`, "6629fae49393a05397450978507c4ef1"},
	{"authorization aws4", "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7", "5d672d79c15b13162d92"},
	{"authorization call", `req.headers.set("Authorization", "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4a")`, "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4a"},
	{"proxy authorization", "Proxy-Authorization: Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXagMDAuBgkqhkiC9xIBAgI", "YIIBhgYGKwYBBQUCoIIB"},
	// Session cookies.
	{"curl -b", `curl -b "sid=s%3A8f2k3j4h5g6f7d8s9a0.abcDEF123" https://app.example.com/api`, "8f2k3j4h5g6f7d8s9a0"},
	{"curl --cookie", "curl --cookie 'sessionid=3k4j5h6g7f8d9s0a1q2w3e4r; theme=dark' https://x", "3k4j5h6g7f8d9s0a1q2w3e4r"},
	{"cookie header", "Cookie: _gh_sess=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA%3D%3D; logged_in=yes", "Zm9vYmFyYmF6cXV4MTIz"},
	{"set-cookie", "Set-Cookie: JSESSIONID=8A3F5C2D9E1B4A7C6D0E2F3A4B5C6D7E; Path=/; HttpOnly", "8A3F5C2D9E1B4A7C6D0E"},
	{"cookie php", "Cookie: PHPSESSID=9s8d7f6g5h4j3k2l1q0w9e8r7t", "9s8d7f6g5h4j3k2l1q0w"},
	{"cookie json", `{"Cookie": "connect.sid=s%3AxQ7mZ2pLr9vN.Kd8fJ3hG5; lang=en"}`, "xQ7mZ2pLr9vN"},
	// Hex secrets under names no rule knows.
	{"session key hex", "SESSION_KEY=8f14e45fceea167a5a36dedd4bea2543", "8f14e45fceea167a5a36"},
	{"signing hex json", `{"cookie_signing": "c4ca4238a0b923820dcc509a6f75849bc81e728d9d4c2f636f067f89cc14862c"}`, "c4ca4238a0b923820dcc"},
	// Formats.
	{"vault service token", "export VAULT_TOKEN=hvs.CAESIJlWh8Sq0bGfVnZ4kLmQ2xR7yT9uWeP3oA6sD1fG5hJ8Gh4KHGh2cy5aT2lmWnR3bFlCUm5aS0hSQ3lKc1dCWmw", "CAESIJlWh8Sq0bGfVnZ4"},
	{"vault short token", "vault login hvs.6j4cuewowBGit65rheNoceI7", "6j4cuewowBGit65rheNoceI7"},
	{"vault legacy token", "VAULT_TOKEN=s.Xq7vN2pLk9RtY4wZbC6mF1sH", "Xq7vN2pLk9RtY4wZbC6mF1sH"},
	{"google oauth client secret", `"client_secret_x": "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"`, "1r0aNcG8gddWyEgR6RWaAiJKr2SW"},
	{"azure sas", "https://acct.blob.core.windows.net/c/f.txt?sv=2021-06-08&ss=b&srt=o&sp=r&se=2025-01-01T00:00:00Z&spr=https&sig=Qm%2FZx3Lp9vNk2R7tY4wB6cD8eF0gH1jK3mN5pQ7s%3D", "Qm%2FZx3Lp9vNk2R7tY4wB"},
	{"discord webhook", "https://discord.com/api/webhooks/1234567890123456789/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"telegram bot url", "curl https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"},
	{"telegram bot token", "BOT=7012345678:AAFq2Z9xLp4vNk7R3tY8wB1cD6eF0gH5jK2", "AAFq2Z9xLp4vNk7R3tY8wB1cD6eF0gH5jK2"},
	// A text file attached as a data URI.
	{"data uri text", "see data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("DB_PASSWORD=Dat4Ur1Pw\n")), base64.StdEncoding.EncodeToString([]byte("DB_PASSWORD=Dat4Ur1Pw\n"))},
}

// leakLookAlikes must stay as they are.
var leakLookAlikes = []string{
	"docker run -p 8080:80 nginx",
	"ssh -p 2222 bob@host",
	"mysql -p prod",
	"git log -p --stat",
	"git checkout -b feature/login",
	"grep -P '\\d+' file",
	"pip install -U requests",
	`curl -u "$USER:$PASS" https://x`,
	"curl -b cookies.txt https://x",
	"Cookie: theme=dark; lang=en",
	"Authorization: the header carries the token",
	"echo $TOKEN | docker login --password-stdin -u bob ghcr.io",
	"gh secret set --token-file ./token.txt",
	"use the --password option to set it",
	"mysql -u root -p$MYSQL_PWD prod",
	"mytool --password \"$(cat /run/secrets/db)\"",
	"mytool --password <PASSWORD>",
	"mkdir -p build && cp -p a b",
	"GIT_COMMIT=3f786850e387550fdab836ed7e6dc881de23001b",
	`"sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`,
	`"request_id": "8f14e45fceea167a5a36dedd4bea2543"`,
	"10:30:45:foo:bar",
	"machine learning models need a password manager",
	"Set-Cookie: theme=dark; Path=/",
	"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
}

func TestIssueLeaks(t *testing.T) {
	r := testRedactor()
	for _, c := range leaks {
		t.Run(c.name, func(t *testing.T) { noSecret(t, r, c.in, c.secret) })
	}
	for _, in := range leakLookAlikes {
		if out, rep := r.String(in); out != in {
			t.Errorf("%q changed to %q (%v)", in, out, rep.Counts)
		}
	}
}
