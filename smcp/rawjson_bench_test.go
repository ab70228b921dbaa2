package smcp

import (
	"encoding/base64"
	"strings"
	"testing"
)

// BenchmarkRawJSON measures the relay's reader (what every Socket.IO event
// and ack and every Connect params_json goes through) on a tool call's
// payload in ASCII and with non-ASCII text, where the UTF-8 check works.
func BenchmarkRawJSON(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"ASCII", strings.Repeat("The sum is 42. ", 64)},
		{"NonASCII", strings.Repeat("合计为四十二。Größe ", 64)},
		{"Base64", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("chunk of a blob ", 16384)))},
	} {
		payload := []byte(`["client:tool_call",{"agent":"agent-1","req_id":"req-7","computer":"computer-1",` +
			`"tool_name":"add","params":{"a":40,"b":2,"text":"` + c.text + `"},"timeout":30}]`)
		b.Run("SplitArray/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if _, err := SplitArray(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
