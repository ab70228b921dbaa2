package httpauth

import (
	"net/http"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestCredential(t *testing.T) {
	cases := []struct {
		headers []string
		want    string
		err     bool
	}{
		{nil, "", false},
		{[]string{"x-api-key", " k1 "}, "k1", false},
		{[]string{"authorization", "Bearer k2"}, "k2", false},
		{[]string{"authorization", "bearer  k2 "}, "k2", false},
		{[]string{"x-api-key", "k1", "authorization", "Bearer k1"}, "k1", false},
		{[]string{"x-api-key", "k1", "authorization", "Bearer k2"}, "", true},
		{[]string{"authorization", "Basic k2"}, "", true},
		{[]string{"authorization", "k2"}, "", true},
	}
	for _, c := range cases {
		h := http.Header{}
		for i := 0; i < len(c.headers); i += 2 {
			h.Set(c.headers[i], c.headers[i+1])
		}
		got, err := Credential(h, "x-api-key")
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%v: got %q, %v", c.headers, got, err)
		}
	}
}

func TestAgentName(t *testing.T) {
	fixed := &core.Principal{Name: "alice"}
	free := &core.Principal{}
	cases := []struct {
		p      *core.Principal
		header string
		want   string
		code   int
	}{
		{fixed, "", "alice", 0},
		{fixed, "alice", "alice", 0},
		{fixed, "bob", "", smcp.CodeForbidden},
		{free, "", "dflt", 0},
		{free, " bob ", "bob", 0},
		{free, "bo\nb", "", smcp.CodeBadRequest},
		{free, string(make([]byte, 200)), "", smcp.CodeBadRequest},
	}
	for _, c := range cases {
		got, err := AgentName(c.p, c.header, "dflt")
		e, _ := smcp.AsError(err)
		if got != c.want || (c.code == 0) != (err == nil) || (e != nil && e.Code != c.code) {
			t.Errorf("AgentName(%q, %q) = %q, %v", c.p.Name, c.header, got, err)
		}
	}
}

// IPv4 and IPv6 peers lose their port (two connections of one host count as
// one address); an address without a port is kept whole.
func TestClientIP(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:5123":    "127.0.0.1",
		"[::1]:443":         "::1",
		"[fe80::1%lo]:8080": "fe80::1%lo",
		"10.0.0.7":          "10.0.0.7",
		"@":                 "@",
		"":                  "",
	} {
		if got := ClientIP(addr); got != want {
			t.Errorf("ClientIP(%q) = %q, want %q", addr, got, want)
		}
	}
}
