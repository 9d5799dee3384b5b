// Package browsertest drives the pages in headless Chromium for the
// tests: one browser per test, tabs that fail their test on any dialog,
// uncaught exception or Content-Security-Policy violation, and the checks
// every page must pass (it fits a phone's width; WCAG 2.1 AA as far as a
// script can check it).
package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/tools"
)

// Start starts Chromium (Debian's chromium, found or failing t as
// tools.Find does) for t, closed when t ends, and returns its context.
func Start(t testing.TB) context.Context {
	t.Helper()
	exe := tools.Find(t, "chromium")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return browser
}

// Tab opens a tab of browser for t, bounded by timeout. JavaScript dialogs
// are recorded and dismissed; when t ends it fails on any dialog, uncaught
// exception or Content-Security-Policy violation the pages caused.
func Tab(t *testing.T, browser context.Context, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	var (
		mu       sync.Mutex
		problems []string
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *cdppage.EventJavascriptDialogOpening:
			problems = append(problems, "dialog: "+ev.Message)
			go chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{})
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+exceptionText(ev.ExceptionDetails))
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				problems = append(problems, "security: "+ev.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatalf("open tab: %v", err)
	}
	// The tab's first run starts it on its own context: a first run on a
	// shorter one would close the tab when that one ends.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	})
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	return ctx
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

// Do runs steps, failing t with what when one fails.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval is the value of js in the page.
func Eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// Text is the text content of the element sel selects.
func Text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// Screenshot saves the whole page as dir/<name>.png, for a person to look
// at.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FitsWidth fails t when the page scrolls sideways.
func FitsWidth(t testing.TB, ctx context.Context) {
	t.Helper()
	if w := Eval[[]int](t, ctx, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px viewport", w[0], w[1])
	}
}

// wcagAudit lists what a page shows that WCAG 2.1 AA would refuse, among
// the checks a script can make: a visible form control without an
// accessible name, a section named by no heading, a document without its
// language, and visible text whose contrast with the background behind it
// is under 4.5:1 (3:1 for large text: 24 px, or 18.66 px bold).
const wcagAudit = `(() => {
  const out = [];
  if (!document.documentElement.lang) out.push('the document has no lang');
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  for (const el of document.querySelectorAll('input:not([type=hidden]), textarea, select, button')) {
    if (!visible(el)) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.textContent.trim();
    if (!named) out.push('a ' + el.tagName.toLowerCase() + ' without a name: ' + el.outerHTML.slice(0, 80));
  }
  for (const el of document.querySelectorAll('[aria-labelledby]')) {
    for (const id of el.getAttribute('aria-labelledby').split(/\s+/)) {
      if (!document.getElementById(id)) out.push('aria-labelledby names a missing ' + id);
    }
  }
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll('body *')) {
    if (!visible(el) || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const st = getComputedStyle(el);
    const fg = rgb(st.color).slice(0, 3), bg = background(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) out.push('contrast ' + ratio.toFixed(2) + ' under ' + need + ': ' + el.textContent.trim().slice(0, 40));
  }
  return out;
})()`

// Accessible fails t with every finding of wcagAudit on the page.
func Accessible(t testing.TB, ctx context.Context) {
	t.Helper()
	for _, f := range Eval[[]string](t, ctx, wcagAudit) {
		t.Errorf("accessibility: %s", f)
	}
}
