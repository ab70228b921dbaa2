package mcpfront_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/policy"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// skillsKey is an agent key of office A whose rule set denies the skill
// "secret" (every file of it).
const skillsKey = "mcp-key-skills-7e21"

// skillsBound is the gateway's MaxBlobBytes in the skills tests: data.bin
// is under it, big.bin over it.
const skillsBound = 200 << 10

// skillsOffice is a gateway whose office A has a real 0.4 computer "pc"
// with a skills folder: demo-skill (SKILL.md with license, allowed-tools
// and metadata; refs/guide.md; data.bin, over the computer's inline
// budget, so read through a blob handle; big.bin, over the gateway's
// bound) and secret, which skillsKey's rules deny.
func skillsOffice(t *testing.T) (g *gateway.Running, data []byte) {
	t.Helper()
	rules, err := policy.Compile(map[string][]policy.Rule{"no-secret": {{Deny: &policy.Match{Resource: "skill://secret"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := core.NewKeyRing(core.Key{Key: keyA, ID: "a", Offices: []string{"A"}},
		core.Key{Key: skillsKey, ID: "skills", Roles: []string{"agent"}, Offices: []string{"A"}, Rules: []string{"no-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	g = startGateway(t, gateway.Config{Auth: ring, Core: core.Config{Guard: policy.NewEngine(rules)},
		MCP: mcpfront.Options{MaxBlobBytes: skillsBound}})
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "demo-skill", "SKILL.md"), "---\nname: demo-skill\ndescription: A skill for the test.\n"+
		"license: Apache-2.0\nallowed-tools: Read Grep\nmetadata:\n  author: test\n---\n\n# Demo\n\nRead refs/guide.md. Do the thing.\n")
	testfiles.Write(t, filepath.Join(dir, "demo-skill", "refs", "guide.md"), "Guide.\n")
	data = make([]byte, 100<<10)
	for i := range data {
		data[i] = byte(i * 13)
	}
	testfiles.Write(t, filepath.Join(dir, "demo-skill", "data.bin"), string(data))
	testfiles.Write(t, filepath.Join(dir, "demo-skill", "big.bin"), strings.Repeat("x", 300<<10))
	testfiles.Write(t, filepath.Join(dir, "secret", "SKILL.md"), "---\nname: secret\ndescription: Not for skillsKey.\n---\n\nSecret.\n")
	joinComputer04(t, g, "pc", map[string]*config.Server{}, dir)
	return g, data
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcCall sends one JSON-RPC request and returns its result or error.
type rpcCall func(method string, params map[string]any) (json.RawMessage, *rpcErr)

// skillsSession opens an MCP 2025-11-25 session over bare HTTP: its
// initialize result and its calls.
func skillsSession(t *testing.T, g *gateway.Running) (json.RawMessage, rpcCall) {
	t.Helper()
	c := &rawSession{url: endpoint(g, "A"), key: skillsKey, client: &http.Client{}}
	id := 0
	call := func(method string, params map[string]any) (json.RawMessage, *rpcErr) {
		t.Helper()
		id++
		if params == nil {
			params = map[string]any{}
		}
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			t.Fatal(err)
		}
		answer, err := c.post(ctxT(t), body)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var a struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcErr         `json:"error"`
		}
		if err := json.Unmarshal(answer, &a); err != nil {
			t.Fatalf("%s: answer %q: %v", method, answer, err)
		}
		return a.Result, a.Error
	}
	init, e := call("initialize", map[string]any{"protocolVersion": sessionVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "skills-test", "version": "1"}})
	if e != nil || c.id == "" {
		t.Fatalf("initialize: %+v, session %q", e, c.id)
	}
	if _, err := c.post(ctxT(t), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(init, &r); err != nil {
		t.Fatal(err)
	}
	return r.Capabilities, call
}

// skillsStateless is MCP 2026-07-28 over bare HTTP: server/discover's
// capabilities and the calls, each a request of its own.
func skillsStateless(t *testing.T, g *gateway.Running) (json.RawMessage, rpcCall) {
	t.Helper()
	c := newRaw(t, g, "A", "x-api-key", skillsKey)
	call := func(method string, params map[string]any) (json.RawMessage, *rpcErr) {
		t.Helper()
		a := c.call(method, params)
		if a.Error != nil { // the go-sdk answers some with a 4xx status
			return nil, &rpcErr{Code: a.Error.Code, Message: a.Error.Message}
		}
		if a.status != http.StatusOK {
			t.Fatalf("%s: status %d", method, a.status)
		}
		return a.Result, nil
	}
	var disc struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	c.ok("server/discover", nil, &disc)
	return disc.Capabilities, call
}

// skillsListing is a skills/list or skills/get result.
type skillsListing struct {
	ResultType string          `json:"resultType"`
	TTLMs      *int            `json:"ttlMs"`
	CacheScope string          `json:"cacheScope"`
	NextCursor string          `json:"nextCursor"`
	Skills     []skillEntry    `json:"skills"`
	Skill      json.RawMessage `json:"skill"`
}

type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
}

// The MCP Skills extension (SEP-2640) in both MCP modes, spoken as bare
// JSON-RPC: the extension is declared; skills/list lists the office's
// skills the caller may read (secret is denied it) as the SEP's entries;
// skills/get returns a skill's entry and refuses what is no skill it may
// read; resources/read of the entry's URI gives SKILL.md with the very
// front matter the entry shows, and the skill's files by their relative
// paths (a binary one drained from its blob handle; one over the
// gateway's bound refused, naming it).
func TestSkillsExtension(t *testing.T) {
	g, data := skillsOffice(t)
	for _, mode := range []struct {
		name       string
		open       func(*testing.T, *gateway.Running) (json.RawMessage, rpcCall)
		resultType string
	}{
		{"session " + sessionVersion, skillsSession, ""},
		{"stateless " + newProtocol, skillsStateless, "complete"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			caps, call := mode.open(t, g)
			var c struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
				Resources  json.RawMessage            `json:"resources"`
			}
			if err := json.Unmarshal(caps, &c); err != nil || string(c.Extensions["io.modelcontextprotocol/skills"]) != "{}" || c.Resources == nil {
				t.Fatalf("capabilities %s: want the skills extension declared ({}) beside resources", caps)
			}

			ok := func(method string, params map[string]any) skillsListing {
				t.Helper()
				res, e := call(method, params)
				if e != nil {
					t.Fatalf("%s %v: %+v", method, params, e)
				}
				var l skillsListing
				if err := json.Unmarshal(res, &l); err != nil {
					t.Fatalf("%s: %s: %v", method, res, err)
				}
				if l.ResultType != mode.resultType || l.TTLMs == nil || *l.TTLMs != 0 || l.CacheScope != "private" {
					t.Errorf("%s: resultType %q (want %q), ttlMs %v, cacheScope %q: %s", method, l.ResultType, mode.resultType, l.TTLMs, l.CacheScope, res)
				}
				return l
			}
			var l skillsListing
			testwait.Until(t, "skills/list lists demo-skill", func() bool {
				l = ok("skills/list", nil)
				return len(l.Skills) > 0
			})
			const uri = "skill://pc/demo-skill/SKILL.md"
			if len(l.Skills) != 1 || l.NextCursor != "" {
				t.Fatalf("skills/list: %+v, want demo-skill alone (secret is denied)", l)
			}
			got := l.Skills[0]
			wantFM := map[string]any{"name": "demo-skill", "description": "A skill for the test.", "license": "Apache-2.0",
				"allowed-tools": "Read Grep", "metadata": map[string]any{"author": "test"}}
			if got.URI != uri || !reflect.DeepEqual(got.Frontmatter, wantFM) || string(got.Resources) != `"dynamic"` {
				t.Errorf("skills/list entry %+v (resources %s), want %s with front matter %v and resources \"dynamic\"", got, got.Resources, uri, wantFM)
			}

			g := ok("skills/get", map[string]any{"uri": uri})
			var entry skillEntry
			if err := json.Unmarshal(g.Skill, &entry); err != nil || !reflect.DeepEqual(entry, got) {
				t.Errorf("skills/get %s: %s, want the listing's entry %+v", uri, g.Skill, got)
			}
			for _, u := range []string{"skill://pc/secret/SKILL.md", "skill://pc/demo-skill/refs/guide.md",
				"skill://pc/nothing/SKILL.md", "skill://other/demo-skill/SKILL.md"} {
				if _, e := call("skills/get", map[string]any{"uri": u}); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "no skill is served at "+u) {
					t.Errorf("skills/get %s: %+v, want -32602 naming it", u, e)
				}
			}

			read := func(u string) (text string, blob []byte, e *rpcErr) {
				t.Helper()
				res, e := call("resources/read", map[string]any{"uri": u})
				if e != nil {
					return "", nil, e
				}
				var r struct {
					Contents []struct {
						URI, MIMEType, Text, Blob string
					} `json:"contents"`
				}
				if err := json.Unmarshal(res, &r); err != nil || len(r.Contents) != 1 || r.Contents[0].URI != u {
					t.Fatalf("resources/read %s: %s", u, res)
				}
				blob, err := base64.StdEncoding.DecodeString(r.Contents[0].Blob)
				if err != nil {
					t.Fatalf("resources/read %s: blob: %v", u, err)
				}
				return r.Contents[0].Text, blob, nil
			}
			// What a host does with the entry: read SKILL.md and check its
			// front matter against the entry's.
			md, _, e := read(uri)
			if e != nil {
				t.Fatalf("resources/read %s: %+v", uri, e)
			}
			fm, body, found := strings.Cut(strings.TrimPrefix(md, "---\n"), "\n---\n")
			var parsed map[string]any
			if !found || !strings.HasPrefix(md, "---\n") || yaml.Unmarshal([]byte(fm), &parsed) != nil {
				t.Fatalf("SKILL.md without front matter:\n%s", md)
			}
			if !reflect.DeepEqual(parsed, got.Frontmatter) || body != "\n# Demo\n\nRead refs/guide.md. Do the thing.\n" {
				t.Errorf("SKILL.md front matter %v (entry: %v), body %q", parsed, got.Frontmatter, body)
			}
			if text, _, e := read("skill://pc/demo-skill/refs/guide.md"); e != nil || text != "Guide.\n" {
				t.Errorf("refs/guide.md: %q, %+v", text, e)
			}
			if _, blob, e := read("skill://pc/demo-skill/data.bin"); e != nil || !bytes.Equal(blob, data) {
				t.Errorf("data.bin: %d bytes (want %d), %+v", len(blob), len(data), e)
			}
			if _, _, e := read("skill://pc/demo-skill/big.bin"); e == nil || !strings.Contains(e.Message, fmt.Sprintf("over the %d", skillsBound)) {
				t.Errorf("big.bin, over the gateway's bound: %+v, want an error naming the bound", e)
			}
			if _, _, e := read("skill://pc/secret/SKILL.md"); e == nil || !strings.Contains(e.Message, "denied by rule set \"no-secret\"") {
				t.Errorf("secret's SKILL.md: %+v, want refused by the rule", e)
			}
		})
	}
}

