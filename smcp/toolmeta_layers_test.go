package smcp

import (
	"encoding/json"
	"testing"
)

func TestDeclaredToolMetaTags(t *testing.T) {
	tests := []struct {
		name     string
		meta     string
		tags     []string
		declared bool
		bad      bool
	}{
		{"absent", `{"other":1}`, nil, false, false},
		{"tags", `{"a2c_tool_meta":{"tags":["fs","read"]}}`, []string{"fs", "read"}, true, false},
		{"auto_apply dropped", `{"a2c_tool_meta":{"tags":["x"],"auto_apply":true,"alias":"y"}}`, []string{"x"}, true, false},
		{"no tags", `{"a2c_tool_meta":{}}`, nil, true, false},
		{"null tags", `{"a2c_tool_meta":{"tags":null}}`, nil, true, false},
		{"empty tags", `{"a2c_tool_meta":{"tags":[]}}`, []string{}, true, false},
		{"a string", `{"a2c_tool_meta":"{\"tags\":[\"x\"]}"}`, nil, true, true},
		{"tags not a list", `{"a2c_tool_meta":{"tags":"x"}}`, nil, true, true},
		{"tag not a string", `{"a2c_tool_meta":{"tags":["x",1]}}`, nil, true, true},
	}
	for _, tc := range tests {
		var meta map[string]any
		if err := json.Unmarshal([]byte(tc.meta), &meta); err != nil {
			t.Fatal(err)
		}
		tags, declared, err := DeclaredToolMetaTags(meta)
		if (err != nil) != tc.bad || declared != tc.declared || len(tags) != len(tc.tags) || (tags == nil) != (tc.tags == nil) {
			t.Errorf("%s: tags %q declared %v err %v", tc.name, tags, declared, err)
		}
	}
}

func TestLayeredToolMeta(t *testing.T) {
	yes, no := true, false
	alias := "short"
	tests := []struct {
		name      string
		own, def  *ToolMeta
		decl      []string
		declared  bool
		want      string // "" = no a2c_tool_meta
		wantAlias bool
	}{
		{"nothing", nil, nil, nil, false, "", false},
		{"declaration only", nil, nil, []string{"a"}, true,
			`{"auto_apply":null,"alias":null,"tags":["a"],"ret_object_mapper":null}`, false},
		{"default over declaration", nil, &ToolMeta{AutoApply: &yes, Tags: []string{"d"}}, []string{"a"}, true,
			`{"auto_apply":true,"alias":null,"tags":["d"],"ret_object_mapper":null}`, false},
		{"default without tags inherits the declaration", nil, &ToolMeta{AutoApply: &yes}, []string{"a"}, true,
			`{"auto_apply":true,"alias":null,"tags":["a"],"ret_object_mapper":null}`, false},
		{"own over default", &ToolMeta{AutoApply: &no, Alias: &alias, Tags: []string{}}, &ToolMeta{AutoApply: &yes, Tags: []string{"d"}}, []string{"a"}, true,
			`{"auto_apply":false,"alias":"short","tags":[],"ret_object_mapper":null}`, true},
		{"alias never from the default", nil, &ToolMeta{Alias: &alias}, nil, false,
			`{"auto_apply":null,"alias":null,"tags":null,"ret_object_mapper":null}`, false},
		{"ret_object_mapper null inherits", &ToolMeta{RetObjectMapper: json.RawMessage(`null`)}, &ToolMeta{RetObjectMapper: json.RawMessage(`{ "k" : 1 }`)}, nil, false,
			`{"auto_apply":null,"alias":null,"tags":null,"ret_object_mapper":{"k":1}}`, false},
		{"invalid declaration with config: config only", &ToolMeta{Tags: []string{"o"}}, nil, nil, false,
			`{"auto_apply":null,"alias":null,"tags":["o"],"ret_object_mapper":null}`, false},
	}
	for _, tc := range tests {
		tm, ok := LayeredToolMeta(tc.own, tc.def, tc.decl, tc.declared)
		if !ok {
			if tc.want != "" {
				t.Errorf("%s: no tool meta, want %s", tc.name, tc.want)
			}
			continue
		}
		s, err := CanonicalToolMetaJSON(tm)
		if err != nil || s != tc.want {
			t.Errorf("%s: %s (%v), want %s", tc.name, s, err, tc.want)
		}
	}
	// The inputs are not modified.
	def := &ToolMeta{AutoApply: &yes}
	tm, _ := LayeredToolMeta(nil, def, nil, false)
	*tm.AutoApply = false
	if !*def.AutoApply {
		t.Error("LayeredToolMeta shares auto_apply with its input")
	}
}
