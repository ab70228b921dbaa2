package servers

import (
	"slices"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestChildEnv checks the environment a stdio server gets, including what
// the load-time check cannot see: a configuration built in code that opts
// in to the computer's own variables (the API key, the token store's key)
// still does not get them.
func TestChildEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "SHELL=() { evil; }", "SMCP_API_KEY=k",
		"SMCP_AUTH_STORE_KEY=store-key", "Smcp_Log_Level=debug", "A2C_SMCP_PW=p", "SECRET=s", "WANTED=w", "TZ=UTC", "broken"}
	p := &smcp.StdioParams{Env: smcp.StringMap{"TZ": "Asia/Tokyo", "X": "1"},
		InheritEnv: smcp.StringList{"WANTED", "SMCP_API_KEY", "SMCP_AUTH_STORE_KEY", "A2C_SMCP_PW", "Smcp_Log_Level"}}
	got := childEnv(p, environ)
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "WANTED=w", "TZ=Asia/Tokyo", "X=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("child env\n got %q\nwant %q", got, want)
	}
}
