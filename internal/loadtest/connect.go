package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// connectCaller calls CallTool with the Connect protocol (unary POST,
// binary proto) over HTTP/1.1 keep-alive connections of its own, one per
// call in flight, written and parsed in place. Like the Socket.IO load client,
// which writes Engine.IO frames itself, it keeps the generator's share of
// the machine small, so that both paths are measured with the same share
// left to the server. (net/http's client spends two goroutine hand-offs per
// call; ModeConnect, ModeConnectH2C and ModeGRPC measure the stock
// connect-go client.) It serves ModeConnectRaw.
type connectCaller struct {
	*connPool
	head      []byte // request line and fixed headers, up to Content-Length
	fixed     []byte // CallToolRequest without req_id, encoded once
	reqID     protowire.Number
	callLimit time.Duration
}

func newConnectCaller(o Options, agentName, officeID string, params json.RawMessage) (*connectCaller, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("loadtest: gateway URL: %w", err)
	}
	pool, err := newConnPool(u, o.InFlight)
	if err != nil {
		return nil, err
	}
	cc := &connectCaller{connPool: pool, callLimit: 30 * time.Second}
	st := &structpb.Struct{}
	if err := st.UnmarshalJSON(params); err != nil {
		return nil, err
	}
	// Like the Socket.IO client's payload, the request is encoded once and
	// completed per call with its req_id (fields may come in any order).
	fixed := &smcpv1.CallToolRequest{OfficeId: officeID, Computer: "pc", ToolName: "echo", Params: st, Timeout: int32(CallTimeout / time.Second)}
	if cc.fixed, err = proto.Marshal(fixed); err != nil {
		return nil, err
	}
	cc.reqID = fixed.ProtoReflect().Descriptor().Fields().ByName("req_id").Number()
	head := "POST " + u.Path + smcpv1connect.AgentServiceCallToolProcedure + " HTTP/1.1\r\n" +
		"Host: " + u.Host + "\r\n" +
		"Content-Type: application/proto\r\n" +
		"Connect-Protocol-Version: 1\r\n" +
		"X-Smcp-Agent: " + agentName + "\r\n"
	if o.APIKey != "" {
		head += "X-Api-Key: " + o.APIKey + "\r\n"
	}
	cc.head = []byte(head + "Content-Length: ")
	return cc, nil
}

func (cc *connectCaller) call(ctx context.Context, seq uint64) error {
	c, err := cc.get(ctx)
	if err != nil {
		return err
	}
	toolError, reuse, err := cc.roundTrip(ctx, c, seq)
	if reuse {
		cc.put(c)
	} else {
		_ = c.Close()
	}
	if err != nil {
		return err
	}
	if toolError {
		return errors.New("loadtest: the echo tool answered with an error")
	}
	return nil
}

// roundTrip makes one call on c; reuse says whether c can carry another.
func (cc *connectCaller) roundTrip(ctx context.Context, c *httpConn, seq uint64) (toolError, reuse bool, err error) {
	deadline := time.Now().Add(cc.callLimit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetDeadline(deadline); err != nil {
		return false, false, err
	}
	c.body = append(c.body[:0], cc.fixed...)
	c.body = protowire.AppendTag(c.body, cc.reqID, protowire.BytesType)
	c.body = protowire.AppendString(c.body, strconv.FormatUint(seq, 10))
	c.req = append(append(c.req[:0], cc.head...), strconv.Itoa(len(c.body))...)
	c.req = append(append(c.req, "\r\n\r\n"...), c.body...)
	if _, err := c.Write(c.req); err != nil {
		return false, false, fmt.Errorf("loadtest: write request: %w", err)
	}
	status, n, closing, err := readResponseHead(c.br)
	if err != nil {
		return false, false, fmt.Errorf("loadtest: read response: %w", err)
	}
	c.body = slices.Grow(c.body[:0], n)[:n]
	if _, err := io.ReadFull(c.br, c.body); err != nil {
		return false, false, fmt.Errorf("loadtest: read response body: %w", err)
	}
	if status != http.StatusOK {
		return false, !closing, fmt.Errorf("loadtest: CallTool: HTTP %d: %s", status, c.body)
	}
	toolError, err = isToolError(c.body)
	return toolError, !closing, err
}

// readResponseHead reads an HTTP/1.1 response head: its status, body length
// (Connect unary answers always carry Content-Length) and whether the server
// closes the connection after it.
func readResponseHead(br *bufio.Reader) (status, length int, closing bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, 0, false, fmt.Errorf("bad status line %q", line)
	}
	length = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, 0, false, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 || length > 1<<20 {
				return 0, 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, 0, false, fmt.Errorf("unexpected Transfer-Encoding %q", value)
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	if length < 0 {
		return 0, 0, false, errors.New("response without Content-Length")
	}
	return status, length, closing, nil
}

// isToolError reads CallToolResponse.result.is_error from the binary
// response without decoding the rest (the Socket.IO load client looks for
// "isError":false in the answer the same way).
func isToolError(b []byte) (bool, error) {
	result, err := protoField(b, 1) // CallToolResponse.result
	if err != nil || result == nil {
		return false, fmt.Errorf("loadtest: response without a result: %v", err)
	}
	isError, err := protoField(result, 2) // CallToolResult.is_error
	if err != nil {
		return false, fmt.Errorf("loadtest: decode response: %w", err)
	}
	return len(isError) == 1 && isError[0] != 0, nil
}

// protoField returns the raw value (the bytes of a length-delimited field,
// the varint's bytes otherwise) of the last occurrence of field num in b.
func protoField(b []byte, num protowire.Number) ([]byte, error) {
	var found []byte
	for len(b) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return nil, protowire.ParseError(tagLen)
		}
		valLen := protowire.ConsumeFieldValue(n, typ, b[tagLen:])
		if valLen < 0 {
			return nil, protowire.ParseError(valLen)
		}
		if n == num {
			found = b[tagLen : tagLen+valLen]
			if typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(found)
				found = v
			}
		}
		b = b[tagLen+valLen:]
	}
	return found, nil
}
