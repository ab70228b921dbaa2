package core

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
