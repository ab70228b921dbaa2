package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// MaxDecodeDepth bounds the nesting of a request message (protobuf's
// recursion limit, 10,000 by default). A params Struct counts two levels per
// level of JSON (a Struct, then a Value), so params may nest JSON about 60
// deep; deeper JSON travels in params_json, which is kept as bytes. The
// bound is what keeps one request's decoding cheap: without it, Structs
// nested 9,000 deep in 18 KB bodies, 64 at a time, took a gateway from
// 34 MiB to 2.8 GiB (objects and grown stacks; cmd/smcp
// TestDeepBodiesRefusedBeforeDecoding).
const MaxDecodeDepth = 128

// A request is read in two passes, so that a caller who may not act in the
// office it names is refused before its request costs anything to decode.
// connect does the framing, the decompression and the size bound
// (MaxRequestBytes), then hands the message's bytes to rawCodec, which only
// keeps them; admit reads the office from them with a pass that builds
// nothing (officeOf), checks the caller against it with the core's rule,
// and only then decodes, with a bounded depth.

// rawRequest is a request message as its caller encoded it. connect does
// not call the codec for an empty enveloped message (gRPC, gRPC-Web, Connect
// streams): the zero rawRequest, read false, is the zero message.
type rawRequest struct {
	data   []byte
	binary bool // protobuf; else JSON
	read   bool
	// cut, when its end is set, is a field taken out (takeField): decode
	// reads the bytes before and after it.
	cut [2]int
}

// rawCodec stands in for connect's "proto" and "json" codecs on the
// AgentService handler: requests are kept as bytes (rawRequest), answers
// are encoded as connect's own codecs encode them.
type rawCodec struct {
	name   string
	binary bool
}

var _ connect.Codec = rawCodec{}

func (c rawCodec) Name() string   { return c.name }
func (c rawCodec) IsBinary() bool { return c.binary }

func (c rawCodec) Marshal(m any) ([]byte, error) { return c.MarshalAppend(nil, m) }

func (c rawCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	if c.binary {
		return proto.MarshalOptions{}.MarshalAppend(dst, pm)
	}
	// A handler may carry a field as its encoding in the unknown fields
	// (CallTool's result): protojson would drop them, so they are decoded
	// into the message first.
	if u := pm.ProtoReflect().GetUnknown(); len(u) > 0 {
		pm.ProtoReflect().SetUnknown(nil)
		if err := (proto.UnmarshalOptions{Merge: true, RecursionLimit: protowire.DefaultRecursionLimit}).Unmarshal(u, pm); err != nil {
			return nil, fmt.Errorf("rpc: encode %T: %w", m, err)
		}
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (c rawCodec) Unmarshal(data []byte, m any) error {
	r, ok := m.(*rawRequest)
	if !ok {
		return fmt.Errorf("rpc: cannot read a request into %T", m)
	}
	// connect reuses data's buffer once Unmarshal returns.
	r.data, r.binary, r.read = bytes.Clone(data), c.binary, true
	return nil
}

// codecs are the AgentService's codecs: connect's names, rawCodec's work.
func codecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(rawCodec{name: "proto", binary: true}),
		connect.WithCodec(rawCodec{name: "json"}),
		connect.WithCodec(rawCodec{name: "json; charset=utf-8"}),
	}
}

// decode reads r into msg, bounded in depth. Unknown JSON fields are
// ignored and unknown protobuf fields kept, as connect's codecs do.
func (r *rawRequest) decode(msg proto.Message) error {
	if !r.read {
		return nil
	}
	if r.binary {
		o := proto.UnmarshalOptions{RecursionLimit: MaxDecodeDepth}
		if r.cut[1] == 0 {
			return o.Unmarshal(r.data, msg)
		}
		if err := o.Unmarshal(r.data[:r.cut[0]], msg); err != nil {
			return err
		}
		o.Merge = true
		return o.Unmarshal(r.data[r.cut[1]:], msg)
	}
	if len(r.data) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: MaxDecodeDepth}.Unmarshal(r.data, msg)
}

