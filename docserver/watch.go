package docserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrWatching is returned by Watch when the server is already being watched.
var ErrWatching = errors.New("docserver: already watching")

// Watch follows changes under the root until ctx is done: after a burst of
// file events settles (Options.Debounce, but no later than ten times that
// after the first event) it rescans, registers added and
// removed documents (clients get notifications/resources/list_changed) and
// sends notifications/resources/updated to the clients subscribed to a
// changed document. It returns ctx.Err() when ctx ends.
func (s *Server) Watch(ctx context.Context) error {
	if !s.watching.CompareAndSwap(false, true) {
		return ErrWatching
	}
	defer s.watching.Store(false)

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("docserver: watching %s: %w", s.lib.rootAbs, err)
	}
	defer w.Close()
	s.watchTree(w, s.lib.rootAbs)
	// Files may have changed between New and now.
	if err := s.rescan(ctx, nil); err != nil {
		s.log.Warn("rescan", "error", err)
	}

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	dirty := map[string]bool{}
	// A file written without pause (a log) would keep postponing the rescan
	// forever; pending events are rescanned at the latest after maxDelay.
	maxDelay := 10 * s.opts.Debounce
	var pendingSince time.Time
	schedule := func() {
		if pendingSince.IsZero() {
			pendingSince = time.Now()
		}
		timer.Reset(max(0, min(s.opts.Debounce, maxDelay-time.Since(pendingSince))))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("docserver: file watcher closed")
			}
			rel, err := filepath.Rel(s.lib.rootAbs, ev.Name)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			if ev.Has(fsnotify.Create) {
				// A new directory (or one moved in) needs its own watch;
				// the rescan below finds what was written before it.
				s.watchTree(w, ev.Name)
			}
			dirty[filepath.ToSlash(rel)] = true
			schedule()
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("docserver: file watcher closed")
			}
			// An overflow loses events: the rescan walks everything anyway.
			s.log.Warn("file watcher", "error", err)
			schedule()
		case <-timer.C:
			pendingSince = time.Time{}
			if err := s.rescan(ctx, dirty); err != nil {
				s.log.Warn("rescan", "error", err)
			}
			dirty = map[string]bool{}
		}
	}
}

// watchTree adds a watch on dir and every directory below it, skipping hidden
// ones and never following symlinks (WalkDir does not).
func (s *Server) watchTree(w *fsnotify.Watcher, dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != s.lib.rootAbs && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if err := w.Add(p); err != nil {
			s.log.Warn("file watcher", "dir", p, "error", err)
		}
		return nil
	})
}
