package smcp

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

func TestTimeoutResultJSON(t *testing.T) {
	var got smcpv1.CallToolResult
	if err := Unmarshal(GatewayResult(Errorf(CodeTimeout, "x")), &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, ToolTimeoutResult()) {
		t.Fatalf("timeout result %v, want %v", &got, ToolTimeoutResult())
	}
	var gone smcpv1.CallToolResult
	if err := Unmarshal(GatewayResult(ComputerGoneError("pc")), &gone); err != nil {
		t.Fatal(err)
	}
	if !gone.GetIsError() || gone.GetMeta().GetFields()[MetaErrorCode].GetNumberValue() != CodeNotFound ||
		!strings.Contains(gone.GetContent()[0].GetFields()["text"].GetStringValue(), "left the office") {
		t.Fatalf("gone result %v", &gone)
	}
}

// Every entry of the table is complete for its kind, and every event name
// constant is in it exactly once.
func TestProtocolTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range protocol {
		if seen[e.Name] {
			t.Errorf("%s declared twice", e.Name)
		}
		seen[e.Name] = true
		if len(e.Fields) > maxFields {
			t.Errorf("%s: %d fields, Check reads at most %d", e.Name, len(e.Fields), maxFields)
		}
		if e.NewRequest == nil {
			t.Errorf("%s: no request type", e.Name)
		}
		switch e.Kind {
		case Routed:
			if e.NewAnswer == nil || len(e.Fields) < 3 || !strings.HasPrefix(e.Name, "client:") {
				t.Errorf("%s: incomplete routed entry", e.Name)
			}
		case Server:
			if !strings.HasPrefix(e.Name, "server:") {
				t.Errorf("%s: server event without server: prefix", e.Name)
			}
			if e.Notifies != "" {
				if n, ok := Event(e.Notifies); !ok || n.Kind != Notify {
					t.Errorf("%s notifies %q, not a notify event", e.Name, e.Notifies)
				}
			}
		case Notify:
			if !strings.HasPrefix(e.Name, "notify:") {
				t.Errorf("%s: notify event without notify: prefix", e.Name)
			}
		default:
			t.Errorf("%s: no kind", e.Name)
		}
	}
	if n := len(EventNames(Routed)); n != 11 {
		t.Errorf("%d routed events, want 11", n)
	}
}

