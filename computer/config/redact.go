package config

import (
	"net/url"
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

// redactArgs hides secrets in a stdio command line: URLs (see RedactURL),
// --name=value where name looks secret, the argument after a bare --name
// that looks secret, and "Name: value" headers whose name looks secret.
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
		if strings.HasPrefix(s, "-") {
			flag := strings.TrimLeft(s, "-")
			if name, _, ok := strings.Cut(flag, "="); ok {
				if SecretName(name) {
					args[i] = s[:len(s)-len(flag)] + name + "=" + Redacted
				}
				continue
			}
			hideNext = SecretName(flag)
			continue
		}
		if name, _, ok := strings.Cut(s, ":"); ok && !strings.ContainsAny(name, " /") && SecretName(name) {
			// A header given on the command line (mcp-remote --header
			// "Authorization: Bearer ...").
			args[i] = name + ": " + Redacted
			continue
		}
		if strings.Contains(s, "://") {
			args[i] = RedactURL(s)
		}
	}
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
