package core

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"

	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestKeyRing(t *testing.T) {
	r, err := NewKeyRing(Key{Key: "k1", ID: "alice", Roles: []string{"agent"}, Offices: []string{"o"}, Name: "alice"}, Key{Key: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Authenticate(context.Background(), "k1")
	if err != nil || p.ID != "alice" || p.Name != "alice" || !p.AllowsOffice("o") || p.AllowsOffice("x") || p.AllowsRole("computer") {
		t.Fatalf("k1: %+v %v", p, err)
	}
	p, err = r.Authenticate(context.Background(), "k2")
	if err != nil || p.ID != "key#1" || !p.AllowsOffice("any") || !p.AllowsRole("computer") {
		t.Fatalf("k2: %+v %v", p, err)
	}
	for _, bad := range []string{"", "k", "k1 ", "K1"} {
		_, err := r.Authenticate(context.Background(), bad)
		wantCode(t, err, smcp.CodeUnauthenticated)
	}
	for _, keys := range [][]Key{nil, {{Key: ""}}, {{Key: "a"}, {Key: "a"}}, {{Key: "a", Roles: []string{"admin"}}}} {
		if _, err := NewKeyRing(keys...); err == nil {
			t.Fatalf("NewKeyRing(%v) accepted", keys)
		}
	}
}

// Two keys of one id would be one caller to the front ends (an MCP session
// belongs to the id that opened it): refused, also when an explicit id
// repeats the default id of another entry, and the error names the entries
// and the id, never a key.
func TestKeyRingRefusesDuplicateIDs(t *testing.T) {
	for _, c := range []struct {
		keys []Key
		want string
	}{
		{[]Key{{Key: "secret-1", ID: "ops"}, {Key: "secret-2", ID: "ops"}}, `entries 0 and 1 have the same id "ops"`},
		{[]Key{{Key: "secret-1"}, {Key: "secret-2", ID: "key#0"}}, `entries 0 and 1 have the same id "key#0"`},
	} {
		_, err := NewKeyRing(c.keys...)
		if err == nil {
			t.Fatalf("NewKeyRing(%v) accepted", c.keys)
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("error %q: want it to contain %q and no key", err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.yaml")
	must(t, os.WriteFile(path, []byte("keys:\n  - {key: k1, id: a}\n  - {key: k2, id: a}\n"), 0o600))
	if _, err := LoadKeyRing(path); err == nil || !strings.Contains(err.Error(), `same id "a"`) {
		t.Fatalf("keys file with a repeated id: %v", err)
	}
	if _, err := NewKeyRing(Key{Key: "k1", ID: "a"}, Key{Key: "k2", ID: "b"}, Key{Key: "k3"}); err != nil {
		t.Fatalf("distinct ids refused: %v", err)
	}
}

// A name fixed to a key is that key's alone: a key without a fixed name may
// not use it, as an agent or a computer, to join or to act for one call;
// keys fixed to the same name (a key being rotated) both may.
func TestReservedNames(t *testing.T) {
	r, err := NewKeyRing(Key{Key: "k-alice", ID: "alice", Name: "alice"}, Key{Key: "k-alice-new", ID: "alice-2", Name: "alice"},
		Key{Key: "k-free", ID: "free"})
	must(t, err)
	auth := func(key string) *Principal {
		p, err := r.Authenticate(context.Background(), key)
		must(t, err)
		return p
	}
	alice, alice2, free := auth("k-alice"), auth("k-alice-new"), auth("k-free")
	wantCode(t, free.CheckAgent("o", "alice"), smcp.CodeForbidden)
	must(t, free.CheckAgent("o", "bob"))
	must(t, alice.CheckAgent("o", "alice"))
	must(t, alice2.CheckAgent("o", "alice"))
	wantCode(t, alice.CheckAgent("o", "bob"), smcp.CodeForbidden)
	wantCode(t, free.CheckAgent("", "bob"), smcp.CodeBadRequest)

	h := New(Config{})
	_, err = h.ActAsAgent(free, "o", "alice")
	wantCode(t, err, smcp.CodeForbidden)
	for _, role := range []string{smcp.RoleAgent, smcp.RoleComputer} {
		s, err := h.Attach("s-"+role, free, &fakeConn{}, v02)
		must(t, err)
		wantCode(t, s.Join(&smcpv1.EnterOfficeReq{Role: role, Name: "alice", OfficeId: "o"}), smcp.CodeForbidden)
		s.Close()
	}
	s, err := h.Attach("s-alice", alice, &fakeConn{}, v02)
	must(t, err)
	must(t, s.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "o"}))
	lease, err := h.ActAsAgent(alice2, "o", "alice")
	must(t, err)
	lease.Close()
	s.Close()
}

func TestLoadKeyRing(t *testing.T) {
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "keys.yaml")
	jsonFile := filepath.Join(dir, "keys.json")
	badFile := filepath.Join(dir, "bad.yaml")
	must(t, os.WriteFile(yamlFile, []byte("keys:\n  - key: y1\n    id: bot\n    roles: [computer]\n    offices: [o1, o2]\n"), 0o600))
	must(t, os.WriteFile(jsonFile, []byte(`{"keys":[{"key":"j1","name":"alice"}]}`), 0o600))
	must(t, os.WriteFile(badFile, []byte("keys: [ {key: "), 0o600))
	r, err := LoadKeyRing(yamlFile)
	must(t, err)
	p, err := r.Authenticate(context.Background(), "y1")
	if err != nil || p.ID != "bot" || !p.AllowsOffice("o2") || p.AllowsRole("agent") {
		t.Fatalf("%+v %v", p, err)
	}
	r, err = LoadKeyRing(jsonFile)
	must(t, err)
	if p, err := r.Authenticate(context.Background(), "j1"); err != nil || p.Name != "alice" {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := LoadKeyRing(badFile); err == nil {
		t.Fatal("bad file accepted")
	}
	if _, err := LoadKeyRing(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuthenticateAllocatesNothing: a key ring and AllowAll hand every call
// their one principal, not a copy per call (a typed RPC call authenticates
// each time).
func TestAuthenticateAllocatesNothing(t *testing.T) {
	key := strings.Repeat("k", 64) // longer than a stack buffer of a conversion
	r, err := NewKeyRing(Key{Key: key, ID: "one"}, Key{Key: "other", ID: "two", Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, a := range map[string]Authenticator{"key ring": r, "allow all": AllowAll{}} {
		first, err := a.Authenticate(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if p, err := a.Authenticate(ctx, key); err != nil || p != first {
				t.Fatalf("%s: %v, %v", name, p, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Authenticate, want 0", name, allocs)
		}
	}
}
