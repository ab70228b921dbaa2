package docserver

import (
	"regexp"
	"strings"
	"testing"
)

func TestDocRef(t *testing.T) {
	urlSafe := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{6}$`)
	tests := map[string]string{
		"report.md":                        "report-",
		"Q3 Sales_Report.CSV":              "q3-sales-report-",
		"a/report.md":                      "report-",
		"年度报告.pdf":                         "doc-",
		"--weird--name--.txt":              "weird-name-",
		strings.Repeat("long", 20) + ".md": strings.Repeat("long", 6) + "-",
	}
	seen := map[string]string{}
	for rel, prefix := range tests {
		ref := docRef(rel)
		if !strings.HasPrefix(ref, prefix) || !urlSafe.MatchString(ref) {
			t.Errorf("docRef(%q) = %q, want prefix %q and a URL-safe form", rel, ref, prefix)
		}
		if other, dup := seen[ref]; dup {
			t.Errorf("%q and %q share doc_ref %q", rel, other, ref)
		}
		seen[ref] = rel
		if docRef(rel) != ref {
			t.Errorf("docRef(%q) is not stable", rel)
		}
	}
	if docRef("report.md") == docRef("report.pdf") {
		t.Error("report.md and report.pdf share a doc_ref")
	}
}
