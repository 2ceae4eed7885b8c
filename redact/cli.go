package redact

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Credentials given as arguments on a command line, which no rule of a
// token's shape finds: "mysql -pX", "docker login -p X", "curl -u
// user:X", "sshpass -p X", "openssl ... -pass pass:X", "--password X".

// argKind says how a flag carries its credential.
type argKind uint8

const (
	argAttached  argKind = iota // the rest of the flag's word: mysql -pX
	argEither                   // attached, or the next word: sshpass -p X
	argNext                     // the next word only: keytool -storepass X
	argUserPass                 // user:password, the next word or attached: curl -u
	argUserPct                  // user%password: smbclient -U
	argUserComma                // user,password: lftp -u
	argPassSpec                 // pass:X (env:, file:, fd: and stdin are no secrets): openssl -passin
	argSlash                    // /p:X, one word: xfreerdp
)

// cliFlag is a flag of a command that carries a credential.
type cliFlag struct {
	flag string
	kind argKind
}

// cliCommand is what is known of one command's credential flags.
type cliCommand struct {
	flags []cliFlag
	// sub, when set, is the subcommand the flags belong to ("docker
	// login -p", not "docker run -p 8080:80").
	sub string
	// positional is the credential's place among the arguments that are
	// not flags, when a flag holding the letter b says there is one
	// (htpasswd -b FILE USER PASSWORD; with n: htpasswd -nb USER
	// PASSWORD).
	positional bool
	// args gives, for a subcommand (the first word that is no flag; ""
	// for the command itself), the place of the credential among the
	// words after it that are no flags: cargo login TOKEN (1),
	// rabbitmqctl add_user USER PASSWORD (2).
	args map[string]int
	// oracle: a word of the form user/password[@connect] (or
	// userid=user/password) holds a password (sqlplus, expdp, rman).
	oracle bool
}

var (
	mysqlFlags = cliCommand{flags: []cliFlag{{"-p", argAttached}}}
	loginFlags = cliCommand{sub: "login", flags: []cliFlag{{"-p", argEither}}}
	mongoFlags = cliCommand{flags: []cliFlag{{"-p", argEither}}}
	ldapFlags  = cliCommand{flags: []cliFlag{{"-w", argEither}}}
	upperP     = cliCommand{flags: []cliFlag{{"-P", argEither}}}
	attachedP  = cliCommand{flags: []cliFlag{{"-p", argAttached}}}
	javaStore  = cliCommand{flags: []cliFlag{{"-storepass", argNext}, {"-keypass", argNext}, {"-srcstorepass", argNext},
		{"-deststorepass", argNext}, {"-srckeypass", argNext}, {"-destkeypass", argNext}, {"-new", argNext}}}
	curlFlags = cliCommand{flags: []cliFlag{{"-u", argUserPass}, {"--user", argUserPass}, {"-U", argUserPass},
		{"--proxy-user", argUserPass}, {"--oauth2-bearer", argNext}}}
	smbFlags = cliCommand{flags: []cliFlag{{"-U", argUserPct}, {"--user", argUserPct}}}
)

