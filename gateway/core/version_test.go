package core

import (
	"context"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// An office speaks the version of its first member; a member of another
// version is refused with a reason naming both (PROTOCOL-0.4.md §3 P2), and
// the id is free for any version once the office is empty.
func TestOfficeKeepsOneVersion(t *testing.T) {
	h := New(Config{})
	pc4, _ := attachProto(t, h, "pc4", v04)
	join(t, pc4, smcp.RoleComputer, "pc", "o")
	agent3, _ := attachProto(t, h, "a3", v03)
	err := agent3.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "o"})
	if e, ok := smcp.AsError(err); !ok || e.Message != "office o speaks 0.4; this connection speaks 0.3" {
		t.Fatalf("0.3 agent in a 0.4 office: %v", err)
	}
	pc2, _ := attachProto(t, h, "pc2", v02)
	if err := pc2.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "other", OfficeId: "o"}); err == nil ||
		!strings.Contains(err.Error(), "speaks 0.4; this connection speaks 0.2") {
		t.Fatalf("0.2 computer in a 0.4 office: %v", err)
	}
	agent4, _ := attachProto(t, h, "a4", v04)
	join(t, agent4, smcp.RoleAgent, "alice", "o")
	// Emptied, the office takes the next first member's version.
	if err := pc4.Leave("o"); err != nil {
		t.Fatal(err)
	}
	if err := agent4.Leave("o"); err != nil {
		t.Fatal(err)
	}
	join(t, pc2, smcp.RoleComputer, "other", "o")
	rooms, err := pc2.ListRoom("o")
	if err != nil || len(rooms) != 1 || rooms[0].A2CVersion != nil {
		t.Fatalf("0.2 office listing: %v, %v", rooms, err)
	}
}

// list_room shows each member's a2c_version from 0.3 on (H9), never in 0.2.
func TestListRoomShowsVersions(t *testing.T) {
	o := newTestOfficeOf(t, Config{}, v04, echo)
	rooms, err := o.agent.ListRoom("o")
	if err != nil || len(rooms) != 2 {
		t.Fatalf("%v, %v", rooms, err)
	}
	for _, r := range rooms {
		if r.GetA2CVersion() != "0.4.0" {
			t.Errorf("%s: a2c_version %q", r.GetName(), r.GetA2CVersion())
		}
	}
}

// A one-call agent acts in the office's version: an event the office's
// computers do not have is refused as unknown, before it reaches them.
func TestLeaseActsInTheOfficeVersion(t *testing.T) {
	for _, c := range []struct {
		proto Protocol
		code  int
	}{{v02, smcp.CodeNotFound}, {v04, 0}} {
		h := New(Config{})
		pc, conn := attachProto(t, h, "pc", c.proto)
		conn.handler = echo
		join(t, pc, smcp.RoleComputer, "pc", "o")
		lease, err := h.ActAsAgent(allowAll, "o", "rpc")
		if err != nil {
			t.Fatal(err)
		}
		_, err = lease.Route(context.Background(), mustParse(t, smcp.EventGetSkills, `{"agent":"rpc","req_id":"r","computer":"pc"}`))
		switch e, _ := smcp.AsError(err); {
		case c.code == 0 && err != nil:
			t.Errorf("%s office: %v", c.proto.Version, err)
		case c.code != 0 && (e == nil || e.Code != c.code):
			t.Errorf("%s office: %v, want %d", c.proto.Version, err, c.code)
		}
		lease.Close()
	}
}
