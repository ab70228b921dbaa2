// Package testbrowser starts headless Chromium for a test (chromedp): the
// console's browser tests and the OAuth sign-in tests drive it.
package testbrowser

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// Path finds Debian's chromium (or another Chrome).
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return testdeps.Program(t, "chromium", "chromium")
}

// Start starts headless chrome (1400 x 1000, a profile of its own) for the
// life of ctx and t, and returns the context to run its actions in.
func Start(t testing.TB, ctx context.Context, chrome string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile(t)),
		chromedp.WindowSize(1400, 1000),
	)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	// The browser starts with the first Run, and lives as long as that
	// Run's context: this one, not a step's.
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("starting %s: %v", chrome, err)
	}
	return browser
}

// profile is a fresh profile folder, removed when the test ends (chromium
// may still be writing to it for a moment after it is told to quit).
func profile(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "smcp-test-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("removing the browser profile %s: %v", dir, err)
	})
	return dir
}
