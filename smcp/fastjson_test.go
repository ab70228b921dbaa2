package smcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// fastPathCase decodes b with the fast path and with protojson.
type fastPathCase struct {
	name  string
	fast  func(b []byte) (proto.Message, error)
	slow  func(b []byte) (proto.Message, error)
	files []string // golden fixtures of the message
}

var fastPathCases = []fastPathCase{
	{
		name: "ToolCallReq",
		fast: func(b []byte) (proto.Message, error) {
			m := &smcpv1.ToolCallReq{}
			return m, unmarshalToolCallReq(b, m)
		},
		slow: func(b []byte) (proto.Message, error) {
			m := &smcpv1.ToolCallReq{}
			return m, unmarshalOptions.Unmarshal(b, m)
		},
		files: []string{"golden/client_tool_call.json"},
	},
	{
		name: "CallToolResult",
		fast: func(b []byte) (proto.Message, error) {
			m := &smcpv1.CallToolResult{}
			return m, unmarshalCallToolResult(b, m)
		},
		slow: func(b []byte) (proto.Message, error) {
			m := &smcpv1.CallToolResult{}
			return m, unmarshalCallToolResultSlow(b, m)
		},
		files: []string{"golden/client_tool_call.result*.json", "compat/client_tool_call.result*.json"},
	},
}

func (c fastPathCase) fixtures(t testing.TB) [][]byte {
	var out [][]byte
	for _, pattern := range c.files {
		paths, err := filepath.Glob(filepath.Join("testdata", pattern))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no fixtures for %s", pattern)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// agree checks the promise of the fast paths: whatever the fast reader
// accepts, protojson accepts with an equal message; and a ToolCallReq that
// decodes encodes to the same JSON both ways.
func (c fastPathCase) agree(t *testing.T, b []byte) (fastTaken bool) {
	t.Helper()
	fast, ferr := c.fast(b)
	slow, serr := c.slow(b)
	if ferr != nil && !errors.Is(ferr, errSlow) {
		t.Fatalf("%s: fast path error %v is not errSlow", c.name, ferr)
	}
	if ferr == nil {
		if serr != nil {
			t.Fatalf("%s: fast path accepted %q, protojson refuses it: %v", c.name, b, serr)
		}
		if !proto.Equal(fast, slow) {
			t.Fatalf("%s: %q decodes differently:\nfast %v\nslow %v", c.name, b, fast, slow)
		}
	}
	if m, ok := slow.(*smcpv1.ToolCallReq); ok && serr == nil {
		want, werr := marshalOptions.Marshal(fillUnset(m, callRequired))
		got, gerr := marshalToolCallReq(m)
		switch {
		case gerr != nil && !errors.Is(gerr, errSlow):
			t.Fatalf("fast encoder error %v is not errSlow", gerr)
		case gerr == nil && werr != nil:
			t.Fatalf("fast encoder wrote %s, protojson refuses %v: %v", got, m, werr)
		case gerr == nil && !bytes.Equal(canonical(t, got), canonical(t, want)):
			t.Fatalf("encodings differ:\nfast %s\nslow %s", got, want)
		}
	}
	return ferr == nil
}

func TestFastPathsAgreeWithProtojson(t *testing.T) {
	for _, c := range fastPathCases {
		t.Run(c.name, func(t *testing.T) {
			// The fixtures are what peers send: all of them must take the
			// fast path, or it would only ever be a slower detour.
			for _, b := range c.fixtures(t) {
				if !c.agree(t, b) {
					t.Errorf("fixture %s did not take the fast path", b)
				}
			}
		})
	}
	fast := map[string]string{
		"escapes":         `{"agent":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00","req_id":"r","computer":"c","tool_name":"t","params":{"k":"\u0001"},"timeout":5}`,
		"unicode":         `{"agent":"代理","req_id":"r","computer":"电脑","tool_name":"t","params":{"路径":"/文档/报告.xlsx"},"timeout":5}`,
		"values":          `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","params":{"n":-1.5e-7,"z":0,"b":true,"f":false,"x":null,"l":[1,[2,{"d":[]}],{}]},"timeout":3600}`,
		"white space":     " \n{ \"agent\" : \"a\" ,\"req_id\":\"r\",\"computer\":\"c\",\"tool_name\":\"t\",\"params\":{ },\"timeout\":1 }\t",
		"unknown key":     `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","params":{},"timeout":1,"extra":{"deep":[1,2]}}`,
		"missing fields":  `{"tool_name":"t"}`,
		"result meta":     `{"content":[],"meta":{"a":1},"_meta":{"b":2}}`,
		"result extra":    `{"content":[{"type":"text","text":"x"}],"isError":true,"structuredContent":[1,"2"],"future":1}`,
		"result no items": `{}`,
	}
	// Inputs protojson must decide, by the message they are read as.
	slow := map[string][]string{
		"ToolCallReq": {
			`{"agent":"a","agent":"b"}`, `{"params":{"k":1,"k":2}}`, `{"agent":null}`,
			`{"timeout":"30"}`, `{"timeout":30.0}`, `{"timeout":9999999999}`, `{"agent":"\ud800"}`,
			"{\"agent\":\"\xff\"}", "{\"agent\":\"a\x01\"}", `{"params":{"n":01}}`, `{"params":{"n":1e400}}`,
			`{"agent":"a"} x`, `{"agent":"a",}`, `[1]`, ``,
			`{"params":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`,
		},
		"CallToolResult": {
			`{"structuredContent":null}`, `{"content":["x"]}`, `{"is_error":true}`, `{"isError":null}`,
			`{"content":[],"content":[]}`, `{"meta":{"a":1},"meta":{}}`, `{"_meta":[]}`,
		},
	}
	for name, in := range fast {
		t.Run("fast/"+name, func(t *testing.T) {
			taken := false
			for _, c := range fastPathCases {
				taken = c.agree(t, []byte(in)) || taken
			}
			if !taken {
				t.Errorf("%s took no fast path", in)
			}
		})
	}
	for _, c := range fastPathCases {
		t.Run("slow/"+c.name, func(t *testing.T) {
			for _, in := range slow[c.name] {
				if c.agree(t, []byte(in)) {
					t.Errorf("%q took the fast path", in)
				}
			}
		})
	}
}

func TestFastEncoderFallsBack(t *testing.T) {
	bad := map[string]*structpb.Value{
		"NaN":           structpb.NewNumberValue(math.NaN()),
		"infinity":      structpb.NewNumberValue(math.Inf(-1)),
		"invalid utf-8": structpb.NewStringValue("\xff"),
		"no kind":       {},
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			m := &smcpv1.ToolCallReq{Params: &structpb.Struct{Fields: map[string]*structpb.Value{"k": v}}}
			if _, err := marshalToolCallReq(m); !errors.Is(err, errSlow) {
				t.Fatalf("fast encoder: %v, want errSlow", err)
			}
			_, slowErr := marshalOptions.Marshal(m)
			if _, err := Marshal(m); (err == nil) != (slowErr == nil) {
				t.Fatalf("Marshal: %v, protojson: %v", err, slowErr)
			}
		})
	}
}

