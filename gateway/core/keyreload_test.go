package core

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func authOK(t *testing.T, r *KeyRing, key string) *Principal {
	t.Helper()
	p, err := r.Authenticate(context.Background(), key)
	must(t, err)
	return p
}

// A replaced set keeps the principal of every unchanged entry (what it
// holds goes on) and revokes the others: a removed key and a key whose
// entry changed in any field end their Bound contexts with ErrKeyRevoked
// and meet the new set from their next request.
func TestKeyRingReplaceRevokesRemovedAndChangedKeys(t *testing.T) {
	r, err := NewKeyRing(
		Key{Key: "k-same", ID: "same", Offices: []string{"o"}},
		Key{Key: "k-changed", ID: "changed", Offices: []string{"o"}},
		Key{Key: "k-gone", ID: "gone"},
		Key{Key: "k-rotated", ID: "rotated"},
	)
	must(t, err)
	bound := map[string]context.Context{}
	before := map[string]*Principal{}
	for _, id := range []string{"same", "changed", "gone", "rotated"} {
		p := authOK(t, r, "k-"+id)
		before[id] = p
		ctx, cancel := p.Bound(context.Background())
		t.Cleanup(cancel)
		bound[id] = ctx
	}
	ch, err := r.Replace(
		Key{Key: "k-same", ID: "same", Offices: []string{"o"}},
		Key{Key: "k-changed", ID: "changed", Offices: []string{"o", "p"}},
		Key{Key: "k-rotated-2", ID: "rotated"},
		Key{Key: "k-new", ID: "new"},
	)
	must(t, err)
	if ch.Added != 1 || ch.Removed != 1 || ch.Changed != 2 || ch.Kept != 1 {
		t.Errorf("changes %+v, want 1 added, 1 removed, 2 changed, 1 kept", ch)
	}
	slices.Sort(ch.Revoked)
	if !slices.Equal(ch.Revoked, []string{"changed", "gone", "rotated"}) {
		t.Errorf("revoked %v", ch.Revoked)
	}
	if p := authOK(t, r, "k-same"); p != before["same"] || bound["same"].Err() != nil {
		t.Errorf("the unchanged key lost its principal or its context: %v", bound["same"].Err())
	}
	for _, id := range []string{"changed", "gone", "rotated"} {
		<-bound[id].Done()
		if !errors.Is(context.Cause(bound[id]), ErrKeyRevoked) {
			t.Errorf("%s: cause %v, want ErrKeyRevoked", id, context.Cause(bound[id]))
		}
	}
	if p := authOK(t, r, "k-changed"); p == before["changed"] || !p.AllowsOffice("p") {
		t.Errorf("the changed key is not the new entry: %+v", p)
	}
	for _, key := range []string{"k-gone", "k-rotated"} {
		_, err := r.Authenticate(context.Background(), key)
		wantCode(t, err, smcp.CodeUnauthenticated)
	}
	authOK(t, r, "k-rotated-2")
	authOK(t, r, "k-new")

	// A principal authenticated before a revocation and bound after it
	// ends at once.
	ctx, cancel := before["gone"].Bound(context.Background())
	defer cancel()
	if !errors.Is(context.Cause(ctx), ErrKeyRevoked) {
		t.Errorf("a revoked principal bound afresh: cause %v", context.Cause(ctx))
	}
}

// A set that does not check changes nothing: the keys in force stay and
// nobody is revoked.
func TestKeyRingReplaceRefusedKeepsTheKeys(t *testing.T) {
	r, err := NewKeyRing(Key{Key: "k1", ID: "a"}, Key{Key: "k2", ID: "b"})
	must(t, err)
	p := authOK(t, r, "k1")
	ctx, cancel := p.Bound(context.Background())
	defer cancel()
	for _, keys := range [][]Key{nil, {{Key: "k1", ID: "a"}, {Key: "k1", ID: "c"}}, {{Key: "k1", ID: "a", Roles: []string{"admin"}}}} {
		if _, err := r.Replace(keys...); err == nil {
			t.Fatalf("Replace(%v) accepted", keys)
		}
	}
	if authOK(t, r, "k1") != p || ctx.Err() != nil {
		t.Fatal("a refused set changed the ring")
	}
	authOK(t, r, "k2")
}

// The names reserved to named keys follow the set in force, also for a
// principal kept across the reload.
func TestKeyRingReplaceReservesNewNames(t *testing.T) {
	r, err := NewKeyRing(Key{Key: "k-free", ID: "free"})
	must(t, err)
	free := authOK(t, r, "k-free")
	must(t, free.CheckAgent("o", "carol"))
	_, err = r.Replace(Key{Key: "k-free", ID: "free"}, Key{Key: "k-carol", ID: "carol", Name: "carol"})
	must(t, err)
	if authOK(t, r, "k-free") != free {
		t.Fatal("the unchanged key lost its principal")
	}
	wantCode(t, free.CheckAgent("o", "carol"), smcp.CodeForbidden)
}

// keysWatch runs r.Watch until the test ends, logging into the returned
// buffer.
func keysWatch(t *testing.T, r *KeyRing, hup <-chan os.Signal) *testwait.Buffer {
	t.Helper()
	var logs testwait.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- r.Watch(ctx, slog.New(slog.NewTextHandler(&logs, nil)), hup)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &logs
}

