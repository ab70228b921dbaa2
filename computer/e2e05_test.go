package computer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A 0.5 office end to end: a gateway serving the 0.5 draft, our computer
// and our Socket.IO agent speaking it (empty join and leave acks), a tool
// call through it, and a second computer refused with 4101 as the one
// computer seat is taken.
func TestE2EOffice05(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger(),
		SIO: sio.Config{Protocols: []smcp.Version{smcp.V05}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	doc := fmt.Sprintf(`{"servers": {"a": {"type": "streamable", "server_parameters": {"url": %q}}}}`,
		fixture(t, testmcp.New("a", testmcp.Options{})))
	h := newComputerFrom(t, computer.Protocol05, doc, []string{"a"})
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-05", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)

	ag, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Version: "0.5.0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.JoinOffice(ctxT(t), smcp.RoleAgent, "bot", "office-05"); err != nil {
		t.Fatal(err)
	}
	args, err := ag.RequestArgs(ctxT(t), smcp.EventToolCall, map[string]any{"agent": "bot", "req_id": "r1", "computer": "pc",
		"tool_name": "a__echo", "params": map[string]any{"text": "hi"}, "timeout": 20})
	if err != nil || len(args) != 1 {
		t.Fatalf("tool call: %v %v", args, err)
	}
	var res map[string]any
	if err := json.Unmarshal(args[0], &res); err != nil || res["isError"] != false || resultText(t, res) != "a: hi" {
		t.Fatalf("tool call: %s", args[0])
	}

	h2 := newComputerFrom(t, computer.Protocol05, doc, []string{"a"}, func(o *computer.Options) { o.Name = "pc2" })
	// A refused join is retried until the context ends (the seat may free):
	// a few seconds show the refusal.
	short, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = h2.c.Connect(short, computer.Gateway{URL: gw.URL, Office: "office-05", Dial: sioclient.Options{Logger: quietLogger()}})
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeRoomFull || !strings.Contains(err.Error(), "Room already has a computer") {
		t.Fatalf("second computer: %v, want 4101", err)
	}
	if err := ag.LeaveOffice(ctxT(t), "office-05"); err != nil {
		t.Fatalf("leave: %v", err)
	}
}
