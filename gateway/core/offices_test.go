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
	for _, c := range []struct {
		sid, name, office string
		proto             Protocol
	}{
		{"c1", "pc-b", "o1", v02}, {"c2", "pc-a", "o1", v02}, {"c3", "pc-z", "o2", v04}, {"c4", "pc-x", "secret", v03},
	} {
		s, _ := attachProto(t, h, c.sid, c.proto)
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

	want := `{"offices":[{"office_id":"o1","agent":"alice","computers":["pc-a","pc-b"],"version":"0.2"},` +
		`{"office_id":"o2","rpc_agent":"console","computers":["pc-z"],"version":"0.4"},` +
		`{"office_id":"secret","computers":["pc-x"],"version":"0.3"}]}`
	if got := officesJSON(t, h, allowAll); got != want {
		t.Fatalf("all offices:\n got %s\nwant %s", got, want)
	}
	scoped := &Principal{ID: "scoped", Offices: []string{"o2", "nowhere"}}
	if got, want := officesJSON(t, h, scoped), `{"offices":[{"office_id":"o2","rpc_agent":"console","computers":["pc-z"],"version":"0.4"}]}`; got != want {
		t.Fatalf("scoped key:\n got %s\nwant %s", got, want)
	}
	lease.Close()
	a.Close()
	if got, want := officesJSON(t, h, scoped), `{"offices":[{"office_id":"o2","computers":["pc-z"],"version":"0.4"}]}`; got != want {
		t.Fatalf("after the lease ended:\n got %s\nwant %s", got, want)
	}

	_, err = h.ListOffices(context.Background(), &Principal{ID: "pc", Roles: []string{smcp.RoleComputer}})
	wantCode(t, err, smcp.CodeForbidden)
}

// TestOfficeVersion: an office speaks its members' version, none while it
// has none; a one-call agent does not give it one.
func TestOfficeVersion(t *testing.T) {
	h := New(Config{})
	ctx := context.Background()
	version := func() string {
		t.Helper()
		v, err := h.OfficeVersion(ctx, allowAll, "o1")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	lease, err := h.ActAsAgent(allowAll, "o1", "console")
	if err != nil {
		t.Fatal(err)
	}
	if v := version(); v != "" {
		t.Fatalf("office of a lease alone speaks %q", v)
	}
	c, _ := attachProto(t, h, "c1", v04)
	join(t, c, smcp.RoleComputer, "pc", "o1")
	if v := version(); v != "0.4" {
		t.Fatalf("office of a 0.4 computer speaks %q", v)
	}
	lease.Close()
	c.Close()
	if v := version(); v != "" {
		t.Fatalf("empty office speaks %q", v)
	}
	_, err = h.OfficeVersion(ctx, &Principal{ID: "scoped", Offices: []string{"o2"}}, "o1")
	wantCode(t, err, smcp.CodeForbidden)
}
