package config

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pass@host/?token=abc":                      "http://user:***@host/?token=***",
		"https://host/mcp":                                      "https://host/mcp",
		"https://u@host:8080/p?a=1&api_key=s&Signature=x#frag":  "https://u@host:8080/p?a=1&api_key=***&Signature=***#frag",
		"https://host/cb#access_token=t&state=ok":               "https://host/cb#access_token=***&state=ok",
		"https://a:b:c@h/x@y?X-Amz-Credential=c&X-Amz-Date=d":   "https://a:***@h/x@y?X-Amz-Credential=***&X-Amz-Date=d",
		"https://${input:user}:${input:pw}@h/?key=${input:key}": "https://${input:user}:***@h/?key=***",
		"https://h/?auth%5Ftoken=z&page=2":                      "https://h/?auth%5Ftoken=***&page=2",
		"host-only?secret=1":                                    "host-only?secret=***",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWireRedactsURLSecrets is client:get_config as an agent sees it: no
// URL password, no secret query value, no secret on a command line.
func TestWireRedactsURLSecrets(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"remote": {"url": "http://user:pass@host/?token=abc&x=1"},
		"legacy": {"type": "sse", "url": "https://h/sse?api_key=k2"},
		"proxy": {"command": "npx", "args": ["mcp-remote", "https://h/mcp?access_token=k3", "--header", "Authorization: Bearer k4",
			"--api-key", "k5", "--password=k6", "--port", "8080"]}}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Wire()
	text := strings.Join(func() []string {
		var out []string
		for _, s := range w["servers"].(map[string]any) {
			p := s.(map[string]any)["server_parameters"].(map[string]any)
			if u, ok := p["url"].(string); ok {
				out = append(out, u)
			}
			if args, ok := p["args"].([]any); ok {
				for _, a := range args {
					out = append(out, a.(string))
				}
			}
		}
		return out
	}(), " ")
	for _, secret := range []string{"pass@", "abc", "k2", "k3", "k4", "k5", "k6"} {
		if strings.Contains(text, secret) {
			t.Errorf("get_config shows %q: %s", secret, text)
		}
	}
	for _, kept := range []string{"http://user:***@host/?token=***&x=1", "--port 8080", "mcp-remote", "Authorization: ***"} {
		if !strings.Contains(text, kept) {
			t.Errorf("get_config lost %q: %s", kept, text)
		}
	}
	// The configuration itself is untouched: the server still connects
	// with its credentials.
	if u := cfg.Servers["remote"].Raw()["server_parameters"].(map[string]any)["url"]; u != "http://user:pass@host/?token=abc&x=1" {
		t.Fatalf("Wire changed the configuration: %v", u)
	}
}

// FuzzRedactURL: whatever the text, the password of a URL's userinfo and
// the value of a token parameter do not survive, and redacting twice
// changes nothing more.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/?token=t", "https://h/#access_token=x", "a://@", "x?&=&token=", "https://${input:a}:b@h"} {
		f.Add(s, "s3cr3tvalue")
	}
	f.Fuzz(func(t *testing.T, u, secret string) {
		once := RedactURL(u)
		if twice := RedactURL(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", u, once, twice)
		}
		if len(secret) < 4 || strings.ContainsAny(secret, "@/?#&=:${}%+ ") || strings.Contains(u, secret) {
			return
		}
		for _, withSecret := range []string{"http://user:" + secret + "@" + u, "http://h/?token=" + secret + "&" + u} {
			if got := RedactURL(withSecret); strings.Contains(got, secret) {
				t.Fatalf("RedactURL(%q) = %q keeps the secret", withSecret, got)
			}
		}
	})
}