// cliCommands maps command names to their credential flags.
var cliCommands = map[string]*cliCommand{
	"mysql": &mysqlFlags, "mysqldump": &mysqlFlags, "mysqladmin": &mysqlFlags, "mysqlimport": &mysqlFlags,
	"mysqlshow": &mysqlFlags, "mysqlcheck": &mysqlFlags, "mysqlpump": &mysqlFlags, "mysqlsh": &mysqlFlags,
	"mariadb": &mysqlFlags, "mariadb-dump": &mysqlFlags, "mariadb-admin": &mysqlFlags, "mycli": &mysqlFlags,
	"docker": &loginFlags, "podman": &loginFlags, "nerdctl": &loginFlags, "buildah": &loginFlags,
	"skopeo": &loginFlags, "helm": &loginFlags, "oras": &loginFlags, "crane": &loginFlags, "az": &loginFlags,
	"sshpass":   {flags: []cliFlag{{"-p", argEither}}},
	"redis-cli": {flags: []cliFlag{{"-a", argEither}}},
	"mongo":     &mongoFlags, "mongosh": &mongoFlags, "mongodump": &mongoFlags, "mongorestore": &mongoFlags,
	"mongoexport": &mongoFlags, "mongoimport": &mongoFlags, "mongostat": &mongoFlags, "mongotop": &mongoFlags,
	"sqlcmd": &upperP, "bcp": &upperP, "osql": &upperP, "zip": &upperP, "unzip": &upperP, "zipcloak": &upperP,
	"mosquitto_pub": &upperP, "mosquitto_sub": &upperP, "mosquitto_rr": &upperP,
	"ldapsearch": &ldapFlags, "ldapadd": &ldapFlags, "ldapmodify": &ldapFlags, "ldapdelete": &ldapFlags,
	"ldapwhoami": &ldapFlags, "ldappasswd": &ldapFlags, "ldapcompare": &ldapFlags, "ldapmodrdn": &ldapFlags,
	"7z": &attachedP, "7za": &attachedP, "7zr": &attachedP, "rar": &attachedP, "unrar": &attachedP,
	"keytool": &javaStore, "jarsigner": &javaStore,
	"openssl": {flags: []cliFlag{{"-pass", argPassSpec}, {"-passin", argPassSpec}, {"-passout", argPassSpec},
		{"-password", argPassSpec}, {"-k", argNext}}},
	"curl": &curlFlags, "http": {flags: []cliFlag{{"-a", argUserPass}, {"--auth", argUserPass}}},
	"smbclient": &smbFlags, "rpcclient": &smbFlags, "smbmap": {flags: []cliFlag{{"-p", argNext}}},
	"lftp":     {flags: []cliFlag{{"-u", argUserComma}}},
	"xfreerdp": {flags: []cliFlag{{"/p:", argSlash}}}, "wlfreerdp": {flags: []cliFlag{{"/p:", argSlash}}},
	"rdesktop":               {flags: []cliFlag{{"-p", argEither}}},
	"htpasswd":               {positional: true},
	"influx":                 {flags: []cliFlag{{"-password", argNext}}},
	"twine":                  {flags: []cliFlag{{"-p", argEither}, {"--password", argEither}}},
	"ssh-keygen":             {flags: []cliFlag{{"-N", argEither}, {"-P", argEither}}},
	"gh":                     {sub: "secret", flags: []cliFlag{{"--body", argEither}, {"-b", argEither}}},
	"cargo":                  {args: map[string]int{"login": 1}},
	"rabbitmqctl":            {args: map[string]int{"add_user": 2, "change_password": 2, "authenticate_user": 2}},
	"net":                    {args: map[string]int{"user": 2}},
	"convertto-securestring": {args: map[string]int{"": 1}, flags: []cliFlag{{"-String", argNext}}},
	"sqlplus":                &oracleLogins, "expdp": &oracleLogins, "impdp": &oracleLogins, "exp": &oracleLogins,
	"imp": &oracleLogins, "sqlldr": &oracleLogins, "rman": &oracleLogins, "dgmgrl": &oracleLogins,
}

// oracleLogins are Oracle's tools: sqlplus scott/tiger@orcl.
var oracleLogins = cliCommand{oracle: true}

// cliKeywords are the prefilter's keywords of the command rule.
func cliKeywords() []string {
	kws := make([]string, 0, len(cliCommands))
	for name := range cliCommands {
		kws = append(kws, name)
	}
	slices.Sort(kws)
	return kws
}

// cliNames finds the command names in one pass.
var cliNames = sync.OnceValue(func() *litSet {
	ls := newLitSet(cliKeywords())
	return &ls
})

// isCommandStart reports whether a command name may start at i: at the
// start, after blanks, a separator, a quote or a path's '/'.
func isCommandStart(s string, i int) bool {
	if i == 0 {
		return true
	}
	return strings.IndexByte(" \t\n\r;|&(`'\"/$=", s[i-1]) >= 0
}

// isWordEnd reports shell metacharacters and blanks that end a word.
func isWordEnd(c byte) bool { return c <= ' ' || strings.IndexByte(";|&<>()`", c) >= 0 }

// shellWord returns the bounds of the shell word at i (past blanks; a
// backslash-newline is a blank), without its quotes when it is quoted
// whole, and where the next word may start; ok false at the end of the
// command.
func shellWord(s string, i int) (vs, ve, next int, ok bool) {
	for i < len(s) {
		if s[i] == ' ' || s[i] == '\t' || s[i] == '\r' {
			i++
		} else if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\n' {
			i += 2
		} else {
			break
		}
	}
	if i >= len(s) || isWordEnd(s[i]) {
		return 0, 0, i, false
	}
	if q := s[i]; q == '\'' || q == '"' {
		for j := i + 1; j < len(s) && j-i <= maxValue; j++ {
			if q == '"' && s[j] == '\\' {
				j++
				continue
			}
			if s[j] == q {
				return i + 1, j, j + 1, true
			}
		}
		return 0, 0, i, false
	}
	j := i
	for j < len(s) && !isWordEnd(s[j]) && j-i <= maxValue {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	j = min(j, len(s))
	return i, j, j, true
}

