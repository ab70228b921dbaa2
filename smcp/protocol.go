package smcp

import (
	"encoding/json"
	"math"
	"strconv"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// The protocol table: every SMCP event declared once (PROTOCOL.md §3), with
// what the gateway needs to handle it. The gateway's core, its Socket.IO and
// RPC front ends dispatch through it; adding an event is adding an entry.

// Kind says who handles an event.
type Kind int

const (
	// Server events are sent by a client and handled by the gateway.
	Server Kind = iota + 1
	// Routed events are sent by an agent and routed by the gateway to one
	// computer, whose ack is the agent's answer.
	Routed
	// Notify events are sent by the gateway to the members of an office.
	Notify
)

// DeadlineClass says how long the gateway waits for a routed event's answer.
type DeadlineClass int

const (
	// DefaultDeadline is the gateway's request timeout (30 s by default).
	DefaultDeadline DeadlineClass = iota
	// ToolCallDeadline is the request's own timeout plus a margin.
	ToolCallDeadline
)

// AckForm is how an event's ack is answered in one profile.
type AckForm int

const (
	// NoAck: the event has no ack; one the client asks for anyway is never
	// answered (server:tool_call_cancel from 0.3, PROTOCOL-0.4.md §4).
	NoAck AckForm = iota
	// AckIfAsked: fire and forget, but a client that asks for an ack gets
	// [] (done) or a flat error (refused).
	AckIfAsked
	// OfficeAck: two arguments, [true, null] or [false, "<reason>"] (join
	// and leave).
	OfficeAck
	// AnswerAck: one argument, the answer or a flat error.
	AnswerAck
	// EmptyAck: no argument when done, one flat error when refused (join
	// and leave from 0.5).
	EmptyAck
)

// Span is a stretch of versions over which an event keeps one ack form:
// from From until the next span of the event, or its Until.
type Span struct {
	From Version
	Ack  AckForm
}

// FieldType is the JSON type a checked field must have.
type FieldType int

const (
	// String fields are JSON strings; null or absent count as "".
	String FieldType = iota + 1
	// Int fields are integral JSON numbers (or strings holding one, as
	// protojson reads an int32); null or absent count as 0.
	Int
	// Object fields are JSON objects or null.
	Object
)

// Field is a top-level field of a request that the gateway checks.
type Field struct {
	Key  string
	Type FieldType
	// Required refuses "" (String) or a missing value.
	Required bool
	// Min and Max bound an Int field (both inclusive).
	Min, Max int64
}

// EventInfo declares one event.
type EventInfo struct {
	Name string
	Kind Kind
	// Spans say from which version the event exists (the first span's
	// From) and its ack form in each version, oldest first. A profile is
	// the events whose spans cover it: a new version is a new column, that
	// is a span where an event changes and nothing where it does not.
	Spans []Span
	// Until is the first version without the event; zero while it exists.
	Until Version
	// NewRequest makes the event's payload message; nil for none.
	NewRequest func() proto.Message
	// NewAnswer makes the message of its answer (the computer's ack for a
	// routed event); nil when it has no answer or it is not a message.
	NewAnswer func() proto.Message
	// Fields are the fields the gateway checks (routed events), besides
	// which nothing of the payload is read.
	Fields []Field
	// Deadline is the deadline class of a routed event.
	Deadline DeadlineClass
	// Notifies is the notify: event a server event is broadcast as.
	Notifies string
	// GatewayResults: once routed, the gateway answers a timeout, a computer
	// gone or a failed answer with a CallToolResult (ToolTimeoutResult,
	// ToolErrorResult) instead of a flat error (client:tool_call).
	GatewayResults bool
}

// Tool-call timeout bounds in seconds (PROTOCOL.md §3 rule 5).
const (
	MinToolCallTimeout = 1
	MaxToolCallTimeout = 3600
)

// routedFields are checked on every routed event (PROTOCOL.md §3 rules 1-3).
var routedFields = []Field{
	{Key: "agent", Type: String, Required: true},
	{Key: "req_id", Type: String, Required: true},
	{Key: "computer", Type: String, Required: true},
}

func routed(extra ...Field) []Field { return append(append([]Field(nil), routedFields...), extra...) }

func msg[T any, P interface {
	*T
	proto.Message
}]() func() proto.Message {
	return func() proto.Message { return P(new(T)) }
}

// Spans of the table: the ack forms by version.
var (
	since02Office = []Span{{V02, OfficeAck}, {V05, EmptyAck}}
	since02Answer = []Span{{V02, AnswerAck}}
	since03Answer = []Span{{V03, AnswerAck}}
	since04Answer = []Span{{V04, AnswerAck}}
	// 0.5 forbids acking server:update_* (PROTOCOL-0.5.md row 12).
	since02IfAsked = []Span{{V02, AckIfAsked}, {V05, NoAck}}
	since03IfAsked = []Span{{V03, AckIfAsked}, {V05, NoAck}}
	since02NoAck   = []Span{{V02, NoAck}}
	since03NoAck   = []Span{{V03, NoAck}}
)

// protocol is the table, in PROTOCOL.md's order, then PROTOCOL-0.4.md's
// additions. client:get_finder, client:read_resource and
// server:update_finder are this gateway's extensions, kept in every profile
// (PROTOCOL-0.4.md §8).
var protocol = []EventInfo{
	{Name: EventJoinOffice, Kind: Server, Spans: since02Office, NewRequest: msg[smcpv1.EnterOfficeReq](), NewAnswer: msg[smcpv1.OfficeAck]()},
	{Name: EventLeaveOffice, Kind: Server, Spans: since02Office, NewRequest: msg[smcpv1.LeaveOfficeReq](), NewAnswer: msg[smcpv1.OfficeAck]()},
	{Name: EventListRoom, Kind: Server, Spans: since02Answer, NewRequest: msg[smcpv1.ListRoomReq](), NewAnswer: msg[smcpv1.ListRoomRet]()},
	{Name: EventUpdateConfig, Kind: Server, Spans: since02IfAsked, NewRequest: msg[smcpv1.UpdateComputerConfigReq](), Notifies: NotifyUpdateConfig},
	{Name: EventUpdateToolList, Kind: Server, Spans: since02IfAsked, NewRequest: msg[smcpv1.UpdateComputerConfigReq](), Notifies: NotifyUpdateToolList},
	{Name: EventUpdateDesktop, Kind: Server, Spans: since02IfAsked, NewRequest: msg[smcpv1.UpdateComputerConfigReq](), Notifies: NotifyUpdateDesktop},
	{Name: EventUpdateFinder, Kind: Server, Spans: since02IfAsked, NewRequest: msg[smcpv1.UpdateComputerConfigReq](), Notifies: NotifyUpdateFinder},
	// 0.2.2 took the ack away (PROTOCOL-0.4.md §1): a 0.2 client that asks
	// gets one as before.
	{Name: EventToolCallCancel, Kind: Server, Spans: []Span{{V02, AckIfAsked}, {V03, NoAck}}, NewRequest: msg[smcpv1.AgentCallData](), Notifies: NotifyToolCallCancel},
	{Name: EventUpdateSkills, Kind: Server, Spans: since03IfAsked, NewRequest: msg[smcpv1.UpdateComputerConfigReq](), Notifies: NotifyUpdateSkills},

	{Name: EventToolCall, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.ToolCallReq](), NewAnswer: msg[smcpv1.CallToolResult](),
		Fields: routed(
			Field{Key: "tool_name", Type: String, Required: true},
			Field{Key: "params", Type: Object},
			Field{Key: "timeout", Type: Int, Required: true, Min: MinToolCallTimeout, Max: MaxToolCallTimeout},
		),
		Deadline: ToolCallDeadline, GatewayResults: true},
	{Name: EventGetConfig, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.GetComputerConfigReq](), NewAnswer: msg[smcpv1.GetComputerConfigRet](),
		Fields: routed()},
	{Name: EventGetTools, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.GetToolsReq](), NewAnswer: msg[smcpv1.GetToolsRet](),
		Fields: routed()},
	{Name: EventGetDesktop, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.GetDeskTopReq](), NewAnswer: msg[smcpv1.GetDeskTopRet](),
		Fields: routed()},
	{Name: EventGetFinder, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.GetFinderReq](), NewAnswer: msg[smcpv1.GetFinderRet](),
		Fields: routed()},
	{Name: EventReadResource, Kind: Routed, Spans: since02Answer, NewRequest: msg[smcpv1.ReadResourceReq](), NewAnswer: msg[smcpv1.ReadResourceRet](),
		Fields: routed(Field{Key: "uri", Type: String, Required: true})},
	// The 0.3 additions read nothing beyond the routing fields: mcp_server,
	// name, rel_path, blob_handle, upload_id and blob are the computer's
	// (PROTOCOL-0.4.md §4 G2).
	{Name: EventGetResources, Kind: Routed, Spans: since03Answer, NewRequest: msg[smcpv1.GetResourcesReq](), NewAnswer: msg[smcpv1.GetResourcesRet](),
		Fields: routed()},
	{Name: EventGetSkills, Kind: Routed, Spans: since03Answer, NewRequest: msg[smcpv1.GetSkillsReq](), NewAnswer: msg[smcpv1.GetSkillsRet](),
		Fields: routed()},
	{Name: EventGetSkill, Kind: Routed, Spans: since03Answer, NewRequest: msg[smcpv1.GetSkillReq](), NewAnswer: msg[smcpv1.GetSkillRet](),
		Fields: routed()},
	{Name: EventGetBlob, Kind: Routed, Spans: since03Answer, NewRequest: msg[smcpv1.GetBlobReq](), NewAnswer: msg[smcpv1.GetBlobRet](),
		Fields: routed()},
	{Name: EventPutBlob, Kind: Routed, Spans: since04Answer, NewRequest: msg[smcpv1.PutBlobReq](), NewAnswer: msg[smcpv1.PutBlobRet](),
		Fields: routed()},

	{Name: NotifyEnterOffice, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.EnterOfficeNotification]()},
	{Name: NotifyLeaveOffice, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.LeaveOfficeNotification]()},
	{Name: NotifyUpdateConfig, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.UpdateComputerConfigReq]()},
	{Name: NotifyUpdateToolList, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.UpdateComputerConfigReq]()},
	{Name: NotifyUpdateDesktop, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.UpdateComputerConfigReq]()},
	{Name: NotifyUpdateFinder, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.UpdateComputerConfigReq]()},
	{Name: NotifyToolCallCancel, Kind: Notify, Spans: since02NoAck, NewRequest: msg[smcpv1.AgentCallData]()},
	{Name: NotifyUpdateSkills, Kind: Notify, Spans: since03NoAck, NewRequest: msg[smcpv1.UpdateComputerConfigReq]()},
}

