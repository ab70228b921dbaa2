package computer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Every routed event of the protocol table has a handler, which refuses a
// request for another computer (404, PROTOCOL.md §6) and a field of the
// wrong type by the table's rules (400), before doing anything.
func TestEveryRoutedEventIsServedByItsTypedHandler(t *testing.T) {
	h := newComputer(t, nil)
	for _, e := range smcp.ProfileOf(smcp.V02).Events(smcp.Routed) {
		if ans := h.call(e.Name, map[string]any{"computer": "other"}); ans["code"] != 404.0 ||
			!strings.Contains(ans["message"].(string), `this is computer "pc", not "other"`) {
			t.Errorf("%s for another computer: %v", e.Name, ans)
		}
		if ans := h.call(e.Name, map[string]any{"req_id": 7}); ans["code"] != 400.0 ||
			!strings.Contains(ans["message"].(string), "req_id must be a string") {
			t.Errorf("%s with a numeric req_id: %v", e.Name, ans)
		}
		if ans := roundTrip(t, h.c.Handle(context.Background(), e.Name, `["not", "an", "object"]`)); ans["code"] != 400.0 {
			t.Errorf("%s with an array: %v", e.Name, ans)
		}
	}
}
