package organize

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func win(server, uri string, index int, texts ...string) Window {
	return Window{Server: server, URI: uri, Index: index, Texts: texts}
}

func TestDesktopSize(t *testing.T) {
	windows := []Window{
		win("a", "window://a/1", 0, "one"),
		win("a", "window://a/2", 1, "two"),
		win("b", "window://b/1", 0, "three"),
	}
	all := []string{"window://a/1\n\none", "window://a/2\n\ntwo", "window://b/1\n\nthree"}
	tests := []struct {
		name string
		size *int
		want []string
	}{
		{"nil means all", nil, all},
		{"zero means none", new(0), []string{}},
		{"negative means none", new(-3), []string{}},
		{"global cap across servers", new(2), all[:2]},
		{"cap reaching into the second server", new(3), all},
		{"cap above total", new(10), all},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings := Desktop(windows, tc.size, nil)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Desktop = %q, want %q", got, tc.want)
			}
			if len(warnings) != 0 {
				t.Errorf("unexpected warnings %v", warnings)
			}
		})
	}
}

func TestDesktopFilter(t *testing.T) {
	windows := []Window{
		{Server: "s", URI: "window://s/empty", Index: 0},
		{Server: "s", URI: "http://s/not-a-window", Index: 1, Texts: []string{"x"}},
		{Server: "s", URI: "window:///no-host", Index: 2, Texts: []string{"x"}},
		{Server: "s", URI: "window://s/blob", Index: 3, Blobs: 2},
		{Server: "s", URI: "window://s/mixed", Index: 4, Texts: []string{"text part"}, Blobs: 1},
		{Server: "s", URI: "window://s/ok", Index: 5, Texts: []string{"fine"}},
	}
	got, warnings := Desktop(windows, nil, nil)
	want := []string{"window://s/mixed\n\ntext part", "window://s/ok\n\nfine"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Desktop = %q, want %q", got, want)
	}
	warned := map[string]string{}
	for _, w := range warnings {
		warned[w.URI] = w.Reason
	}
	for _, uri := range []string{"http://s/not-a-window", "window:///no-host", "window://s/blob", "window://s/mixed"} {
		if _, ok := warned[uri]; !ok {
			t.Errorf("no warning for %s (warnings: %v)", uri, warnings)
		}
	}
	if _, ok := warned["window://s/empty"]; ok || len(warnings) != 4 {
		t.Errorf("warnings = %v, want exactly the 4 problem windows", warnings)
	}
}

func TestDesktopServerOrder(t *testing.T) {
	var windows []Window
	for _, s := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		windows = append(windows, win(s, "window://"+s+"/w", 0, s))
	}
	tests := []struct {
		history []string
		want    []string
	}{
		{nil, []string{"alpha", "bravo", "charlie", "delta", "echo"}},
		// Most recent call last in the history; duplicates count once, at their most recent use.
		{[]string{"echo", "charlie", "echo", "delta"}, []string{"delta", "echo", "charlie", "alpha", "bravo"}},
		// History names without windows are ignored.
		{[]string{"ghost", "bravo", "ghost"}, []string{"bravo", "alpha", "charlie", "delta", "echo"}},
	}
	for _, tc := range tests {
		got, _ := Desktop(windows, nil, tc.history)
		var servers []string
		for _, e := range got {
			servers = append(servers, strings.Split(e, "\n\n")[1])
		}
		if !reflect.DeepEqual(servers, tc.want) {
			t.Errorf("history %v: order %v, want %v", tc.history, servers, tc.want)
		}
	}
}