func TestCheckRoutedFields(t *testing.T) {
	tc, _ := Event(EventToolCall)
	for _, bad := range []string{
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":"0x10"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":1e400}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5,"params":{"x":NaN}}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5,"params":"s"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":7,"timeout":5}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5} x`,
	} {
		if _, err := tc.Check([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, good := range []string{
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":"30"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":3e1,"params":null}`,
		`{"agent":"\u0061","req_id":"r","computer":"c","tool_name":"t","timeout":30.0,"params":{"n":18446744073709551616}}`,
	} {
		f, err := tc.Check([]byte(good))
		if err != nil || f.Timeout != 30 || f.Agent != "a" {
			t.Errorf("%s: %+v %v", good, f, err)
		}
	}
}

// Check reads a routed payload's keys in place: what it allocates is the
// routed fields' values it returns (agent, req_id, computer), not a string
// per key of the payload. A key written with escapes still counts.
func TestCheckAllocatesOnlyItsFields(t *testing.T) {
	tc, _ := Event(EventToolCall)
	payload := []byte(`{"agent":"agent-1","req_id":"r-123","computer":"pc","tool_name":"echo","params":{"text":"xxxx"},"timeout":30}`)
	allocs := testing.AllocsPerRun(100, func() {
		if f, err := tc.Check(payload); err != nil || f.Computer != "pc" {
			t.Fatalf("%+v %v", f, err)
		}
	})
	if allocs > 3 {
		t.Errorf("%v allocations per check, want at most 3 (the field values)", allocs)
	}
	f, err := tc.Check([]byte(`{"agent":"a","req_\u0069d":"r","computer":"c","tool_name":"t","timeout":5}`))
	if err != nil || f.ReqID != "r" {
		t.Errorf("escaped key: %+v %v", f, err)
	}
	// A field only checked (tool_name) is still checked.
	for _, c := range []struct {
		tool string
		ok   bool
	}{{`""`, false}, {`null`, false}, {`7`, false}, {`"\u00e9"`, true}, {`"é"`, true}, {`"t\n"`, true}} {
		_, err := tc.Check([]byte(`{"agent":"a","req_id":"r","computer":"c","tool_name":` + c.tool + `,"timeout":5}`))
		if (err == nil) != c.ok {
			t.Errorf("tool_name %s: %v", c.tool, err)
		}
	}
}

// The profiles derived from the table are PROTOCOL-0.4.md §3's and §4's:
// which events each version has, and their ack forms.
func TestProfiles(t *testing.T) {
	has := func(v Version, name string) bool { _, ok := ProfileOf(v).Event(name); return ok }
	for _, name := range []string{EventGetResources, EventGetSkills, EventGetSkill, EventGetBlob, EventUpdateSkills, NotifyUpdateSkills} {
		if has(V02, name) || !has(V03, name) || !has(V04, name) {
			t.Errorf("%s: want in 0.3 and 0.4 only", name)
		}
	}
	if has(V02, EventPutBlob) || has(V03, EventPutBlob) || !has(V04, EventPutBlob) {
		t.Errorf("%s: want in 0.4 only", EventPutBlob)
	}
	// This gateway's extensions are in every profile (§8).
	for _, v := range Versions() {
		for _, name := range []string{EventGetFinder, EventReadResource, EventUpdateFinder, NotifyUpdateFinder, EventToolCall, EventJoinOffice} {
			if !has(v, name) {
				t.Errorf("%s missing from profile %s", name, v)
			}
		}
	}
	cancel, _ := Event(EventToolCallCancel)
	if cancel.Ack(V02) != AckIfAsked || cancel.Ack(V03) != NoAck || cancel.Ack(V04) != NoAck {
		t.Errorf("tool_call_cancel acks: %v %v %v", cancel.Ack(V02), cancel.Ack(V03), cancel.Ack(V04))
	}
	join, _ := Event(EventJoinOffice)
	if join.Ack(V04) != OfficeAck {
		t.Errorf("join ack in 0.4: %v", join.Ack(V04))
	}
	leave, _ := Event(EventLeaveOffice)
	if join.Ack(V05) != EmptyAck || leave.Ack(V05) != EmptyAck {
		t.Errorf("join/leave acks in 0.5: %v %v", join.Ack(V05), leave.Ack(V05))
	}
	// 0.5 is a draft: known, never served by default.
	if !V05.Known() || !V05.Draft() || V04.Draft() || slices.Contains(DefaultVersions(), V05) || len(DefaultVersions()) != 3 {
		t.Errorf("0.5: known %v, draft %v, default versions %v", V05.Known(), V05.Draft(), DefaultVersions())
	}
	if n, want := len(ProfileOf(V05).Events(Routed)), 11; n != want {
		t.Errorf("0.5 has %d routed events, want 0.4's %d", n, want)
	}
	if n, want := len(ProfileOf(V02).Events(Routed)), 6; n != want {
		t.Errorf("0.2 has %d routed events, want %d", n, want)
	}
	if n, want := len(ProfileOf(V04).Events(Routed)), 11; n != want {
		t.Errorf("0.4 has %d routed events, want %d", n, want)
	}
	// An event removed in a later version leaves that profile.
	gone := EventInfo{Name: "x", Spans: []Span{{V02, AnswerAck}}, Until: V04}
	if !gone.In(V03) || gone.In(V04) || gone.Ack(V04) != NoAck {
		t.Errorf("Until not honoured")
	}
}

// PROTOCOL-0.4.md §2 H3 and H4, every row of the handshake matrix that is
// about versions.
func TestClientVersion(t *testing.T) {
	for _, bad := range []string{"", "0.2", "abc", "0.4.0-dev", "+0.4.0", " 0.4.0", "0.4.0 ", "1_0.0.0", "0.4.0.1", "0x1.0.0", "0..0"} {
		if _, ok := ParseClientVersion(bad); ok {
			t.Errorf("%q parsed as well-formed", bad)
		}
	}
	for _, c := range []struct {
		client string
		server Version
		ok     bool
	}{
		{"0.2.0", V02, true},
		{"0.2.1", V02, true},
		{"0.2.0", V03, false},
		{"0.3.0", V02, false},
		{"1.0.0", V02, false},
		{"1.0.0", Version{1, 2}, true},
		{"1.2.0", Version{1, 0}, false},
		{"0.4.999", V04, true},
		{"00.04.0", V04, true},
		{"99999999999999999999999.4.0", V04, false},
	} {
		cv, ok := ParseClientVersion(c.client)
		if !ok {
			t.Fatalf("%q: malformed", c.client)
		}
		if got := cv.CompatibleWith(c.server); got != c.ok {
			t.Errorf("client %s, server %s: compatible %v, want %v", c.client, c.server, got, c.ok)
		}
	}
	if V03.Full() != "0.3.2" || V04.Full() != "0.4.0" || V02.Full() != "0.2.0" {
		t.Errorf("full versions: %s %s %s", V02.Full(), V03.Full(), V04.Full())
	}
	if v, ok := LookupProfile("0.4"); !ok || v != V04 {
		t.Errorf("LookupProfile(0.4) = %v, %v", v, ok)
	}
	if _, ok := LookupProfile("0.6"); ok {
		t.Errorf("0.6 found as a profile")
	}
	if _, err := ParseProfile("0.6"); err == nil {
		t.Errorf("0.6 accepted as a profile")
	}
	if v, err := ParseProfile("0.3"); err != nil || v != V03 {
		t.Errorf("ParseProfile(0.3) = %v, %v", v, err)
	}
}