// unquote returns the bounds of the word s[vs:ve] without the quotes
// around it or around its end ("-p'X'": the part after the flag).
func unquoteBounds(s string, vs, ve int) (int, int) {
	if ve-vs >= 2 && (s[vs] == '\'' || s[vs] == '"') && s[ve-1] == s[vs] {
		return vs + 1, ve - 1
	}
	return vs, ve
}

// maxArgs bounds the words read after a command name.
const maxArgs = 64

// findCLI finds the credentials passed to the commands of cliCommands.
// A command's arguments are read up to the next command name that starts
// a word, and no name inside what was read starts another: each word is
// read once.
func findCLI(s string, add func(start, end int)) {
	next := 0
	cliNames().each(s, func(at, n int) {
		if at < next {
			return
		}
		cmd := commandAt(s, at, n)
		if cmd == nil {
			return
		}
		next = cliArgs(s, at+n, cmd, add)
	})
}

// commandAt returns the command whose name is s[at:at+n], when it starts
// a command there; nil if not.
func commandAt(s string, at, n int) *cliCommand {
	end := at + n
	if !isCommandStart(s, at) || end < len(s) && !isWordEnd(s[end]) {
		return nil
	}
	name := s[at:end]
	if cmd := cliCommands[name]; cmd != nil {
		return cmd
	}
	if strings.IndexByte(name, '-') > 0 {
		return cliCommands[strings.ToLower(name)] // PowerShell's cmdlets, in any case
	}
	return nil
}

// cliArgs reads the arguments of a command from i to the end of the
// command (or to the next command's name) and reports the credentials
// its flags and arguments carry. It returns where it stopped reading.
func cliArgs(s string, i int, cmd *cliCommand, add func(start, end int)) int {
	inSub := cmd.sub == ""
	var positional []int // starts and ends of the words that are not flags
	byB, byN := false, false
	want, chosen := cmd.args[""], false // the credential's place among the words after a subcommand
	for n := 0; n < maxArgs; n++ {
		vs, ve, next, ok := shellWord(s, i)
		if !ok {
			break
		}
		w := s[vs:ve]
		if n > 0 && cliCommands[w] != nil && vs > 0 && isBlank(s[vs-1]) {
			return vs // the next command's: it reads its own
		}
		i = next
		if !inSub {
			inSub = w == cmd.sub
			continue
		}
		if cmd.positional && strings.HasPrefix(w, "-") {
			byB = byB || strings.IndexByte(w, 'b') > 0
			byN = byN || strings.IndexByte(w, 'n') > 0
			continue
		}
		if cmd.positional {
			positional = append(positional, vs, ve)
			continue
		}
		if cmd.oracle && w != "" && w[0] != '-' {
			off := 0
			if len(w) > 7 && strings.EqualFold(w[:7], "userid=") {
				off = 7
			}
			if ps, pe, ok := oracleLogin(s, vs+off, ve); ok {
				credential(s, ps, pe, add)
			}
			continue
		}
		if cmd.args != nil && w != "" && w[0] != '-' && w[0] != '/' {
			if !chosen && want == 0 {
				want, chosen = cmd.args[w], true
				continue
			}
			chosen = true
			if want > 0 {
				if want--; want == 0 {
					credential(s, vs, ve, add)
				}
			}
			continue
		}
		for _, f := range cmd.flags {
			if !strings.HasPrefix(w, f.flag) {
				continue
			}
			rest := vs + len(f.flag)
			if rest < ve && strings.HasPrefix(f.flag, "--") && s[rest] == '=' {
				rest++ // --body=X
			}
			if rest < ve { // attached: -pX, -p'X'
				if f.kind == argNext {
					continue // another flag that starts alike (-passin, -password)
				}
				as, ae := unquoteBounds(s, rest, ve)
				if f.kind == argUserPass || f.kind == argUserPct || f.kind == argUserComma {
					as, ae = afterSep(s, as, ae, f.kind)
				}
				if f.kind == argPassSpec {
					continue
				}
				credential(s, as, ae, add)
				break
			}
			if f.kind == argAttached || f.kind == argSlash {
				break // "-p" alone: mysql asks for it
			}
			as, ae, nnext, ok := shellWord(s, i)
			if !ok {
				break
			}
			switch f.kind {
			case argUserPass, argUserPct, argUserComma:
				as, ae = afterSep(s, as, ae, f.kind)
			case argPassSpec:
				v := s[as:ae]
				if !strings.HasPrefix(v, "pass:") {
					as = ae // env:, file:, fd:, stdin: not the secret itself
				} else {
					as += len("pass:")
				}
			}
			if as < ae && s[as] != '-' {
				credential(s, as, ae, add)
				i = nnext
			}
			break
		}
	}
	if cmd.positional && byB {
		k := 2 // FILE USER PASSWORD
		if byN {
			k = 1 // USER PASSWORD
		}
		if len(positional) > 2*k {
			credential(s, positional[2*k], positional[2*k+1], add)
		}
	}
	return i
}