// officeOf reads the value of field fd (a top-level string) from r without
// decoding the rest: the protobuf wire is walked field by field (the last
// occurrence wins, as in decoding); JSON is tokenized until the field's key
// (protojson refuses a key given twice, so the first is the one). Neither
// builds anything from the values it skips.
func (r *rawRequest) officeOf(fd protoreflect.FieldDescriptor) (string, error) {
	if !r.read {
		return "", nil
	}
	if r.binary {
		return binaryField(r.data, fd.Number())
	}
	return jsonField(r.data, fd.JSONName(), string(fd.Name()))
}

// takeField takes the value of field num (length-delimited, at the top of a
// binary request) out of what decode reads, and returns it: CallTool's
// params go on as the caller encoded them. ok is false, and nothing taken,
// unless the field occurs exactly once and the request is a plain encoding
// (no group, nothing malformed: decode then reports it as it would).
func (r *rawRequest) takeField(num protowire.Number) (val []byte, ok bool) {
	if !r.read || !r.binary {
		return nil, false
	}
	b := r.data
	var cut [2]int
	for i := 0; i < len(b); {
		n, typ, l := protowire.ConsumeTag(b[i:])
		if l < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return nil, false
		}
		start := i
		i += l
		if n == num {
			if ok || typ != protowire.BytesType {
				return nil, false
			}
			v, l := protowire.ConsumeBytes(b[i:])
			if l < 0 {
				return nil, false
			}
			i += l
			val, ok, cut = v, true, [2]int{start, i}
			continue
		}
		if l = protowire.ConsumeFieldValue(n, typ, b[i:]); l < 0 {
			return nil, false
		}
		i += l
	}
	if ok {
		r.cut = cut
	}
	return val, ok
}

func binaryField(b []byte, num protowire.Number) (string, error) {
	var val []byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return "", protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return "", protowire.ParseError(l)
			}
			val, b = v, b[l:]
			continue
		}
		// Another wire type under the field's number is an unknown field
		// to the decoder too.
		if typ == protowire.StartGroupType {
			var err error
			if l, err = skipGroup(n, b); err != nil {
				return "", err
			}
		} else if l = protowire.ConsumeFieldValue(n, typ, b); l < 0 {
			return "", protowire.ParseError(l)
		}
		b = b[l:]
	}
	return string(val), nil
}

// skipGroup is protowire.ConsumeFieldValue for a group, without its
// recursion: the decoder keeps unknown groups nested up to protobuf's
// default limit (10,000, whatever RecursionLimit says), and recursing that
// deep grew a refused caller's goroutine stack by 1 MiB for a 40 KB body.
// It returns the group's length after its start tag.
func skipGroup(num protowire.Number, b []byte) (int, error) {
	open := []protowire.Number{num}
	n := 0
	for len(open) > 0 {
		if len(open) > protowire.DefaultRecursionLimit+1 {
			return 0, errors.New("groups nested too deep")
		}
		m, typ, l := protowire.ConsumeTag(b[n:])
		if l < 0 {
			return 0, protowire.ParseError(l)
		}
		n += l
		switch typ {
		case protowire.StartGroupType:
			open = append(open, m)
		case protowire.EndGroupType:
			if m != open[len(open)-1] {
				return 0, errors.New("mismatching end group marker")
			}
			open = open[:len(open)-1]
		default:
			if l = protowire.ConsumeFieldValue(m, typ, b[n:]); l < 0 {
				return 0, protowire.ParseError(l)
			}
			n += l
		}
	}
	return n, nil
}

func jsonField(b []byte, jsonName, protoName string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", errors.New("the request is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		if k, _ := t.(string); k == jsonName || k == protoName {
			switch v, err := dec.Token(); {
			case err != nil:
				return "", err
			case v == nil:
				return "", nil // null is the default, as in protojson
			default:
				s, ok := v.(string)
				if !ok {
					return "", fmt.Errorf("%s must be a string", jsonName)
				}
				return s, nil
			}
		}
		if err := skipJSON(dec); err != nil {
			return "", err
		}
	}
	return "", nil
}

