package config

import (
	"fmt"
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

// TestRedactArgs: the credentials a stdio command line may carry are
// hidden in client:get_config, whatever their form, and the rest is kept.
func TestRedactArgs(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"-k", "s1", "--key", "s2", "--token=s3", "--api-key", "s4", "--password", "s5", "--secret=s6", "-k=s7"},
			[]string{"-k", "***", "--key", "***", "--token=***", "--api-key", "***", "--password", "***", "--secret=***", "-k=***"}},
		{[]string{"--header", "Authorization: Bearer s1", "-H", "Authorization:", "Bearer s2", "Bearer", "s3", "Basic s4"},
			[]string{"--header", "Authorization: ***", "-H", "Authorization:", "***", "Bearer", "***", "Basic ***"}},
		{[]string{"--header=X-Trace: Bearer s1", "run", "-e", "API_KEY=s2", "-e", "MODE=fast", "--port", "8080", "-v"},
			[]string{"--header=X-Trace: Bearer ***", "run", "-e", "API_KEY=***", "-e", "MODE=fast", "--port", "8080", "-v"}},
		{[]string{"-c", `curl -k s1 -H 'Authorization: Bearer s2'  --api-key=s3 https://u:s4@h/x?token=s5 -o out`},
			[]string{"-c", `curl -k *** -H 'Authorization: *** ***'  --api-key=*** https://u:***@h/x?token=*** -o out`}},
		{[]string{"mcp-remote", "https://h/mcp", "--transport", "http-only", "bearer-less", "basic"},
			[]string{"mcp-remote", "https://h/mcp", "--transport", "http-only", "bearer-less", "basic"}},
	} {
		args := make([]any, len(c.in))
		for i, a := range c.in {
			args[i] = a
		}
		redactArgs(args)
		got := make([]string, len(args))
		for i, a := range args {
			got[i] = a.(string)
		}
		if strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
			t.Errorf("redactArgs(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
		for _, g := range got {
			for n := 1; n <= 7; n++ {
				if strings.Contains(g, fmt.Sprintf("s%d", n)) {
					t.Errorf("secret s%d survives in %q", n, g)
				}
			}
		}
		// Redacting what is already redacted changes nothing.
		again := append([]any(nil), args...)
		redactArgs(again)
		for i := range again {
			if again[i] != args[i] {
				t.Errorf("not idempotent: %q -> %q", args[i], again[i])
			}
		}
	}
}