// findConfigSet finds the values tools' configuration commands set for
// keys that name a secret: npm/yarn/pnpm config set KEY VALUE, aws
// configure set KEY VALUE, git config KEY VALUE, poetry config
// http-basic.REPO USER PASSWORD and pypi-token.REPO TOKEN.
func findConfigSet(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "config", i)
		if k < 0 {
			return
		}
		i = k + len("config")
		if hasFoldPrefix(s[i:], "ure") {
			i += len("ure")
		}
		if k > 0 && !isWordEnd(s[k-1]) || i < len(s) && !isWordEnd(s[i]) {
			continue
		}
		var words [4][2]int
		n, j := 0, i
		for n < len(words) {
			vs, ve, next, ok := shellWord(s, j)
			if !ok {
				break
			}
			j = next
			w := s[vs:ve]
			if n == 0 && (strings.HasPrefix(w, "-") || w == "set") {
				continue // --global, set
			}
			words[n] = [2]int{vs, ve}
			n++
		}
		i = max(i, j)
		if n < 2 {
			continue
		}
		key := s[words[0][0]:words[0][1]]
		cred := 1
		switch fk := foldString(key); {
		case strings.HasPrefix(fk, "http-basic."):
			cred = 2 // USER PASSWORD
		case strings.HasPrefix(fk, "pypi-token."):
		case classify(key) == 0:
			continue
		}
		if cred < n {
			credential(s, words[cred][0], words[cred][1], add)
		}
	}
}

// afterSep returns the bounds of the password in user:password (or
// user%password, user,password): empty when there is none.
func afterSep(s string, vs, ve int, kind argKind) (int, int) {
	sep := byte(':')
	switch kind {
	case argUserPct:
		sep = '%'
	case argUserComma:
		sep = ','
	}
	k := strings.IndexByte(s[vs:ve], sep)
	if k < 0 {
		return ve, ve
	}
	return vs + k + 1, ve
}

// credential reports s[vs:ve] unless it is a placeholder or a variable
// ("*" asks for it).
func credential(s string, vs, ve int, add func(start, end int)) {
	if vs < ve && s[vs:ve] != "*" && !cliPlaceholder(s[vs:ve]) {
		add(vs, ve)
	}
}

// cliPlaceholder reports an argument that stands for a credential rather
// than being one: a variable ($PASS, ${PASS}, $(cat f)), <password>,
// ****, xxxx, ..., YOUR_PASSWORD, PASSWORD. A word that is a placeholder
// elsewhere ("secret", "password", "x") is a credential here: the flag
// takes nothing else.
func cliPlaceholder(v string) bool {
	if v == "" || strings.IndexByte("$<{%`", v[0]) >= 0 || strings.Contains(v, "${") || strings.Contains(v, "$(") {
		return true
	}
	fv := foldString(v)
	for _, p := range [...]string{"xxxx", "****", "...", "…", "•"} {
		if strings.Contains(fv, p) {
			return true
		}
	}
	if len(v) >= 3 && strings.Count(v, v[:1]) == len(v) {
		return true // "***", "xxx"
	}
	if strings.HasPrefix(fv, "your") || strings.HasPrefix(fv, "my_") || strings.Contains(fv, "example") {
		return true
	}
	// PASSWORD, DB_PASS: a documentation's capitals, without digits.
	caps := len(v) >= 4
	for i := 0; i < len(v) && caps; i++ {
		caps = isUpper(v[i]) || v[i] == '_' || v[i] == '-'
	}
	return caps
}

// proseWords follow a flag's name in prose, not a value: "the --password
// option", "--token is required".
var proseWords = map[string]bool{
	"option": true, "options": true, "flag": true, "flags": true, "argument": true, "arguments": true,
	"arg": true, "parameter": true, "param": true, "is": true, "are": true, "and": true, "or": true,
	"to": true, "the": true, "for": true, "with": true, "instead": true, "when": true, "if": true,
	"on": true, "in": true, "of": true, "as": true, "was": true, "will": true, "must": true, "can": true,
	"should": true, "not": true, "only": true, "then": true, "from": true, "value": true, "see": true,
}

