package windowuri

import (
	"errors"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		raw     string
		want    URI
		dropped string
		str     string
	}{
		{"window://com.example.browser/main/tab1", URI{"com.example.browser", []string{"main", "tab1"}}, "", "window://com.example.browser/main/tab1"},
		{"window://com.example.logger", URI{"com.example.logger", nil}, "", "window://com.example.logger"},
		{"window://com.example.editor/src%2Fmain/file%20name", URI{"com.example.editor", []string{"src/main", "file name"}}, "", "window://com.example.editor/src%2Fmain/file%20name"},
		{"window://h/a/c%2Fd", URI{"h", []string{"a", "c/d"}}, "", "window://h/a/c%2Fd"},
		{"WINDOW://h/x", URI{"h", []string{"x"}}, "", "window://h/x"},
		{"window://h/", URI{"h", []string{""}}, "", "window://h/"},
		{"window://h/a//b", URI{"h", []string{"a", "", "b"}}, "", "window://h/a//b"},
		{"window://h/%E7%BC%96%E8%BE%91%E5%99%A8", URI{"h", []string{"编辑器"}}, "", "window://h/%E7%BC%96%E8%BE%91%E5%99%A8"},
		{"window://h/a+b:c@d", URI{"h", []string{"a+b:c@d"}}, "", "window://h/a+b:c@d"},
		{"window://com.example.browser/main?priority=0.8&fullscreen=true", URI{"com.example.browser", []string{"main"}}, "?priority=0.8&fullscreen=true", "window://com.example.browser/main"},
		{"window://h/main#frag", URI{"h", []string{"main"}}, "#frag", "window://h/main"},
		{"window://h?", URI{"h", nil}, "?", "window://h"},
	}
	for _, tc := range tests {
		u, dropped, err := Parse(tc.raw)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.raw, err)
		}
		if !reflect.DeepEqual(u, tc.want) || dropped != tc.dropped {
			t.Errorf("Parse(%q) = %+v, %q; want %+v, %q", tc.raw, u, dropped, tc.want, tc.dropped)
		}
		if got := u.String(); got != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.raw, got, tc.str)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, raw := range []string{
		"", "window:", "window:/h", "window://", "window:///a", "window://?q=1", "dpe://h/a", "http://h",
		"window://%zz", "window://h/%zz", "window://h/a%2", "window://h/\xff", "window://%FF/a", "windows://h",
	} {
		_, _, err := Parse(raw)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalid", raw, err)
		}
		if _, err := Check(raw); !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%q) error = %v, want ErrInvalid", raw, err)
		}
	}
}

func TestBuild(t *testing.T) {
	got, err := Build("com.example.editor", "src/main", "file name")
	if err != nil || got != "window://com.example.editor/src%2Fmain/file%20name" {
		t.Errorf("Build = %q, %v", got, err)
	}
	got, err = Build("com.example.logger")
	if err != nil || got != "window://com.example.logger" {
		t.Errorf("Build = %q, %v", got, err)
	}
	for _, tc := range []struct {
		host string
		path []string
	}{{"", nil}, {"\xff", nil}, {"h", []string{"\xfe"}}} {
		if _, err := Build(tc.host, tc.path...); !errors.Is(err, ErrInvalid) {
			t.Errorf("Build(%q, %q) error = %v", tc.host, tc.path, err)
		}
	}
}

func TestIsWindow(t *testing.T) {
	for raw, want := range map[string]bool{"window://h": true, "Window://": true, "window:/h": false, "dpe://h": false, "": false} {
		if IsWindow(raw) != want {
			t.Errorf("IsWindow(%q) = %v", raw, !want)
		}
	}
}

func roundTrip(t *testing.T, raw string) {
	u, dropped, err := Parse(raw)
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Parse(%q) error does not wrap ErrInvalid: %v", raw, err)
		}
		return
	}
	if len(dropped) > len(raw) || raw[len(raw)-len(dropped):] != dropped {
		t.Fatalf("Parse(%q) dropped %q, not a suffix", raw, dropped)
	}
	if d, err := Check(raw); err != nil || d != dropped {
		t.Fatalf("Check(%q) = %q, %v; Parse accepted it dropping %q", raw, d, err, dropped)
	}
	s, err := Build(u.Host, u.Path...)
	if err != nil {
		t.Fatalf("Parse(%q) accepted but Build refused %+v: %v", raw, u, err)
	}
	u2, dropped2, err := Parse(s)
	if err != nil || dropped2 != "" {
		t.Fatalf("Parse(%q) -> %q: %v, dropped %q", raw, s, err, dropped2)
	}
	if !reflect.DeepEqual(u, u2) {
		t.Fatalf("round trip of %q via %q: got %+v, want %+v", raw, s, u2, u)
	}
	if u2.String() != s {
		t.Fatalf("String not canonical: %q then %q", s, u2.String())
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"window://com.example.browser/main/tab1", "window://h", "window://h/c%2Fd?x=1", "window://h//", "window://", "", "window://h/a#b",
	} {
		f.Add(seed)
	}
	f.Fuzz(roundTrip)
}

func TestParseLegacy(t *testing.T) {
	for _, c := range []struct {
		dropped  string
		want     Legacy
		problems int
	}{
		{"", Legacy{}, 0},
		{"?priority=80&fullscreen=true", Legacy{Priority: 0.8, HasPriority: true, Fullscreen: true, HasFullscreen: true}, 0},
		{"?fullscreen=0", Legacy{HasFullscreen: true}, 0},
		{"?priority=100#frag", Legacy{Priority: 1, HasPriority: true}, 0},
		{"?other=x&priority=0", Legacy{HasPriority: true}, 0},
		{"?priority=250&fullscreen=maybe", Legacy{}, 2},
		{"?priority=abc", Legacy{}, 1},
		{"#priority=50", Legacy{}, 0},
	} {
		got, problems := ParseLegacy(c.dropped)
		if got != c.want || len(problems) != c.problems {
			t.Errorf("ParseLegacy(%q) = %+v %q, want %+v and %d problems", c.dropped, got, problems, c.want, c.problems)
		}
	}
	_, dropped, err := Parse("window://ide/editor?priority=60&fullscreen=false")
	if l, _ := ParseLegacy(dropped); err != nil || !l.HasPriority || l.Priority != 0.6 || !l.HasFullscreen {
		t.Fatalf("from Parse: %q %v %+v", dropped, err, l)
	}
}

// FuzzParseLegacy: any query reads without panicking, and what it yields is
// in range (priority 0..1).
func FuzzParseLegacy(f *testing.F) {
	for _, s := range []string{"?priority=80&fullscreen=true", "?priority=%31%30", "?fullscreen=maybe#x", "?priority=1e2", "?=&&priority", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		l, _ := ParseLegacy(q)
		if l.HasPriority && !(l.Priority >= 0 && l.Priority <= 1) {
			t.Fatalf("ParseLegacy(%q) priority %v", q, l.Priority)
		}
		if !l.HasFullscreen && l.Fullscreen {
			t.Fatalf("ParseLegacy(%q): fullscreen without HasFullscreen", q)
		}
	})
}
