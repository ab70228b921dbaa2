package config

import (
	"net/url"
	"regexp"
	"strings"
)

// RedactURL hides the secrets a URL may carry: the password of its
// userinfo and the values of query (and fragment) parameters whose names
// look like credentials (token, key, secret, password, auth, signature...).
// The rest of the text is kept byte for byte (placeholders such as
// ${input:id} stay readable), so the shape of the URL is still shown.
func RedactURL(s string) string {
	rest := s
	var out strings.Builder
	if i := strings.Index(rest, "://"); i >= 0 {
		out.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		authority := rest[:end]
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			user := authority[:at]
			if colon := userinfoColon(user); colon >= 0 {
				user = user[:colon+1] + Redacted
			}
			authority = user + authority[at:]
		}
		out.WriteString(authority)
		rest = rest[end:]
	}
	// Query then fragment: OAuth's implicit flow puts access_token in the
	// fragment.
	for _, sep := range []byte{'?', '#'} {
		i := strings.IndexByte(rest, sep)
		if i < 0 {
			continue
		}
		out.WriteString(rest[:i+1])
		rest = rest[i+1:]
		end := len(rest)
		if sep == '?' {
			if j := strings.IndexByte(rest, '#'); j >= 0 {
				end = j
			}
		}
		out.WriteString(redactParams(rest[:end]))
		rest = rest[end:]
	}
	out.WriteString(rest)
	return out.String()
}

func redactParams(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if SecretName(name) {
			parts[i] = k + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// SecretName reports whether a parameter or flag name looks like it holds
// a credential. It errs on the side of hiding: a redacted harmless value
// costs a look at the file, a shown secret cannot be taken back.
func SecretName(name string) bool {
	n := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(name))
	for _, w := range []string{"token", "secret", "password", "passwd", "passphrase", "key", "auth", "signature", "credential", "session", "cookie", "jwt", "bearer"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	switch n {
	case "sig", "pwd", "pass", "pw", "code", "sid":
		return true
	}
	return false
}

// secretFlag reports whether a command-line flag (dashes removed) takes a
// credential: a secret-looking name, or -k, the short form of --key (curl
// and many CLIs read -k as --insecure, whose next argument is no value: it
// is redacted too, which costs only a readable word).
func secretFlag(name string) bool {
	return name == "k" || SecretName(name)
}

// authScheme matches an HTTP authorization scheme and its credentials
// ("Bearer eyJ...", "Basic dXNlcjpwYXNz"), wherever it appears in an
// argument or a header value.
var authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[^\s,;"']+`)

// RedactAuth hides the credentials of every "Bearer xxx" / "Basic xxx" in
// s, keeping the scheme name.
func RedactAuth(s string) string {
	return authScheme.ReplaceAllStringFunc(s, func(m string) string {
		sub := authScheme.FindStringSubmatch(m)
		if sub == nil || strings.Trim(m[len(sub[1])+len(sub[2]):], "*") == "" {
			return m // already redacted
		}
		return sub[1] + sub[2] + Redacted
	})
}

// redactArgs hides secrets in a stdio command line: URLs (see RedactURL),
// --name=value and -k=value where name looks secret, the argument after a
// bare --name that looks secret or after -k, "Name: value" headers whose
// name looks secret, NAME=value pairs (docker -e, env) whose name looks
// secret, and the credentials of "Bearer xxx" / "Basic xxx", written as one
// argument, inside another, or as two.
func redactArgs(args []any) {
	hideNext := false
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			continue
		}
		if hideNext {
			hideNext = false
			if !strings.HasPrefix(s, "-") {
				args[i] = Redacted
				continue
			}
		}
		switch lower := strings.ToLower(strings.TrimSpace(s)); lower {
		case "bearer", "basic":
			hideNext = true // the scheme and its credentials as two arguments
			continue
		}
		if strings.HasPrefix(s, "-") {
			flag := strings.TrimLeft(s, "-")
			if name, _, ok := strings.Cut(flag, "="); ok {
				if secretFlag(name) {
					args[i] = s[:len(s)-len(flag)] + name + "=" + Redacted
				} else {
					args[i] = RedactAuth(s) // --header=Authorization: Bearer x
				}
				continue
			}
			hideNext = secretFlag(flag)
			continue
		}
		if name, value, ok := strings.Cut(s, ":"); ok && !strings.ContainsAny(name, " /") && SecretName(name) {
			// A header given on the command line (mcp-remote --header
			// "Authorization: Bearer ..."), or its name alone, the value
			// being the next argument.
			if strings.TrimSpace(value) == "" {
				hideNext = true
				continue
			}
			args[i] = name + ": " + Redacted
			continue
		}
		if name, _, ok := strings.Cut(s, "="); ok && !strings.ContainsAny(name, " /:") && SecretName(name) {
			args[i] = name + "=" + Redacted // docker run -e API_KEY=..., env TOKEN=...
			continue
		}
		if strings.ContainsAny(s, " \t\n") {
			// A shell line (sh -c "curl -k KEY ..."): word by word, where a
			// URL ends at a space.
			args[i] = redactWords(RedactAuth(s))
			continue
		}
		if strings.Contains(s, "://") {
			s = RedactURL(s)
		}
		args[i] = RedactAuth(s)
	}
}

var word = regexp.MustCompile(`\S+`)

// redactWords applies redactArgs to the words of one argument (a command
// line given to a shell), keeping the text between them.
func redactWords(s string) string {
	spans := word.FindAllStringIndex(s, -1)
	words := make([]any, len(spans))
	for i, sp := range spans {
		words[i] = s[sp[0]:sp[1]]
	}
	redactArgs(words) // words hold no white space: no deeper recursion
	var out strings.Builder
	prev := 0
	for i, sp := range spans {
		out.WriteString(s[prev:sp[0]])
		out.WriteString(words[i].(string))
		prev = sp[1]
	}
	out.WriteString(s[prev:])
	return out.String()
}

// userinfoColon finds the colon between user name and password, skipping
// the colons of ${input:id} placeholders.
func userinfoColon(user string) int {
	inPlaceholder := false
	for i := 0; i < len(user); i++ {
		switch {
		case strings.HasPrefix(user[i:], "${"):
			inPlaceholder = true
		case user[i] == '}':
			inPlaceholder = false
		case user[i] == ':' && !inPlaceholder:
			return i
		}
	}
	return -1
}