// findFlagValues finds the values given after long flags that name a
// credential, whatever the command: "--password X", "--api-key X",
// "-password X", "--client-secret 'X'" ("--password=X" is an assignment).
func findFlagValues(s string, add func(start, end int)) {
	for at := range indices(s, "-") {
		if at > 0 && !isWordEnd(s[at-1]) && s[at-1] != '"' && s[at-1] != '\'' {
			continue
		}
		n := at + 1
		if n < len(s) && s[n] == '-' {
			n++
		}
		e := n
		for e < len(s) && e-n < 64 && (isAlnum(s[e]) || s[e] == '-' || s[e] == '_' || s[e] == '.') {
			e++
		}
		if e-n < 3 || e >= len(s) || (s[e] != ' ' && s[e] != '\t') {
			continue
		}
		if !isLower(s[n]) && !isUpper(s[n]) || classify(s[n:e])&(keyPassword|keySecret|keyToken|keyAPI) == 0 {
			continue
		}
		vs, ve, _, ok := shellWord(s, e)
		if !ok || vs >= ve || s[vs] == '-' {
			continue
		}
		v := s[vs:ve]
		if proseWords[foldString(v)] || cliPlaceholder(v) {
			continue
		}
		if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~/") {
			continue // a file that holds it
		}
		add(vs, ve)
	}
}

// Args returns argv, a command's arguments one a string (an exec-style
// tool call: ["docker", "login", "-p", "X"]), with the credentials they
// pass replaced as String would in the command line they make ("-p X",
// "--password X", "curl -u user:X"), which no string of argv shows
// alone; the strings are not otherwise redacted. argv itself is returned
// when nothing was found.
func (r *Redactor) Args(argv []string) ([]string, Report) {
	var rep Report
	if len(argv) < 2 || len(argv) > 4096 {
		return argv, rep
	}
	// The command line, each argument quoted when it must be, and where
	// each argument's text is in it (-1: quoted with escapes).
	var b strings.Builder
	starts := make([]int, len(argv))
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case a != "" && !strings.ContainsAny(a, " \t\r\n'\"`;|&<>()$\\"):
			starts[i] = b.Len()
			b.WriteString(a)
		case !strings.Contains(a, "'"):
			b.WriteByte('\'')
			starts[i] = b.Len()
			b.WriteString(a)
			b.WriteByte('\'')
		default:
			starts[i] = -1
			b.WriteString(strconv.Quote(a))
		}
	}
	line := b.String()
	var spans []span
	var names []string
	collect := func(name string, find finder) {
		find(line, func(start, end int) {
			spans = append(spans, span{start, end, len(names)})
			names = append(names, name)
		})
	}
	collect("cli-password", findCLI)
	collect("cli-password", findCurlCookies)
	collect("cli-flag", findFlagValues)
	collect("cli-password", findConfigSet)
	if len(spans) == 0 {
		return argv, rep
	}
	out := slices.Clone(argv)
	for i, a := range argv {
		lo, hi := starts[i], starts[i]+len(a)
		var keep []span
		whole := false
		for _, sp := range spans {
			if starts[i] < 0 {
				if sp.start < len(line) && sp.end > 0 && overlapsArg(line, sp, i, argv) {
					whole = true
				}
				continue
			}
			if sp.start >= lo && sp.end <= hi {
				keep = append(keep, span{sp.start - lo, sp.end - lo, sp.rule})
			}
		}
		if whole {
			out[i] = marker + names[0] + "]"
			rep.count(names[0], 1)
			continue
		}
		if len(keep) == 0 {
			continue
		}
		sortSpans(keep)
		var ob strings.Builder
		last := 0
		for _, sp := range keep {
			if sp.start < last {
				continue
			}
			ob.WriteString(a[last:sp.start])
			ob.WriteString(marker + names[sp.rule] + "]")
			rep.count(names[sp.rule], 1)
			last = sp.end
		}
		ob.WriteString(a[last:])
		out[i] = ob.String()
	}
	if rep.Total() == 0 {
		return argv, rep
	}
	return out, rep
}

// overlapsArg reports whether the span falls in argument i of the line
// Args made, when that argument was written quoted with escapes.
func overlapsArg(line string, sp span, i int, argv []string) bool {
	// Find the argument's bounds again: arguments are separated by one
	// space, each written as Args wrote it.
	pos := 0
	for k := range argv {
		w := len(argv[k])
		switch {
		case argv[k] != "" && !strings.ContainsAny(argv[k], " \t\r\n'\"`;|&<>()$\\"):
		case !strings.Contains(argv[k], "'"):
			w += 2
		default:
			w = len(strconv.Quote(argv[k]))
		}
		if k == i {
			return sp.start < pos+w && sp.end > pos
		}
		pos += w + 1
	}
	return false
}
