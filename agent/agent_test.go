package agent

import (
	"context"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// request refuses, before sending anything, a request or answer type that
// is not the protocol table's for the event (the client has no connection
// here: reaching the socket would panic).
func TestRequestFollowsTheProtocolTable(t *testing.T) {
	a := &Client{name: "bot"}
	ctx := context.Background()
	if _, err := request[*smcpv1.GetToolsRet](ctx, a, smcp.EventGetTools, &smcpv1.GetFinderReq{}); err == nil ||
		!strings.Contains(err.Error(), "takes smcp.v1.GetToolsReq") {
		t.Errorf("wrong request type: %v", err)
	}
	if _, err := request[*smcpv1.GetFinderRet](ctx, a, smcp.EventGetTools, &smcpv1.GetToolsReq{}); err == nil ||
		!strings.Contains(err.Error(), "answers") {
		t.Errorf("wrong answer type: %v", err)
	}
	if _, err := request[*smcpv1.OfficeAck](ctx, a, smcp.NotifyEnterOffice, &smcpv1.EnterOfficeNotification{}); err == nil {
		t.Error("a notification is not a request")
	}
}