// FuzzFastPaths is the differential check of the fast paths against
// protojson, on the tool call fixtures and everything the fuzzer makes of
// them.
func FuzzFastPaths(f *testing.F) {
	for i, c := range fastPathCases {
		for _, b := range c.fixtures(f) {
			f.Add(uint8(i), b)
		}
	}
	f.Add(uint8(0), []byte(`{"params":{"n":1e21,"m":1e-7,"s":"\u2028<&>"},"timeout":-0}`))
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		fastPathCases[int(kind)%len(fastPathCases)].agree(t, b)
	})
}

// decodedAgrees checks MarshalDecoded against encoding/json on the value
// encoding/json decodes from b; it reports whether the direct writer took it.
func decodedAgrees(t *testing.T, b []byte) (direct bool) {
	t.Helper()
	var v any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	want, werr := json.Marshal(v)
	got, gerr := MarshalDecoded(v)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("MarshalDecoded error %v, encoding/json %v", gerr, werr)
	}
	if werr == nil && !bytes.Equal(canonical(t, got), canonical(t, want)) {
		t.Fatalf("encodings of %q differ:\ngot  %s\nwant %s", b, got, want)
	}
	_, err := appendDecoded(nil, v, 0)
	return err == nil
}

func TestMarshalDecoded(t *testing.T) {
	direct := []string{
		`{"agent":"a","params":{"b":[1,2.5,-1e-7,1e21,true,false,null,{}],"s":"<&>\u2028\"\\\n\u0001é😀"},"z":[]}`,
		`[]`, `"x"`, `0`, `null`,
	}
	for _, in := range direct {
		if !decodedAgrees(t, []byte(in)) {
			t.Errorf("%s did not take the direct writer", in)
		}
	}
	for name, v := range map[string]any{
		"NaN":         math.NaN(),
		"int":         3,
		"invalid key": map[string]any{"\xff": 1},
		"deep":        deepList(100),
	} {
		t.Run(name, func(t *testing.T) {
			want, werr := json.Marshal(v)
			got, gerr := MarshalDecoded(v)
			if (werr == nil) != (gerr == nil) || string(got) != string(want) {
				t.Fatalf("MarshalDecoded = %s, %v; encoding/json = %s, %v", got, gerr, want, werr)
			}
		})
	}
}

func deepList(n int) any {
	var v any = "leaf"
	for range n {
		v = []any{v}
	}
	return v
}

func FuzzMarshalDecoded(f *testing.F) {
	for _, c := range fastPathCases {
		for _, b := range c.fixtures(f) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { decodedAgrees(t, b) })
}