// SeatPerRole reports whether offices of profile v hold one agent and one
// computer, and refuse joins, leaves and listings with the room codes
// (4101, 4103, 4104, 4106) rather than 403: 0.5's room model
// (PROTOCOL-0.5.md rows 1-7).
func (v Version) SeatPerRole() bool { return v.Compare(V05) >= 0 }

// SenderNamesItself reports whether, in profile v, a fire-and-forget event
// is told to the office under its sender's session name whatever name its
// payload gives, rather than refused for a name that is not the sender's
// (server:tool_call_cancel): 0.5's rule (PROTOCOL-0.5.md row 12).
func (v Version) SenderNamesItself() bool { return v.Compare(V05) >= 0 }

var byName = func() map[string]*EventInfo {
	m := make(map[string]*EventInfo, len(protocol))
	for i := range protocol {
		m[protocol[i].Name] = &protocol[i]
	}
	return m
}()

// Event returns the declaration of an event.
func Event(name string) (*EventInfo, bool) {
	e, ok := byName[name]
	return e, ok
}

// In reports whether the event exists in profile v.
func (e *EventInfo) In(v Version) bool {
	return len(e.Spans) > 0 && e.Spans[0].From.Compare(v) <= 0 && (e.Until.IsZero() || v.Compare(e.Until) < 0)
}