// skipJSON reads one value (encoding/json's token reader does not recurse,
// but keeps a word of state per level): nested deeper than MaxDecodeDepth is
// refused, as the decoder refuses it.
func skipJSON(dec *json.Decoder) error {
	depth := 0
	for {
		if depth > MaxDecodeDepth {
			return fmt.Errorf("nested deeper than %d", MaxDecodeDepth)
		}
		t, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// admit decides whether the caller may have its request read, then reads it
// into msg. A request that names an office is refused (403) before it is
// decoded when the caller's key may not act as its agent there. fd is the
// request's office_id field (officeField), nil if it has none.
func (s *service) admit(ctx context.Context, raw *rawRequest, msg proto.Message, fd protoreflect.FieldDescriptor) error {
	c, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	var office string
	if fd != nil {
		if office, err = raw.officeOf(fd); err != nil {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read office_id: %w", err))
		}
		if err := c.principal.CheckAgent(office, c.agent); err != nil {
			s.log.Debug("rpc refused before decoding", "office", office, "key", c.principal.ID, "err", err)
			return toConnect(err)
		}
	}
	s.decodes.Add(1)
	if err := raw.decode(msg); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unmarshal into %T: %w", msg, err))
	}
	if fd != nil && msg.ProtoReflect().Get(fd).String() != office {
		// Never expected (FuzzOfficeOf holds the two readings equal); were
		// they to differ, the office checked is not the one acted in.
		return connect.NewError(connect.CodeInvalidArgument, errors.New("office_id is ambiguous"))
	}
	return nil
}

// agentService builds the AgentService handler as the generated
// NewAgentServiceHandler does, with each request read through admit.
func (s *Server) agentService(opts ...connect.HandlerOption) (string, http.Handler) {
	svc := &service{s}
	methods := smcpv1.File_smcp_v1_service_proto.Services().ByName("AgentService").Methods()
	stock := opts
	opts = append(slices.Clip(opts), codecs()...)
	handlers := map[string]http.Handler{}
	add := func(h *connect.Handler, procedure string) { handlers[procedure] = h }
	add(unary(svc, methods.ByName("ListRoom"), svc.ListRoom, opts))
	add(unary(svc, methods.ByName("GetTools"), svc.GetTools, opts))
	add(unary(svc, methods.ByName("GetConfig"), svc.GetConfig, opts))
	// CallTool's params are taken out of the request before admit decodes
	// it (a walk over its top-level fields that builds nothing, like the
	// office's) and go to the computer written from their bytes.
	callTool := methods.ByName("CallTool")
	paramsField := callTool.Input().Fields().ByName("params").Number()
	callToolOffice := officeField(callTool)
	add(connect.NewUnaryHandlerSimple(procedureOf(callTool), func(ctx context.Context, raw *rawRequest) (*smcpv1.CallToolResponse, error) {
		req := &smcpv1.CallToolRequest{}
		params, ok := raw.takeField(paramsField)
		if err := svc.admit(ctx, raw, req, callToolOffice); err != nil {
			return nil, err
		}
		return svc.callTool(ctx, req, params, ok)
	}, connect.WithSchema(callTool), connect.WithHandlerOptions(opts...)), procedureOf(callTool))
	add(unary(svc, methods.ByName("CancelToolCall"), svc.CancelToolCall, opts))
	add(unary(svc, methods.ByName("GetDesktop"), svc.GetDesktop, opts))
	add(unary(svc, methods.ByName("GetFinder"), svc.GetFinder, opts))
	add(unary(svc, methods.ByName("ReadResource"), svc.ReadResource, opts))
	add(unary(svc, methods.ByName("ListOffices"), svc.ListOffices, opts))
	add(unary(svc, methods.ByName("GetResources"), svc.GetResources, opts))
	add(unary(svc, methods.ByName("GetSkills"), svc.GetSkills, opts))
	add(unary(svc, methods.ByName("GetSkill"), svc.GetSkill, opts))
	add(unary(svc, methods.ByName("EvictAgent"), svc.EvictAgent, opts))
	add(unary(svc, methods.ByName("ListAudit"), svc.ListAudit, opts))
	add(unary(svc, methods.ByName("ListConnections"), svc.ListConnections, opts))
	add(unary(svc, methods.ByName("ListQuotas"), svc.ListQuotas, opts))
	add(unary(svc, methods.ByName("GetFigures"), svc.GetFigures, opts))
	add(unary(svc, methods.ByName("ListSignIns"), svc.ListSignIns, opts))
	read := methods.ByName("ReadBlob")
	readOffice := officeField(read)
	add(connect.NewServerStreamHandlerSimple(procedureOf(read),
		func(ctx context.Context, raw *rawRequest, stream *connect.ServerStream[smcpv1.ReadBlobResponse]) error {
			req := &smcpv1.ReadBlobRequest{}
			if err := svc.admit(ctx, raw, req, readOffice); err != nil {
				return err
			}
			return svc.ReadBlob(ctx, req, stream)
			// Uncompressed whatever the client accepts: blobs are mostly
			// compressed already (images, archives), and gzip of their
			// chunks was half the gateway's CPU per byte, at 40 MB/s.
		}, connect.WithSchema(read), connect.WithHandlerOptions(opts...), connect.WithCompression("gzip", nil, nil)), procedureOf(read))
	// PutBlob names its office in its first message's header, not at the
	// top, and its messages are flat (no Struct to nest): connect's own
	// codecs read them, and the office is checked (service.act) before
	// anything is sent to a computer.
	put := methods.ByName("PutBlob")
	add(connect.NewClientStreamHandlerSimple(procedureOf(put), svc.PutBlob,
		connect.WithSchema(put), connect.WithHandlerOptions(stock...)), procedureOf(put))
	watch := methods.ByName("WatchOffice")
	watchOffice := officeField(watch)
	add(connect.NewServerStreamHandlerSimple(procedureOf(watch),
		func(ctx context.Context, raw *rawRequest, stream *connect.ServerStream[smcpv1.WatchOfficeResponse]) error {
			req := &smcpv1.WatchOfficeRequest{}
			if err := svc.admit(ctx, raw, req, watchOffice); err != nil {
				return err
			}
			return svc.WatchOffice(ctx, req, stream)
		}, connect.WithSchema(watch), connect.WithHandlerOptions(opts...)), procedureOf(watch))
	return "/" + smcpv1connect.AgentServiceName + "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
}

// officeField is the office_id field of m's request, nil if it has none:
// looked up once per method, not per call.
func officeField(m protoreflect.MethodDescriptor) protoreflect.FieldDescriptor {
	return m.Input().Fields().ByName("office_id")
}

func procedureOf(m protoreflect.MethodDescriptor) string {
	return "/" + string(m.Parent().FullName()) + "/" + string(m.Name())
}

// unary is one unary method whose request is read through admit.
func unary[Req, Res any, PReq interface {
	*Req
	proto.Message
}](svc *service, m protoreflect.MethodDescriptor, call func(context.Context, PReq) (*Res, error), opts []connect.HandlerOption) (*connect.Handler, string) {
	procedure := procedureOf(m)
	office := officeField(m)
	return connect.NewUnaryHandlerSimple(procedure, func(ctx context.Context, raw *rawRequest) (*Res, error) {
		req := PReq(new(Req))
		if err := svc.admit(ctx, raw, req, office); err != nil {
			return nil, err
		}
		return call(ctx, req)
	}, connect.WithSchema(m), connect.WithHandlerOptions(opts...)), procedure
}
