//go:build unix

package skills

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// mkfifo makes a FIFO at name and, at the end of the test, opens it for
// writing once, which frees a reader that did block on it (the test has
// failed then, but it ends).
func mkfifo(t *testing.T, name string) {
	t.Helper()
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
}

// within runs fn and fails the test if it does not return: a FIFO opened
// for reading waits for a writer, forever.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	testwait.Until(t, what, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

// A FIFO in a skill's folder is refused at once, as get_skill and get_blob
// open it (forbidden, saying it is not a regular file). Each call used to
// hold a thread until a writer came (10,000 get_skill calls: the computer
// died of thread exhaustion).
func TestFIFORefusedWithoutBlocking(t *testing.T) {
	dir, _ := skillDir(t)
	mkfifo(t, filepath.Join(dir, "pdf-tools", "pipe.txt"))
	r, err := New(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 3 {
		var e *smcp.Error
		within(t, "Open of a FIFO", func() {
			var c *Content
			if c, e = r.Open("pdf-tools", "pipe.txt"); c != nil {
				c.Close()
			}
		})
		if e == nil || e.Code != smcp.CodeSkillResourceNotAccessible || e.Details["reason"] != ReasonForbidden || !strings.Contains(e.Message, "regular file") {
			t.Fatalf("Open(pipe.txt) = %v, want 4017 forbidden naming regular files", e)
		}
	}
}

// A SKILL.md that is a FIFO leaves its skill out of the scan, reported,
// instead of stopping the scan (and the watcher's rescans) for good.
func TestFIFOSkillMDLeftOut(t *testing.T) {
	dir, _ := skillDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "piped"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, "piped", "SKILL.md"))
	var logs bytes.Buffer
	var r *Registry
	within(t, "the scan of a folder with a FIFO SKILL.md", func() {
		var err error
		r, err = New(Options{Dirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Error(err)
		}
	})
	if r == nil {
		t.FailNow()
	}
	defer r.Close()
	if !strings.Contains(logs.String(), "not a regular file") {
		t.Errorf("the FIFO SKILL.md is not reported:\n%s", logs.String())
	}
	if len(r.List()) != 1 {
		t.Errorf("skills listed: %v", r.List())
	}
}

// A hard link to a .skillenv (the secret under another name, in the same
// skill, in a subfolder, or in another skill) is refused by the file's
// identity: the name checks cannot see it.
func TestHardLinkedSkillEnvRefused(t *testing.T) {
	dir, _ := skillDir(t)
	root := filepath.Join(dir, "pdf-tools")
	writeFile(t, filepath.Join(dir, "other", "SKILL.md"), "---\nname: other\ndescription: Another.\n---\nbody\n")
	writeFile(t, filepath.Join(dir, "other", "ref", ".skillenv"), "OTHER=0th3r-secret\n")
	links := map[string]string{
		"notes.txt":          filepath.Join(root, ".skillenv"),
		"scripts/env.py":     filepath.Join(root, ".skillenv"),
		"ref/other-env.json": filepath.Join(dir, "other", "ref", ".skillenv"),
	}
	for rel, target := range links {
		if err := os.Link(target, filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A .skillenv made after the scan, and linked at once, counts too.
	writeFile(t, filepath.Join(dir, "other", ".skillenv"), "LATE=l4te-secret\n")
	if err := os.Link(filepath.Join(dir, "other", ".skillenv"), filepath.Join(dir, "other", "late.txt")); err != nil {
		t.Fatal(err)
	}
	links["late.txt"] = ""
	for rel := range links {
		name := "pdf-tools"
		if rel == "late.txt" {
			name = "other"
		}
		c, e := r.Open(name, rel)
		if e == nil {
			t.Errorf("Open(%s, %s) served the secret: %q", name, rel, readAll(t, c))
			c.Close()
			continue
		}
		if e.Code != smcp.CodeSkillResourceNotAccessible || e.Details["reason"] != ReasonForbidden {
			t.Errorf("Open(%s, %s) = %v, want 4017 forbidden", name, rel, e)
		}
	}
	c, e := r.Open("pdf-tools", "scripts/x.py")
	if e != nil {
		t.Fatalf("an ordinary file is refused: %v", e)
	}
	c.Close()
}
