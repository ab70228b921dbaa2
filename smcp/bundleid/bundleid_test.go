package bundleid

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const vectorsFile = "bundle_id_conformance_vectors.json"

// fixture reads a vector file from the repository's copy.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "protocol-fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The repository's copy of the vectors is the specification's: when the
// shared checkout sits beside the repository (CI, the project's machine),
// the two must be byte-identical.
func TestVectorCopyUnchanged(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the package")
		}
		root = parent
	}
	for _, name := range []string{vectorsFile, "auth_error_conformance_vectors.json"} {
		shared, err := os.ReadFile(filepath.Join(root, "..", "shared", "protocol-fixtures", name))
		if os.IsNotExist(err) {
			t.Logf("%s: no ../shared/protocol-fixtures beside the repository; the copy is not compared", name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(shared, fixture(t, name)) {
			t.Errorf("smcp/testdata/protocol-fixtures/%s differs from ../shared/protocol-fixtures/%s", name, name)
		}
	}
}

// Every vector of the specification's bundle id file (§5.2), through the
// same path the computer takes: the identity read from the raw object.
func TestConformanceVectors(t *testing.T) {
	var file struct {
		Vectors []struct {
			Desc     string         `json:"desc"`
			Name     string         `json:"name"`
			Config   map[string]any `json:"config"`
			Expected string         `json:"expected_bundle_id"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(fixture(t, vectorsFile), &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) != 16 {
		t.Fatalf("%d vectors, the file of tag v0.3.0 has 16", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		var explicit *string
		if s, ok := v.Config["bundle_id"].(string); ok {
			explicit = &s
		}
		got, err := Resolve(v.Name, explicit, IdentityOf(v.Config))
		if err != nil || got != v.Expected {
			t.Errorf("%s: name %q: got %q (%v), want %q", v.Desc, v.Name, got, err, v.Expected)
		}
		// The SDK shape (transport under server_parameters) gives the same id.
		sdk := map[string]any{"type": v.Config["type"], "server_parameters": v.Config}
		if got := Derive(v.Name, IdentityOf(sdk)); explicit == nil && got != v.Expected {
			t.Errorf("%s: SDK shape: got %q, want %q", v.Desc, got, v.Expected)
		}
	}
}

// The framing of §5.2 spelled out for one stdio config, so that a change of
// the byte layout fails here with a readable diff and not only as a hash.
func TestFrame(t *testing.T) {
	id := Identity{Type: "stdio", Command: "node", Args: []string{"a.js"}, Env: map[string]string{"TOKEN": "x", "DEBUG": "1"}}
	want := []byte("\x00\x00\x00\x05stdio" + "\x00\x00\x00\x04node" +
		"\x00\x00\x00\x01" + "\x00\x00\x00\x04a.js" +
		"\x00\x00\x00\x02" + "\x00\x00\x00\x05DEBUG\x00\x00\x00\x011" + "\x00\x00\x00\x05TOKEN\x00\x00\x00\x01x")
	if got := id.Frame(); !bytes.Equal(got, want) {
		t.Errorf("frame\n got %q\nwant %q", got, want)
	}
	// A null env and an empty one are the same (count 0).
	a := Identity{Type: "sse", URL: "u"}
	b := Identity{Type: "sse", URL: "u", Headers: map[string]string{}}
	if !bytes.Equal(a.Frame(), b.Frame()) {
		t.Error("nil and empty headers frame differently")
	}
}

func TestCheck(t *testing.T) {
	for _, bad := range []string{"", "a__b", "a.b", "a b", "ü", "__"} {
		if Check(bad) == nil {
			t.Errorf("Check(%q) accepted", bad)
		}
		if _, err := Resolve("x", &bad, Identity{}); err == nil {
			t.Errorf("Resolve with explicit %q accepted", bad)
		}
	}
	for _, good := range []string{"a", "a_b", "a-b--c", "_a", "A9-_"} {
		if err := Check(good); err != nil {
			t.Errorf("Check(%q): %v", good, err)
		}
	}
}

func TestIdentityOfScalars(t *testing.T) {
	// YAML reads "args: [-p, 8080]" with a number: it is hashed as written.
	got := IdentityOf(map[string]any{"type": "stdio", "server_parameters": map[string]any{
		"command": "srv", "args": []any{"-p", 8080.0, true}, "env": nil}})
	if strings.Join(got.Args, " ") != "-p 8080 true" || got.Env != nil {
		t.Errorf("identity %+v", got)
	}
}

var idShape = regexp.MustCompile(`^(bundle_[0-9a-f]{16}|[A-Za-z0-9]([A-Za-z0-9-]|_[A-Za-z0-9-])*)$`)

// FuzzDerive: whatever the name and transport, the id is a valid bundle
// id (Check accepts it, so an exposed name built on it splits back on its
// first "__"), normalising is idempotent, and the same input gives the
// same id.
func FuzzDerive(f *testing.F) {
	for _, s := range []string{"everything", "My Server!", "a__b", "你好世界", "", "__-_", "a\xffb", "-x-"} {
		f.Add(s, "npx", "-y", "https://h/mcp")
	}
	f.Fuzz(func(t *testing.T, name, command, arg, url string) {
		n := Normalize(name)
		if Normalize(n) != n {
			t.Fatalf("Normalize(%q) = %q is not a fixed point", name, n)
		}
		if strings.HasPrefix(n, "_") || strings.HasPrefix(n, "-") || strings.HasSuffix(n, "_") || strings.HasSuffix(n, "-") {
			t.Fatalf("Normalize(%q) = %q keeps an end", name, n)
		}
		for _, id := range []Identity{
			{Type: "stdio", Command: command, Args: []string{arg}, Env: map[string]string{arg: url}},
			{Type: "streamable", URL: url, Headers: map[string]string{command: arg}},
		} {
			got := Derive(name, id)
			if err := Check(got); err != nil {
				t.Fatalf("Derive(%q) = %q: %v", name, got, err)
			}
			if !idShape.MatchString(got) {
				t.Fatalf("Derive(%q) = %q has an unexpected shape", name, got)
			}
			if again := Derive(name, id); again != got {
				t.Fatalf("Derive(%q) not deterministic: %q then %q", name, got, again)
			}
			exposed := ExposedName(got, "tool__x")
			if b, _, _ := strings.Cut(exposed, Separator); b != got {
				t.Fatalf("exposed name %q does not start with its bundle id %q", exposed, got)
			}
		}
	})
}
