package smcp

import (
	"reflect"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestEffectiveToolMeta(t *testing.T) {
	mapper := structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"title": structpb.NewStringValue("$.name")}})
	def := &smcpv1.ToolMeta{AutoApply: new(false), Tags: []string{"default"}, RetObjectMapper: mapper}
	tests := []struct {
		name     string
		def, own *smcpv1.ToolMeta
		want     *smcpv1.ToolMeta
	}{
		{"neither", nil, nil, nil},
		{"both empty", &smcpv1.ToolMeta{}, &smcpv1.ToolMeta{}, nil},
		{"default only", def, nil, def},
		{"own only", nil, &smcpv1.ToolMeta{Alias: new("a")}, &smcpv1.ToolMeta{Alias: new("a")}},
		{"own wins field by field", def, &smcpv1.ToolMeta{AutoApply: new(true), Alias: new("sum")},
			&smcpv1.ToolMeta{AutoApply: new(true), Alias: new("sum"), Tags: []string{"default"}, RetObjectMapper: mapper}},
		{"own false still wins", &smcpv1.ToolMeta{AutoApply: new(true)}, &smcpv1.ToolMeta{AutoApply: new(false)}, &smcpv1.ToolMeta{AutoApply: new(false)}},
		{"own tags replace, not append", def, &smcpv1.ToolMeta{Tags: []string{"own"}},
			&smcpv1.ToolMeta{AutoApply: new(false), Tags: []string{"own"}, RetObjectMapper: mapper}},
		{"empty tags and null mapper count as unset", def, &smcpv1.ToolMeta{Tags: []string{}, RetObjectMapper: structpb.NewNullValue()}, def},
	}
	for _, tc := range tests {
		defBefore, ownBefore := proto.Clone(tc.def), proto.Clone(tc.own)
		got := EffectiveToolMeta(tc.def, tc.own)
		if !proto.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if !proto.Equal(tc.def, defBefore) || !proto.Equal(tc.own, ownBefore) {
			t.Errorf("%s: inputs modified", tc.name)
		}
		if got != nil && (got == tc.def || got == tc.own) {
			t.Errorf("%s: result aliases an input", tc.name)
		}
	}
}

// TestBuildToolMetaMatchesGolden builds the meta of the first tool of the
// get_tools fixture from its parts.
func TestBuildToolMetaMatchesGolden(t *testing.T) {
	var ret smcpv1.GetToolsRet
	if err := Unmarshal(readFixture(t, "testdata/golden/client_get_tools.ret.json"), &ret); err != nil {
		t.Fatal(err)
	}
	effective := EffectiveToolMeta(&smcpv1.ToolMeta{AutoApply: new(false), Tags: []string{"math", "safe"}}, &smcpv1.ToolMeta{AutoApply: new(true), Alias: new("add")})
	annotations := struct {
		ReadOnlyHint bool   `json:"readOnlyHint"`
		Title        string `json:"title"`
	}{true, "Add"}
	meta, err := BuildToolMeta(effective, annotations, map[string]any{"vendor": "acme", "labels": []string{"x", "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := ret.GetTools()[0].GetMeta(); !proto.Equal(meta, want) {
		t.Errorf("meta = %v\nwant %v", meta, want)
	}
	back, err := ToolMetaFromSMCP(meta)
	if err != nil || !proto.Equal(back, effective) {
		t.Errorf("ToolMetaFromSMCP = %v, %v; want %v", back, err, effective)
	}
}

func TestBuildToolMeta(t *testing.T) {
	var nilAnnotations *struct{ Title string }
	meta, err := BuildToolMeta(nil, nilAnnotations, nil)
	if err != nil || len(meta.GetFields()) != 0 {
		t.Errorf("no ToolMeta, no annotations: %v, %v; want {}", meta, err)
	}
	meta, err = BuildToolMeta(nil, nil, map[string]any{
		"scalar": 1.5, "flag": true, "none": nil, "strings": []any{"a", "b"},
		"object": map[string]any{"k": []int{1}}, "mixed": []any{"a", 1},
		MetaToolMeta: "overridden",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"scalar": 1.5, "flag": true, "none": nil, "strings": []any{"a", "b"},
		"object": `{"k":[1]}`, "mixed": `["a",1]`, MetaToolMeta: "overridden",
	}
	if got := meta.AsMap(); !reflect.DeepEqual(got, want) {
		t.Errorf("flat meta = %v\nwant %v", got, want)
	}
	if _, err := BuildToolMeta(nil, nil, map[string]any{"bad": make(chan int)}); err == nil {
		t.Error("an unencodable _meta value was accepted")
	}
	if _, err := ToolMetaFromSMCP(&structpb.Struct{Fields: map[string]*structpb.Value{MetaToolMeta: structpb.NewBoolValue(true)}}); err == nil {
		t.Error("a non-string a2c_tool_meta was accepted")
	}
	if tm, err := ToolMetaFromSMCP(nil); tm != nil || err != nil {
		t.Errorf("ToolMetaFromSMCP(nil) = %v, %v", tm, err)
	}
}
