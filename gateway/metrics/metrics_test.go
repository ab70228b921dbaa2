package metrics

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// /metrics carries smcp_build_info with the running build's labels.
func TestBuildInfo(t *testing.T) {
	m := New(core.New(core.Config{}))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	var line string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "smcp_build_info{") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no smcp_build_info in /metrics:\n%s", body)
	}
	for _, want := range []string{`goversion="` + runtime.Version() + `"`, `revision="`, `version="`} {
		if !strings.Contains(line, want) {
			t.Errorf("%s lacks %s", line, want)
		}
	}
	if !strings.HasSuffix(line, " 1") {
		t.Errorf("%s: want the value 1", line)
	}
}