// writeByRename replaces path as editors and deployment tools do: another
// file renamed over it.
func writeByRename(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte(content), 0o600))
	must(t, os.Rename(tmp, path))
}

// Watch: a keys file replaced by a rename is reloaded (one INFO line with
// the counts, no key); a bad file keeps the keys in force and is logged at
// ERROR with the file and the reason, never with a key; the good file
// written back is loaded.
func TestKeysFileWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	must(t, os.WriteFile(path, []byte("keys:\n  - {key: secret-a, id: a}\n  - {key: secret-b, id: b}\n"), 0o600))
	r, err := LoadKeyRing(path)
	must(t, err)
	b := authOK(t, r, "secret-b")
	bctx, cancel := b.Bound(context.Background())
	defer cancel()
	logs := keysWatch(t, r, nil)

	writeByRename(t, path, "keys:\n  - {key: secret-a, id: a}\n  - {key: secret-c, id: c}\n")
	<-bctx.Done()
	testwait.Until(t, "the reload logged", func() bool { return strings.Contains(logs.String(), "keys reloaded") })
	for _, want := range []string{"level=INFO", "added=1", "removed=1", "changed=0", "kept=1", "revoked=[b]", "path=" + path} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	authOK(t, r, "secret-c")

	for i, bad := range []string{
		"keys: [ {key: ",                               // not YAML
		"keys: secret-in-the-wrong-place\n",            // a key where the list goes
		"keys:\n  - {key: secret-d, roles: [admin]}\n", // no such role
		"", // emptied
	} {
		writeByRename(t, path, bad)
		testwait.Until(t, "the refusal logged", func() bool { return strings.Count(logs.String(), "level=ERROR") == i+1 })
		authOK(t, r, "secret-a")
		authOK(t, r, "secret-c")
	}
	out := logs.String()
	if strings.Count(out, "keys file not reloaded") != 4 || !strings.Contains(out, "unknown role") || !strings.Contains(out, "no keys") {
		t.Errorf("refusals not logged with their reasons:\n%s", out)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a key is in the log:\n%s", out)
	}

	writeByRename(t, path, "keys:\n  - {key: secret-a, id: a}\n")
	testwait.Until(t, "the good file loaded", func() bool {
		_, err := r.Authenticate(context.Background(), "secret-c")
		return err != nil
	})
}

// A value on the reload channel (SIGHUP) reloads the file even when the
// watch cannot see the change: here the file is a link to a file in
// another folder, changed in place.
func TestKeysFileReloadOnSignal(t *testing.T) {
	real := filepath.Join(t.TempDir(), "real.yaml")
	must(t, os.WriteFile(real, []byte("keys:\n  - {key: secret-a, id: a}\n"), 0o600))
	path := filepath.Join(t.TempDir(), "keys.yaml")
	must(t, os.Symlink(real, path))
	r, err := LoadKeyRing(path)
	must(t, err)
	hup := make(chan os.Signal, 1)
	logs := keysWatch(t, r, hup)
	// Watch's first look at the file is done once it answers a signal:
	// a change made before that look would be loaded by the look, not by
	// the signal under test.
	hup <- syscall.SIGHUP
	testwait.Until(t, "the first reload logged", func() bool { return strings.Count(logs.String(), "keys reloaded") == 1 })
	must(t, os.WriteFile(real, []byte("keys:\n  - {key: secret-b, id: b}\n"), 0o600))
	hup <- syscall.SIGHUP
	testwait.Until(t, "the reload logged", func() bool { return strings.Count(logs.String(), "keys reloaded") == 2 })
	if n := strings.Count(logs.String(), "trigger=hangup"); n != 2 {
		t.Errorf("%d of 2 reloads name the signal as their trigger:\n%s", n, logs)
	}
	authOK(t, r, "secret-b")
	_, err = r.Authenticate(context.Background(), "secret-a")
	wantCode(t, err, smcp.CodeUnauthenticated)
}

// What other packages read from the keys file (rules, quotas) reloads with
// the keys, all or none: one reader's refusal keeps the keys and every
// reader's part in force; else every part is applied with the keys.
func TestAlsoReloadAllOrNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	must(t, os.WriteFile(path, []byte("keys:\n  - {key: secret-a, id: a}\n"), 0o600))
	r, err := LoadKeyRing(path)
	must(t, err)
	var applied []string
	r.AlsoReload(func(b []byte) (func(), error) {
		return func() { applied = append(applied, "first") }, nil
	})
	r.AlsoReload(func(b []byte) (func(), error) {
		if strings.Contains(string(b), "refuse-me") {
			return nil, errors.New("second: refused")
		}
		return func() { applied = append(applied, "second") }, nil
	})
	must(t, os.WriteFile(path, []byte("keys:\n  - {key: secret-b, id: b}\n# refuse-me\n"), 0o600))
	if _, err := r.Reload(); err == nil || !strings.Contains(err.Error(), "second: refused") {
		t.Fatalf("reload with a refused part: %v", err)
	}
	authOK(t, r, "secret-a")
	if len(applied) != 0 {
		t.Fatalf("parts applied from a refused file: %v", applied)
	}
	must(t, os.WriteFile(path, []byte("keys:\n  - {key: secret-b, id: b}\n"), 0o600))
	_, err = r.Reload()
	must(t, err)
	authOK(t, r, "secret-b")
	if !slices.Equal(applied, []string{"first", "second"}) {
		t.Fatalf("applied %v, want both parts", applied)
	}
}
