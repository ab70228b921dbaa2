// Tests of the local patches (internal/fork/mcpsdk/PATCHED.md)
// that spare a request decodes: what is read is what upstream read.

package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	internaljson "github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/internal/json"
)

func TestExtractRequestMetaAsUpstream(t *testing.T) {
	upstream := func(raw json.RawMessage) Meta {
		var meta struct {
			Meta Meta `json:"_meta"`
		}
		if internaljson.Unmarshal(raw, &meta) != nil {
			return nil
		}
		return meta.Meta
	}
	for _, in := range []string{
		`{"name":"t","arguments":{"a":1}}`,
		`{"_meta":{"progressToken":1},"name":"t"}`,
		`{"\u005fmeta":{"k":"v"}}`,
		`{"name":"_meta"}`,
		`{"name":"a\"b"}`,
		`{"_meta":null}`,
		`{"_meta":`,
	} {
		got, want := extractRequestMeta(json.RawMessage(in)), upstream(json.RawMessage(in))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", in, got, want)
		}
	}
}

func TestReadBatchOnlyArraysAsBatches(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for in, want := range map[string]struct {
		n       int
		isBatch bool
		err     bool
	}{
		call:                            {1, false, false},
		" \n" + call:                    {1, false, false},
		"[" + call + "]":                {1, true, false},
		"\t[" + call + "," + call + "]": {2, true, false},
		"[]":                            {0, true, true},
		"null":                          {0, false, true},
		"{":                             {0, false, true},
		"[1]":                           {0, true, true},
	} {
		msgs, isBatch, err := readBatch([]byte(in))
		if (err != nil) != want.err || (err == nil && (len(msgs) != want.n || isBatch != want.isBatch)) {
			t.Errorf("%q: %d messages, batch %v, err %v; want %+v", in, len(msgs), isBatch, err, want)
		}
	}
}