func TestDesktopPriority(t *testing.T) {
	windows := []Window{
		{Server: "s", URI: "window://s/low", Index: 0, Priority: 0.1, Texts: []string{"low"}},
		{Server: "s", URI: "window://s/high", Index: 1, Priority: 0.9, Texts: []string{"high"}},
		{Server: "s", URI: "window://s/tie-b", Index: 3, Priority: 0.5, Texts: []string{"tie-b"}},
		{Server: "s", URI: "window://s/tie-a", Index: 2, Priority: 0.5, Texts: []string{"tie-a"}},
		{Server: "s", URI: "window://s/over", Index: 4, Priority: 1.5, Texts: []string{"over"}},
		{Server: "s", URI: "window://s/under", Index: 5, Priority: -0.2, Texts: []string{"under"}},
		{Server: "s", URI: "window://s/nan", Index: 6, Priority: math.NaN(), Texts: []string{"nan"}},
		{Server: "s", URI: "window://s/one", Index: 7, Priority: 1, Texts: []string{"one"}},
		{Server: "s", URI: "window://s/default", Index: 8, Texts: []string{"default"}},
	}
	got, warnings := Desktop(windows, nil, nil)
	var order []string
	for _, e := range got {
		order = append(order, strings.TrimPrefix(strings.SplitN(e, "\n\n", 2)[0], "window://s/"))
	}
	// Out-of-range priorities count as 0 and keep their index order among the zeros.
	want := []string{"one", "high", "tie-a", "tie-b", "low", "over", "under", "nan", "default"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if len(warnings) != 3 {
		t.Errorf("want 3 priority warnings, got %v", warnings)
	}
	if windows[4].Priority != 1.5 {
		t.Error("Desktop modified its input")
	}
}

func TestDesktopFullscreenPerServer(t *testing.T) {
	windows := []Window{
		// Server a: two fullscreen windows; the smaller Index wins even though it
		// comes later in the input and has the lower priority.
		{Server: "a", URI: "window://a/full-late", Index: 5, Priority: 0.9, Fullscreen: true, Texts: []string{"x"}},
		{Server: "a", URI: "window://a/plain", Index: 0, Priority: 1, Texts: []string{"x"}},
		{Server: "a", URI: "window://a/full-first", Index: 2, Priority: 0.1, Fullscreen: true, Texts: []string{"x"}},
		// Server b: its own fullscreen window is kept too.
		{Server: "b", URI: "window://b/plain", Index: 0, Texts: []string{"x"}},
		{Server: "b", URI: "window://b/full", Index: 1, Fullscreen: true, Texts: []string{"x"}},
		// Server c: a fullscreen window that is filtered out (blob only) does not count.
		{Server: "c", URI: "window://c/full-blob", Index: 0, Fullscreen: true, Blobs: 1},
		{Server: "c", URI: "window://c/one", Index: 1, Texts: []string{"x"}},
		{Server: "c", URI: "window://c/two", Index: 2, Texts: []string{"x"}},
	}
	got, _ := Desktop(windows, nil, nil)
	var uris []string
	for _, e := range got {
		uris = append(uris, strings.SplitN(e, "\n\n", 2)[0])
	}
	want := []string{"window://a/full-first", "window://b/full", "window://c/one", "window://c/two"}
	if !reflect.DeepEqual(uris, want) {
		t.Errorf("uris %v, want %v", uris, want)
	}
	// The size cap still applies across fullscreen servers.
	got, _ = Desktop(windows, new(1), nil)
	if len(got) != 1 || !strings.HasPrefix(got[0], "window://a/full-first") {
		t.Errorf("size 1: %q", got)
	}
}

func TestDesktopRender(t *testing.T) {
	tests := []struct {
		w    Window
		want string
	}{
		{win("s", "window://s/a", 0, "first", "second"), "window://s/a\n\nfirst\n\nsecond"},
		{win("s", "window://s/a", 0, ""), "window://s/a"},
		{win("s", "window://s/a?priority=0.8", 0, "body"), "window://s/a\n\nbody"},
		{win("s", "window://s/c%2Fd", 0, "x"), "window://s/c%2Fd\n\nx"},
	}
	for _, tc := range tests {
		got, warnings := Desktop([]Window{tc.w}, nil, nil)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("render %+v = %q, want %q", tc.w, got, tc.want)
		}
		if strings.Contains(tc.w.URI, "?") != (len(warnings) == 1) {
			t.Errorf("render %+v warnings %v", tc.w, warnings)
		}
	}
}

func TestDesktopEmpty(t *testing.T) {
	got, warnings := Desktop(nil, nil, []string{"a"})
	if got == nil || len(got) != 0 || warnings != nil {
		t.Errorf("Desktop(nil) = %#v, %v", got, warnings)
	}
}

func BenchmarkDesktop10k(b *testing.B) {
	windows := make([]Window, 10000)
	for i := range windows {
		server := fmt.Sprintf("server-%02d", i%20)
		windows[i] = Window{
			Server:     server,
			URI:        fmt.Sprintf("window://%s/w%d", server, i),
			Priority:   float64(i%7) / 7,
			Fullscreen: i%1000 == 3,
			Index:      i / 20,
			Texts:      []string{"status line", "second body"},
		}
	}
	history := []string{"server-03", "server-11", "server-03", "server-07"}
	b.ReportAllocs()
	defer cpuTimer(b)()
	for b.Loop() {
		out, _ := Desktop(windows, nil, history)
		if len(out) == 0 {
			b.Fatal("empty desktop")
		}
	}
}

func TestFullscreenFromMeta(t *testing.T) {
	tests := []struct {
		meta   map[string]any
		full   bool
		wantOK bool
	}{
		{nil, false, true},
		{map[string]any{}, false, true},
		{map[string]any{"fullscreen": nil}, false, true},
		{map[string]any{"fullscreen": true}, true, true},
		{map[string]any{"fullscreen": false}, false, true},
		{map[string]any{"fullscreen": "true"}, false, false},
		{map[string]any{"fullscreen": 1.0}, false, false},
	}
	for _, tc := range tests {
		full, ok := FullscreenFromMeta(tc.meta)
		if full != tc.full || ok != tc.wantOK {
			t.Errorf("FullscreenFromMeta(%v) = %v, %v", tc.meta, full, ok)
		}
	}
}