// Ack is the event's ack form in profile v (NoAck where it does not exist).
func (e *EventInfo) Ack(v Version) AckForm {
	if !e.In(v) {
		return NoAck
	}
	form := NoAck
	for _, s := range e.Spans {
		if s.From.Compare(v) <= 0 {
			form = s.Ack
		}
	}
	return form
}

// Profile is the part of the table one version speaks.
type Profile struct {
	Version Version
	events  map[string]*EventInfo
}

// profileTables are derived from the table once, one per known version.
var profileTables = func() map[Version]*Profile {
	m := map[Version]*Profile{}
	for _, v := range Versions() {
		p := &Profile{Version: v, events: map[string]*EventInfo{}}
		for i := range protocol {
			if protocol[i].In(v) {
				p.events[protocol[i].Name] = &protocol[i]
			}
		}
		m[v] = p
	}
	return m
}()

// ProfileOf returns the profile of a known version, nil otherwise.
func ProfileOf(v Version) *Profile { return profileTables[v] }

// Event returns the declaration of an event of the profile.
func (p *Profile) Event(name string) (*EventInfo, bool) {
	e, ok := p.events[name]
	return e, ok
}

// Events returns the profile's events of one kind, in the table's order.
func (p *Profile) Events(k Kind) []*EventInfo {
	var out []*EventInfo
	for i := range protocol {
		if protocol[i].Kind == k && protocol[i].In(p.Version) {
			out = append(out, &protocol[i])
		}
	}
	return out
}

