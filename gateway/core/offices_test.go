package core

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func officesJSON(t *testing.T, h *Hub, p *Principal) string {
	t.Helper()
	got, err := h.ListOffices(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.Marshal(&smcpv1.ListOfficesResponse{Offices: got})
	if err != nil {
		t.Fatal(err)
	}
	// protojson varies its spacing on purpose.
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestListOffices: only offices with a joined member are listed, only those
// the key may enter, with their agent, the one-call agent holding them and
// their computers sorted; an office that empties disappears.
func TestListOffices(t *testing.T) {
	h := New(Config{})
	a, _ := attach(t, h, "a1")
	join(t, a, smcp.RoleAgent, "alice", "o1")
	for _, c := range []struct{ sid, name, office string }{
		{"c1", "pc-b", "o1"}, {"c2", "pc-a", "o1"}, {"c3", "pc-z", "o2"}, {"c4", "pc-x", "secret"},
	} {
		s, _ := attach(t, h, c.sid)
		join(t, s, smcp.RoleComputer, c.name, c.office)
	}
	lease, err := h.ActAsAgent(allowAll, "o2", "console")
	if err != nil {
		t.Fatal(err)
	}
	// A watcher alone does not make an office worth listing.
	w, err := h.Watch(allowAll, "empty")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	want := `{"offices":[{"office_id":"o1","agent":"alice","computers":["pc-a","pc-b"]},` +
		`{"office_id":"o2","rpc_agent":"console","computers":["pc-z"]},` +
		`{"office_id":"secret","computers":["pc-x"]}]}`
	if got := officesJSON(t, h, allowAll); got != want {
		t.Fatalf("all offices:\n got %s\nwant %s", got, want)
	}
	scoped := &Principal{ID: "scoped", Offices: []string{"o2", "nowhere"}}
	if got, want := officesJSON(t, h, scoped), `{"offices":[{"office_id":"o2","rpc_agent":"console","computers":["pc-z"]}]}`; got != want {
		t.Fatalf("scoped key:\n got %s\nwant %s", got, want)
	}
	lease.Close()
	a.Close()
	if got, want := officesJSON(t, h, scoped), `{"offices":[{"office_id":"o2","computers":["pc-z"]}]}`; got != want {
		t.Fatalf("after the lease ended:\n got %s\nwant %s", got, want)
	}

	_, err = h.ListOffices(context.Background(), &Principal{ID: "pc", Roles: []string{smcp.RoleComputer}})
	wantCode(t, err, smcp.CodeForbidden)
}