// The official TypeScript SDK client speaks the extension with its
// generic request(): it sees the extension declared, lists and gets the
// skill (not secret, which its key's rules deny), and reads its SKILL.md
// and a binary file by the entry's URI.
func TestTypeScriptSDKSkills(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	g, data := skillsOffice(t)
	out := runNodeScript(t, dir, "skills.mjs", endpoint(g, "A"), skillsKey)
	var got struct {
		Declared json.RawMessage `json:"declared"`
		Skills   []skillEntry    `json:"skills"`
		Got      skillEntry      `json:"got"`
		Refused  *rpcErr         `json:"refused"`
		SkillMD  string          `json:"skillMD"`
		Data     struct {
			Size   int    `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"data"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node printed %s", out)
	}
	if string(got.Declared) != "{}" {
		t.Errorf("extension declared as %s, want {}", got.Declared)
	}
	if len(got.Skills) != 1 || got.Skills[0].URI != "skill://pc/demo-skill/SKILL.md" || string(got.Skills[0].Resources) != `"dynamic"` ||
		!reflect.DeepEqual(got.Got, got.Skills[0]) {
		t.Errorf("skills/list %+v, skills/get %+v: want demo-skill alone, the same in both", got.Skills, got.Got)
	}
	if got.Refused == nil || got.Refused.Code != -32602 {
		t.Errorf("skills/get of secret: %+v, want -32602", got.Refused)
	}
	if !strings.HasPrefix(got.SkillMD, "---\nname: demo-skill\n") || !strings.HasSuffix(got.SkillMD, "Do the thing.\n") {
		t.Errorf("SKILL.md %q", got.SkillMD)
	}
	sum := sha256.Sum256(data)
	if got.Data.Size != len(data) || got.Data.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("data.bin %+v, want %d bytes", got.Data, len(data))
	}
}
