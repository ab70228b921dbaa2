package core

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// An agent may hold at most MaxAgentInFlight requests, whichever front end
// they come from: an RPC caller acting as the office's agent shares the bound.
func TestAgentInFlightBound(t *testing.T) {
	release := make(chan struct{})
	wait := func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		<-release
		return payload, true
	}
	o := newTestOffice(t, Config{MaxAgentInFlight: 2}, wait)
	results := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, fmt.Sprintf(`{"agent":"alice","req_id":"r%d","computer":"pc"}`, i)))
			results <- err
		}()
		<-o.arrived
	}
	_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r3","computer":"pc"}`))
	wantCode(t, err, CodeTooManyPending)

	lease, err := o.h.ActAsAgent(&Principal{ID: "rpc"}, "o", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	_, err = lease.GetTools(context.Background(), &smcpv1.GetToolsReq{Agent: "alice", ReqId: "r4", Computer: "pc"})
	wantCode(t, err, CodeTooManyPending)

	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	// The slots are free again.
	if _, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r5","computer":"pc"}`)); err != nil {
		t.Fatal(err)
	}
}

// FuzzSessionEvents feeds arbitrary payloads for every event a session
// handles through the same decode → core path the front ends use: no input
// may panic, and every refusal is a *smcp.Error with a protocol code.
func FuzzSessionEvents(f *testing.F) {
	events := append([]string{smcp.EventJoinOffice, smcp.EventLeaveOffice, smcp.EventListRoom, smcp.EventToolCallCancel, smcp.EventUpdateConfig}, smcp.EventNames(smcp.Routed)...)
	seeds := []string{
		`{"agent":"alice","req_id":"1","computer":"pc","tool_name":"t","params":{},"timeout":5}`,
		`{"role":"agent","name":"alice","office_id":"o"}`,
		`{"role":"computer","name":"pc","office_id":"other"}`,
		`{"office_id":"o"}`, `{"agent":"alice","req_id":"1","office_id":"other"}`,
		`{"agent":"alice","req_id":"1","computer":"faraway","timeout":99999}`,
		`{"computer":"pc","uri":"dpe://h/d","offset":-1,"limit":1000}`,
		`[]`, `null`, `"x"`, `{"timeout":"5"}`, `{"agent":1}`, `{{`, `{"a":[[[[[[[[[[]]]]]]]]]]}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		o := newTestOffice(t, Config{}, echo)
		event := events[int(which)%len(events)]
		check := func(err error) {
			if err == nil {
				return
			}
			e, ok := smcp.AsError(err)
			if !ok {
				t.Fatalf("%s %q: error is not a protocol error: %v", event, payload, err)
			}
			if e.Code < 400 {
				t.Fatalf("%s %q: code %d", event, payload, e.Code)
			}
		}
		for _, s := range []*Session{o.agent, o.pc} {
			switch event {
			case smcp.EventJoinOffice:
				var req smcpv1.EnterOfficeReq
				if smcp.Unmarshal(payload, &req) == nil {
					check(s.Join(&req))
				}
			case smcp.EventLeaveOffice:
				var req smcpv1.LeaveOfficeReq
				if smcp.Unmarshal(payload, &req) == nil {
					check(s.Leave(req.GetOfficeId()))
				}
			case smcp.EventListRoom:
				var req smcpv1.ListRoomReq
				if smcp.Unmarshal(payload, &req) == nil {
					sessions, err := s.ListRoom(req.GetOfficeId())
					check(err)
					for _, m := range sessions {
						if m.GetOfficeId() != "o" {
							t.Fatalf("list_room %q listed a member of another office: %v", payload, m)
						}
					}
				}
			case smcp.EventToolCallCancel:
				var req smcpv1.AgentCallData
				if smcp.Unmarshal(payload, &req) == nil {
					check(s.CancelToolCall(&req))
				}
			case smcp.EventUpdateConfig:
				check(s.Update(event))
			default:
				req, err := ParseRequest(event, payload)
				check(err)
				if err != nil {
					continue
				}
				_, err = s.Route(context.Background(), req)
				check(err)
			}
		}
		// Isolation holds whatever was sent: nothing reached the computer of
		// the other office.
		if got := o.farConn.received(); len(got) != 0 {
			t.Fatalf("%s %q reached a computer of another office: %v", event, payload, got)
		}
	})
}
