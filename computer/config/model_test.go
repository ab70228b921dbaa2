package config

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// corpus is every real configuration file of the repository: the example
// docs/OPERATIONS.md starts a computer with and the files of testdata (the shapes
// of the Python SDK, Claude Desktop and VS Code, with placeholders, numbers
// where the wire has strings, and every field of the model set somewhere).
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in testdata: %v", err)
	}
	return append(files, filepath.Join("..", "..", "examples", "computer.yaml"))
}

func corpusEnv(name string) (string, bool) {
	v, ok := map[string]string{"A2C_SMCP_PERPLEXITY_KEY": "pk", "A2C_SMCP_TOKEN": "tk"}[name]
	return v, ok
}

// TestCorpusRoundTrip: for every server of every corpus file, the path a
// configuration takes from the user's file to a Connect client and back is
// stable: file -> model (what the computer runs) -> wire JSON -> proto
// (what the gateway and the Go agent decode) -> wire JSON gives the same
// bytes, and the proto read back from them is the same proto. A field that
// the model has and the proto or its copier drops changes the bytes.
func TestCorpusRoundTrip(t *testing.T) {
	seen := map[string]bool{} // model JSON keys some corpus server sets
	for _, file := range corpus(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResolver(cfg.Inputs, corpusEnv, nil)
			for _, name := range sortedKeys(cfg.Servers) {
				res, _, err := cfg.Servers[name].Resolve(context.Background(), r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				raw, _ := json.Marshal(cfg.Servers[name].Raw())
				markKeys(t, raw, seen)

				model := res.ServerConfig
				model.Complete()
				wire, err := json.Marshal(model)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var again smcp.ServerConfig
				if err := json.Unmarshal(wire, &again); err != nil || !reflect.DeepEqual(again, model) {
					t.Errorf("%s: the model does not read its own JSON back (%v):\n wire %s\n got %#v %#v %#v %#v\nwant %#v %#v %#v %#v", name, err, wire, again, again.Params.Stdio, again.Params.SSE, again.Params.Streamable, model, model.Params.Stdio, model.Params.SSE, model.Params.Streamable)
				}
				var pm smcpv1.MCPServerConfig
				if err := smcp.Unmarshal(wire, &pm); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				back, err := smcp.Marshal(&pm)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(back, wire) {
					t.Errorf("%s changed through the proto form:\n model %s\n proto %s", name, wire, back)
				}
				var pm2 smcpv1.MCPServerConfig
				if err := smcp.Unmarshal(back, &pm2); err != nil || !proto.Equal(&pm, &pm2) {
					t.Errorf("%s: proto not stable (%v):\n %v\n %v", name, err, &pm, &pm2)
				}
			}
		})
	}
	// The corpus sets every field of the model, so that the round trip
	// covers them all: a new field needs an example here.
	for _, typ := range []reflect.Type{reflect.TypeFor[smcp.ServerConfig](), reflect.TypeFor[smcp.StdioParams](),
		reflect.TypeFor[smcp.SSEParams](), reflect.TypeFor[smcp.StreamableParams](), reflect.TypeFor[smcp.ToolMeta]()} {
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if key != "" && key != "-" && !seen[key] {
				t.Errorf("no corpus file sets %s.%s (%q): add it to testdata", typ.Name(), typ.Field(i).Name, key)
			}
		}
	}
}

// markKeys records every object key in a JSON document.
func markKeys(t *testing.T, b []byte, seen map[string]bool) {
	t.Helper()
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				seen[k] = true
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	walk(v)
}

// TestGetConfigSurvivesTheProtoForm: what client:get_config answers for
// each corpus file (placeholders unrendered, secrets redacted) decodes into
// the proto that Connect GetComputerConfig returns, and encodes back with
// every value the computer sent still there (the codec may only add the
// keys the wire always carries); a second trip changes nothing.
func TestGetConfigSurvivesTheProtoForm(t *testing.T) {
	for _, file := range corpus(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			sent, err := json.Marshal(cfg.Wire())
			if err != nil {
				t.Fatal(err)
			}
			var ret smcpv1.GetComputerConfigRet
			if err := smcp.Unmarshal(sent, &ret); err != nil {
				t.Fatal(err)
			}
			if len(ret.GetServers()) != len(cfg.Servers) || len(ret.GetInputs()) != len(cfg.Inputs) {
				t.Fatalf("proto has %d servers and %d inputs, the file %d and %d", len(ret.GetServers()), len(ret.GetInputs()), len(cfg.Servers), len(cfg.Inputs))
			}
			back, err := smcp.Marshal(&ret)
			if err != nil {
				t.Fatal(err)
			}
			var before, after any
			if err := json.Unmarshal(sent, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(back, &after); err != nil {
				t.Fatal(err)
			}
			for _, miss := range missing(before, after, "") {
				t.Errorf("lost through the proto form: %s\n sent %s\n back %s", miss, sent, back)
			}
			var ret2 smcpv1.GetComputerConfigRet
			if err := smcp.Unmarshal(back, &ret2); err != nil || !proto.Equal(&ret, &ret2) {
				t.Errorf("second trip changed the proto (%v)", err)
			}
		})
	}
}

// missing lists the paths of values in want that got lacks or has
// otherwise; keys only got has are fine.
func missing(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for _, k := range sortedKeys(w) {
			out = append(out, missing(w[k], g[k], path+"/"+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var out []string
		for i := range w {
			out = append(out, missing(w[i], g[i], path+"/"+string(rune('0'+i%10)))...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{path}
	}
	return nil
}

// TestWireFillsWhatTheCodecFills: the get_config answer of a server that
// sets nothing optional carries exactly the keys, and the values, that the
// codec's completion gives the typed model, for every transport.
func TestWireFillsWhatTheCodecFills(t *testing.T) {
	cfg, err := Parse([]byte(`{"servers": {
	  "a": {"type": "stdio", "server_parameters": {"command": "c"}},
	  "b": {"type": "sse", "server_parameters": {"url": "http://h/sse"}},
	  "c": {"type": "streamable", "server_parameters": {"url": "http://h/mcp"}}}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range cfg.Servers {
		got, _ := json.Marshal(s.Wire())
		res, _, err := s.Resolve(context.Background(), NewResolver(nil, noEnv, nil))
		if err != nil {
			t.Fatal(err)
		}
		model := res.ServerConfig
		model.Complete()
		want, _ := json.Marshal(model)
		var g, w map[string]any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: get_config %s\n     model %s", name, got, want)
		}
	}
	if !slices.Contains(sortedKeys(cfg.Servers), "c") {
		t.Fatal("fixture lost a server")
	}
}
