package core

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/fsnotify/fsnotify"
	"gopkg.in/yaml.v3"
)

// KeyChanges counts what a reload did, by key id.
type KeyChanges struct {
	// Added are ids new to the ring, Removed ids no longer in it; Changed
	// ids whose entry differs in any field (its key included), Kept the
	// entries unchanged. Removed and Changed keys are revoked.
	Added, Removed, Changed, Kept int
	// Revoked are the ids of the revoked keys.
	Revoked []string
}

// count fills ch from the set old and the set made from it.
func (ch *KeyChanges) count(old, set *keySet) {
	if old == nil {
		ch.Added = len(set.entries)
		return
	}
	oldIDs := map[string]bool{}
	for _, e := range old.entries {
		oldIDs[e.spec.ID] = true
	}
	newIDs := map[string]bool{}
	for _, e := range set.entries {
		newIDs[e.spec.ID] = true
		switch prev := old.find(e.digest); {
		case prev != nil && prev.principal == e.principal:
			ch.Kept++
		case oldIDs[e.spec.ID]:
			ch.Changed++
		default:
			ch.Added++
		}
	}
	for _, e := range old.entries {
		if !newIDs[e.spec.ID] {
			ch.Removed++
		}
	}
}

// Replace puts keys in force in place of the ring's keys, checked as
// NewKeyRing checks them: on an error nothing changes. A key whose entry is
// unchanged keeps its Principal, and what it holds goes on; the principal
// of every other key of the old set is revoked once the new set is in
// force, which ends whatever serves under its Bound (connections, streams,
// sessions), and its next request meets the new set.
func (r *KeyRing) Replace(keys ...Key) (KeyChanges, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replaceLocked(keys)
}

func (r *KeyRing) replaceLocked(keys []Key) (KeyChanges, error) {
	old := r.set.Load()
	set, ch, err := r.build(keys, old)
	if err != nil {
		return KeyChanges{}, err
	}
	r.set.Store(set)
	// Revoked after the swap: a connection authenticated with an old
	// principal just before it binds to a context already ended.
	kept := map[*Principal]bool{}
	for _, e := range set.entries {
		kept[e.principal] = true
	}
	for _, e := range old.entries {
		if !kept[e.principal] {
			ch.Revoked = append(ch.Revoked, e.spec.ID)
			e.revoke()
		}
	}
	return ch, nil
}

// AlsoReload makes each reload of the keys file also read what another
// package keeps in it (the rule sets of gateway/policy): f gets the file's
// bytes once its keys check and returns how to put what it read in force,
// which is done with the keys; an error from any f refuses the whole file,
// so a reload is never half applied. Call it before Watch.
func (r *KeyRing) AlsoReload(f func(b []byte) (apply func(), err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.also = append(r.also, f)
}

// Path is the keys file the ring was loaded from ("" for NewKeyRing's).
func (r *KeyRing) Path() string { return r.path }

// Reload reads the ring's keys file again and puts its keys in force as
// Replace does. A file that cannot be read or does not check keeps the
// keys in force; the error says why, never with a key.
func (r *KeyRing) Reload() (KeyChanges, error) {
	ch, _, err := r.reload(false)
	return ch, err
}

// reload is Reload; ifChanged skips a file whose bytes are those last
// read (a change in the folder that is not one of the file).
func (r *KeyRing) reload(ifChanged bool) (ch KeyChanges, skipped bool, err error) {
	if r.path == "" {
		return KeyChanges{}, false, errors.New("key ring: not loaded from a keys file")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := os.ReadFile(r.path)
	if err != nil {
		return KeyChanges{}, false, fmt.Errorf("keys file: %w", err)
	}
	sum := sha256.Sum256(b)
	if ifChanged && sum == r.read {
		return KeyChanges{}, true, nil
	}
	r.read = sum
	keys, err := parseKeysFile(r.path, b)
	if err != nil {
		return KeyChanges{}, false, err
	}
	applies := make([]func(), 0, len(r.also))
	for _, f := range r.also {
		apply, err := f(b)
		if err != nil {
			return KeyChanges{}, false, err
		}
		applies = append(applies, apply)
	}
	ch, err = r.replaceLocked(keys)
	if err != nil {
		return KeyChanges{}, false, fmt.Errorf("keys file %s: %w", r.path, err)
	}
	for _, apply := range applies {
		apply()
	}
	return ch, false, nil
}

// readKeysFile reads the keys of a keys file.
func readKeysFile(path string) ([]Key, [sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, fmt.Errorf("keys file: %w", err)
	}
	keys, err := parseKeysFile(path, b)
	return keys, sha256.Sum256(b), err
}

// yamlValue is a scalar quoted in a YAML decoding error (its first 7
// bytes, or all of a short one).
var yamlValue = regexp.MustCompile("`[^`]*`")

func parseKeysFile(path string, b []byte) ([]Key, error) {
	var f struct {
		Keys []Key `yaml:"keys"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		// A type error quotes the value it could not decode, which may be
		// a key written in the wrong place: the error is logged.
		return nil, fmt.Errorf("keys file %s: %s", path, yamlValue.ReplaceAllString(err.Error(), "(value)"))
	}
	return f.Keys, nil
}

// keysDebounce is how long the keys file's folder must be quiet before the
// file is read: an editor or a deployment tool writes a file in steps
// (truncate, write; write a temporary file, rename it).
const keysDebounce = 100 * time.Millisecond

// Watch keeps the ring in step with its keys file until ctx ends: it
// reloads the file when it changes, and on every value received from
// reload (`smcp gateway` sends SIGHUP there). The file's folder is
// watched, not the file, since editors and configuration tools replace a
// file by renaming another over it. Each reload is logged: at INFO what
// changed (counts and the ids revoked), at ERROR why a file was refused,
// the keys in force then staying. A change of the folder that leaves the
// file's bytes as they were does nothing.
func (r *KeyRing) Watch(ctx context.Context, log *slog.Logger, reload <-chan os.Signal) error {
	if r.path == "" {
		return errors.New("key ring: not loaded from a keys file")
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := watchDir(filepath.Dir(r.path))
	if err == nil {
		defer func() { _ = w.Close() }()
		events, errs = w.Events, w.Errors
	} else {
		// Out of inotify watches, say: the signal still reloads.
		log.Warn("keys file: not watched; a reload needs SIGHUP", "path", r.path, "err", err)
	}
	debounce := time.NewTimer(keysDebounce)
	debounce.Stop()
	defer debounce.Stop()
	apply := func(trigger string, ifChanged bool) {
		ch, skipped, err := r.reload(ifChanged)
		switch {
		case err != nil:
			log.Error("keys file not reloaded: the keys in force stay", "path", r.path, "trigger", trigger, "err", err)
		case !skipped:
			log.Info("keys reloaded", "path", r.path, "trigger", trigger, "added", ch.Added, "removed", ch.Removed,
				"changed", ch.Changed, "kept", ch.Kept, "revoked", ch.Revoked)
		}
	}
	// The file may have changed between its load and the watch.
	apply("file", true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-reload:
			apply(sig.String(), false)
		case _, ok := <-events:
			if !ok {
				return errors.New("keys file: watch ended")
			}
			debounce.Reset(keysDebounce)
		case err, ok := <-errs:
			if !ok {
				return errors.New("keys file: watch ended")
			}
			log.Warn("keys file: watch", "path", r.path, "err", err)
		case <-debounce.C:
			apply("file", true)
		}
	}
}

// watchDir watches the folder dir.
func watchDir(dir string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	return w, nil
}