// Events returns the declarations of one kind in any profile, in the
// table's order.
func Events(k Kind) []*EventInfo {
	var out []*EventInfo
	for i := range protocol {
		if protocol[i].Kind == k {
			out = append(out, &protocol[i])
		}
	}
	return out
}

// EventNames returns the names of the events of one kind, in order.
func EventNames(k Kind) []string {
	var out []string
	for _, e := range Events(k) {
		out = append(out, e.Name)
	}
	return out
}

// maxFields bounds an entry's Fields (TestProtocolTable), so that Check
// keeps what it reads on the stack.
const maxFields = 8

// RoutedFields is what Check reads of a routed request.
type RoutedFields struct {
	Agent, ReqID, Computer string
	// Timeout is a tool call's timeout in seconds (0 for other events).
	Timeout int32
	// ToolName and Params are a tool call's tool_name (a checked JSON
	// string) and params as they are in the payload, unread (nil for other
	// events): for a caller that needs them, without walking it again.
	ToolName, Params json.RawMessage
}

// Check checks the payload of a routed event as it will be forwarded: a
// JSON object (checked whole, see CheckJSON's rules) whose declared fields
// have their declared types and bounds. Nothing else of it is read or
// changed. Errors are 400s.
func (e *EventInfo) Check(payload []byte) (RoutedFields, error) {
	var out RoutedFields
	got, err := e.fields(payload)
	if err != nil {
		return out, err
	}
	for i, f := range e.Fields {
		s, n, err := f.read(got[i], f.Key == "agent" || f.Key == "req_id" || f.Key == "computer")
		if err != nil {
			return out, Errorf(CodeBadRequest, "%s: %s", e.Name, err.Error())
		}
		switch f.Key {
		case "agent":
			out.Agent = s
		case "req_id":
			out.ReqID = s
		case "computer":
			out.Computer = s
		case "timeout":
			out.Timeout = int32(n)
		case "tool_name":
			out.ToolName = got[i]
		case "params":
			out.Params = got[i]
		}
	}
	return out, nil
}

