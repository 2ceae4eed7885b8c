package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromePath finds a Chromium: $AGENTSESSION_CHROME, else the first of
// the usual names on PATH, else /usr/bin/chromium.
func chromePath() string {
	if p := os.Getenv("AGENTSESSION_CHROME"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// browser is one headless Chromium with a tab, and the errors the page
// reported.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// newBrowser starts Chromium for t, or skips t when there is none. The
// flags keep it off the network (this machine has none: without them
// Chromium waits on connections) and away from any profile.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromePath()
	if path == "" {
		t.Skip("no Chromium found (set AGENTSESSION_CHROME, or install Debian's chromium package): the browser test is skipped")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("Chromium at %s does not start: %v", path, err)
	}
	b := &browser{ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleException, chromedp.ConsoleError, chromedp.ConsoleWarning, "assert":
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// reported returns the errors and warnings the page reported so far.
func (b *browser) reported() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// noErrors fails t with every error and warning the page reported.
func (b *browser) noErrors(t *testing.T) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // the last messages on their way
	require.Empty(t, b.reported(), "the page reported errors")
}

func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(b.ctx, actions...))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluating %s", expr)
	return v
}

// viewport sets the page's size; mobile emulates a phone (the viewport
// meta honoured, three device pixels to a CSS pixel).
func viewport(w, h int64, mobile bool) chromedp.Action[chromedp.Void] {
	if mobile {
		return chromedp.EmulateViewport(w, h, chromedp.EmulateScale(3), chromedp.EmulateMobile)
	}
	return chromedp.EmulateViewport(w, h)
}

// shot saves a screenshot of the viewport as name in a temporary
// directory, and in $AGENTSESSION_SCREENSHOTS when it is set.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	b.do(t, settle()) // a frame drawn with the latest changes
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dirs := []string{screenshotDir(t)}
	if d := os.Getenv("AGENTSESSION_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		require.NoError(t, os.WriteFile(p, png, 0o644))
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}
}

var (
	shotDirOnce sync.Once
	shotDir     string
)

// screenshotDir is one temporary directory for the run's screenshots,
// kept after the tests so they can be looked at.
func screenshotDir(t *testing.T) string {
	shotDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "agentsession-screenshots-")
		if err == nil {
			shotDir = d
		}
	})
	if shotDir == "" {
		return t.TempDir()
	}
	return shotDir
}

// fileURL is the URL of a local file.
func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// The harness itself: an error, an exception and a blocked fetch in a
// page are all seen.
func TestHarnessSeesErrors(t *testing.T) {
	b := newBrowser(t)
	path := filepath.Join(t.TempDir(), "bad.html")
	require.NoError(t, os.WriteFile(path, []byte(`<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
<img src="https://example.invalid/x.png"><script>console.error("boom"); setTimeout(() => { throw new Error("bang") }, 0)</script>`), 0o644))
	b.do(t, chromedp.Navigate(fileURL(path)), chromedp.Sleep(300*time.Millisecond))
	all := strings.Join(b.reported(), "\n")
	assert.Contains(t, all, "boom")
	assert.Contains(t, all, "bang")
	assert.Contains(t, all, "example.invalid", "the policy refused the image")
}
