package traces_test

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"42sisters.ai/oracle/infra/browsertest"
	"42sisters.ai/oracle/infra/local/traces"
)

// artifacts is where the screenshots go: test-artifacts/traces at the
// repository root (git-ignored), for a person to look at.
var artifacts = filepath.Join("..", "..", "..", "test-artifacts", "traces")

// Bar is one waterfall row as Chromium lays it out.
type Bar struct {
	ID, Parent, Name, Service  string
	Left, Right, Width, Height float64
	TrackLeft, TrackRight      float64
	Indent                     float64
	Error, Orphan              bool
}

// bars reads every row of the page's waterfalls from the DOM.
const bars = `[...document.querySelectorAll('table.waterfall tr[data-span-id]')].map(tr => {
  const bar = tr.querySelector('.bar').getBoundingClientRect(), track = tr.querySelector('.track').getBoundingClientRect();
  return {ID: tr.dataset.spanId, Parent: tr.dataset.parentId, Name: tr.querySelector('summary').textContent, Service: tr.cells[1].textContent,
    Left: bar.left, Right: bar.right, Width: bar.width, Height: bar.height, TrackLeft: track.left, TrackRight: track.right,
    Indent: parseFloat(getComputedStyle(tr.cells[0]).paddingLeft),
    Error: !!tr.querySelector('.mark:not(.orphan)'), Orphan: !!tr.querySelector('.mark.orphan')};
})`

// TestWaterfallInChromium renders a paid order's trace in headless
// Chromium under the page's CSP (the tab fails on any violation): every
// span is a row with its name and service and a visible bar, every bar
// inside the axis all rows share, placed and sized by its start and
// duration, no child starting before its parent nor indented less, the
// failed span marked; the screenshot is saved, and the page, the 404 page
// and the index pass the accessibility audit.
func TestWaterfallInChromium(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	spans := sample()
	store.Add(spans)
	browser := browsertest.Start(t)

	t.Run("waterfall", func(t *testing.T) {
		tab := browsertest.Tab(t, browser, 30*time.Second)
		browsertest.Do(t, tab, "open the waterfall",
			chromedp.Navigate(srv.URL+traces.PagePath+sampleOrder), chromedp.WaitVisible(chromedp.CSS("table.waterfall")))
		browsertest.Screenshot(t, tab, artifacts, "waterfall")
		browsertest.Accessible(t, tab)
		browsertest.FitsWidth(t, tab)
		rows := browsertest.Eval[[]Bar](t, tab, bars)
		mine := spans[:len(spans)-1] // the last is another order's
		if len(rows) != len(mine) {
			t.Fatalf("%d rows, want one per span: %d", len(rows), len(mine))
		}
		byID := map[string]Bar{}
		for _, r := range rows {
			byID[r.ID] = r
		}
		first, last := mine[0].Start, mine[0].End
		for _, s := range mine {
			first, last = min(first, s.Start), max(last, s.End)
		}
		axis := rows[0]
		for _, s := range mine {
			r, ok := byID[s.SpanID]
			switch {
			case !ok:
				t.Errorf("span %s (%s) has no row", s.SpanID, s.Name)
				continue
			case r.Name != s.Name || r.Service != s.Service:
				t.Errorf("row %s shows %q of %q, want %q of %q", s.SpanID, r.Name, r.Service, s.Name, s.Service)
			case r.Width < 2 || r.Height < 1:
				t.Errorf("%s: the bar is %.1f×%.1f px, not visible", s.Name, r.Width, r.Height)
			case r.Left < r.TrackLeft-0.5 || r.Right > r.TrackRight+0.5:
				t.Errorf("%s: the bar [%.1f, %.1f] leaves the axis [%.1f, %.1f]", s.Name, r.Left, r.Right, r.TrackLeft, r.TrackRight)
			case r.TrackLeft != axis.TrackLeft || r.TrackRight != axis.TrackRight:
				t.Errorf("%s: its axis [%.1f, %.1f] is not the others' [%.1f, %.1f]", s.Name, r.TrackLeft, r.TrackRight, axis.TrackLeft, axis.TrackRight)
			}
			span := r.TrackRight - r.TrackLeft
			wantLeft := r.TrackLeft + float64(s.Start-first)/float64(last-first)*span
			wantWidth := float64(s.End-s.Start) / float64(last-first) * span
			// Within 2.5 px: a bar at least 2 px wide still ends inside the axis.
			if math.Abs(r.Left-wantLeft) > 2.5 || math.Abs(r.Width-max(wantWidth, 2)) > 2.5 {
				t.Errorf("%s: the bar is at %.1f, %.1f px wide; its start and duration put it at %.1f, %.1f wide", s.Name, r.Left, r.Width, wantLeft, wantWidth)
			}
			if r.Error != (s.Status.Code == "error") {
				t.Errorf("%s: error mark %v, status %q", s.Name, r.Error, s.Status.Code)
			}
			if p, ok := byID[s.ParentSpanID]; ok {
				if r.Left < p.Left-0.5 {
					t.Errorf("%s starts at %.1f px, before its parent %s at %.1f", s.Name, r.Left, p.Name, p.Left)
				}
				if r.Indent <= p.Indent {
					t.Errorf("%s is indented %.1f px, not more than its parent %s (%.1f)", s.Name, r.Indent, p.Name, p.Indent)
				}
			} else if r.Orphan != (s.ParentSpanID != "") {
				t.Errorf("%s: orphan mark %v with parent %q not received", s.Name, r.Orphan, s.ParentSpanID)
			}
		}
	})
	for _, c := range []struct{ name, path, wait string }{
		{"unknown order", traces.PagePath + "cs_test_unknown", "h1"},
		{"index", traces.PagePath, "ul.orders"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := browsertest.Tab(t, browser, 30*time.Second)
			browsertest.Do(t, tab, "open "+c.path, chromedp.Navigate(srv.URL+c.path), chromedp.WaitVisible(chromedp.CSS(c.wait)))
			browsertest.Accessible(t, tab)
			browsertest.FitsWidth(t, tab)
		})
	}
}
