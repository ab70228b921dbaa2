package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// FuzzRPC sends arbitrary bodies to every procedure of the service, as
// Connect JSON or binary protobuf, through the whole path: HTTP, the key
// gate, decoding, the core and a live computer. Whatever the body, the
// gateway answers a well-formed Connect error or a result: never a dropped
// connection (a panic), never an internal error.
func FuzzRPC(f *testing.F) {
	procedures := []string{
		smcpv1connect.AgentServiceListRoomProcedure,
		smcpv1connect.AgentServiceGetToolsProcedure,
		smcpv1connect.AgentServiceGetConfigProcedure,
		smcpv1connect.AgentServiceCallToolProcedure,
		smcpv1connect.AgentServiceCancelToolCallProcedure,
		smcpv1connect.AgentServiceGetDesktopProcedure,
		smcpv1connect.AgentServiceGetFinderProcedure,
		smcpv1connect.AgentServiceReadResourceProcedure,
		smcpv1connect.AgentServiceWatchOfficeProcedure,
	}
	seeds := []string{
		`{"office_id":"office-a"}`,
		`{"office_id":"office-a","computer":"pc"}`,
		`{"office_id":"office-a","computer":"pc","tool_name":"echo","params":{"text":"hi"},"timeout":5}`,
		`{"office_id":"office-a","computer":"pc","tool_name":"echo","timeout":0}`,
		`{"office_id":"office-a","req_id":"r1"}`,
		`{"office_id":"office-a","computer":"pc","desktop_size":-3,"window":"window://x"}`,
		`{"office_id":"office-a","computer":"pc","keywords":["report"],"limit":1000,"offset":-1}`,
		`{"office_id":"office-a","computer":"pc","uri":"dpe://docs/rpt-2026?format=markdown"}`,
		`{"office_id":"office-a","computer":"pc","uri":"dpe://"}`,
		`{"office_id":"office-b","computer":"pc"}`,
		`{"office_id":123,"computer":["pc"]}`,
		`{"office_id":"office-a","params":{"a":{"b":{"c":[[[[[[[[[[]]]]]]]]]]}}}}`,
		`{`, ``, `null`, "\x00\x01\x02",
	}
	for i := range procedures {
		for j, s := range seeds {
			if (i+j)%3 == 0 || j < 3 { // every procedure with the first seeds, a spread of the rest
				f.Add(uint8(i), []byte(s), false)
			}
		}
		f.Add(uint8(i), []byte{0x0a, 0x08, 'o', 'f', 'f', 'i', 'c', 'e', '-', 'a', 0x12, 0x02, 'p', 'c'}, true)
	}

	g := startGateway(f)
	startComputer(f, g, "pc", officeA)
	client := h1Client()

	f.Fuzz(func(t *testing.T, proc uint8, body []byte, binaryProto bool) {
		procedure := procedures[int(proc)%len(procedures)]
		streaming := procedure == smcpv1connect.AgentServiceWatchOfficeProcedure
		contentType := "application/json"
		if binaryProto {
			contentType = "application/proto"
		}
		payload := body
		if streaming {
			// A Connect stream: the message in one envelope.
			contentType = "application/connect+json"
			if binaryProto {
				contentType = "application/connect+proto"
			}
			payload = binary.BigEndian.AppendUint32([]byte{0}, uint32(len(body)))
			payload = append(payload, body...)
		}
		// Calls that reach a computer answer at once, except a "hang" tool
		// call or a watch: those end with this context.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+procedure, bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("x-api-key", keyAgent)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			t.Fatalf("%s: the connection failed: %v", procedure, err)
		}
		defer func() { _ = resp.Body.Close() }()
		got, err := io.ReadAll(resp.Body)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			t.Fatalf("%s: reading the answer: %v", procedure, err)
		}
		var e connectError
		switch {
		case streaming && resp.StatusCode == http.StatusOK:
			e = endOfStream(got)
		case resp.StatusCode == http.StatusOK:
			return
		default:
			if err := json.Unmarshal(got, &e); err != nil || e.Code == "" {
				t.Fatalf("%s: status %d with a body that is no Connect error: %q", procedure, resp.StatusCode, got)
			}
		}
		if e.Code == "internal" || e.Code == "unknown" {
			t.Fatalf("%s: %s error for body %q: %s", procedure, e.Code, body, e.Message)
		}
	})
}

type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// endOfStream is the error of a Connect stream's end message, if it was
// read before the stream was cut.
func endOfStream(b []byte) connectError {
	for len(b) >= 5 {
		flags, n := b[0], int(binary.BigEndian.Uint32(b[1:5]))
		if len(b) < 5+n {
			break
		}
		if flags&2 != 0 {
			var end struct {
				Error connectError `json:"error"`
			}
			_ = json.Unmarshal(b[5:5+n], &end)
			return end.Error
		}
		b = b[5+n:]
	}
	return connectError{}
}