// fields are the declared fields' values in payload, by index in e.Fields
// (nil where absent), from one walk over it; a payload that is not a JSON
// object is a 400.
func (e *EventInfo) fields(payload []byte) ([maxFields]json.RawMessage, error) {
	var got [maxFields]json.RawMessage
	err := walkObject(payload, func(_ int, key []byte, v json.RawMessage) error {
		for i := range e.Fields {
			if e.Fields[i].Key == string(key) {
				got[i] = v
			}
		}
		return nil
	})
	if err != nil {
		if i := skipSpace(payload, 0); i == len(payload) || payload[i] != '{' {
			return got, Errorf(CodeBadRequest, "%s: payload must be a JSON object", e.Name)
		}
		return got, Errorf(CodeBadRequest, "%s: %v", e.Name, err)
	}
	return got, nil
}

// CheckPresent is Check of the declared fields that payload carries, in
// one walk over it: an absent field is not required (a computer serves a
// direct caller's request without agent). Errors are 400s.
func (e *EventInfo) CheckPresent(payload []byte) error {
	got, err := e.fields(payload)
	if err != nil {
		return err
	}
	for i, f := range e.Fields {
		if got[i] == nil {
			continue
		}
		if _, _, err := f.read(got[i], false); err != nil {
			return Errorf(CodeBadRequest, "%s: %s", e.Name, err.Error())
		}
	}
	return nil
}

type fieldError string

func (e fieldError) Error() string { return string(e) }

// read checks one field's raw value (nil when absent); a string's value is
// returned when keep is set (else it is only checked, and plain text not
// copied).
func (f Field) read(v json.RawMessage, keep bool) (string, int64, error) {
	null := v == nil || string(v) == "null"
	switch f.Type {
	case String:
		var s string
		if !null {
			if v[0] != '"' {
				return "", 0, fieldError(f.Key + " must be a string")
			}
			if body := v[1 : len(v)-1]; !keep && plainASCII(body) {
				if f.Required && len(body) == 0 {
					return "", 0, fieldError(f.Key + " is required")
				}
				return "", 0, nil
			}
			var err error
			if s, err = RawString(v); err != nil {
				return "", 0, fieldError(f.Key + " must be a string")
			}
		}
		if f.Required && s == "" {
			return "", 0, fieldError(f.Key + " is required")
		}
		return s, 0, nil
	case Object:
		if !null && v[0] != '{' {
			return "", 0, fieldError(f.Key + " must be an object")
		}
		if f.Required && null {
			return "", 0, fieldError(f.Key + " is required")
		}
		return "", 0, nil
	case Int:
		var n int64
		if !null {
			var ok bool
			if n, ok = intValue(v); !ok {
				return "", 0, f.rangeError()
			}
		}
		if (f.Required && null) || ((f.Min != 0 || f.Max != 0) && (n < f.Min || n > f.Max)) {
			return "", 0, f.rangeError()
		}
		return "", n, nil
	}
	return "", 0, nil
}

func (f Field) rangeError() error {
	if f.Min != 0 || f.Max != 0 {
		return fieldError(f.Key + " must be an integer in " + strconv.FormatInt(f.Min, 10) + ".." +
			strconv.FormatInt(f.Max, 10) + unit(f.Key))
	}
	return fieldError(f.Key + " must be an integer")
}

func unit(key string) string {
	if key == "timeout" {
		return " seconds"
	}
	return ""
}

// intValue reads an int32 as protojson does: an integral number (30, 30.0,
// 3e1) or a string holding one.
func intValue(v json.RawMessage) (int64, bool) {
	lit := v
	if v[0] == '"' {
		s, err := RawString(v)
		if err != nil {
			return 0, false
		}
		lit = []byte(s)
		if len(lit) == 0 || !(lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') {
			return 0, false
		}
		if end, err := (&rawScanner{b: lit}).number(0); err != nil || end != len(lit) {
			return 0, false
		}
	}
	if n, err := strconv.ParseInt(string(lit), 10, 32); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int64(f), true
}
