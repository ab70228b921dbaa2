package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// TestClusterListOffices: in cluster mode ListOffices is the node's view, as
// the proto says: the offices this node has a member in, each with its
// whole membership across nodes from the registry; an office whose members
// are all on other nodes is not listed by this node.
func TestClusterListOffices(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 2)
	dialComputer(t, nodes[0].URL, "pcA", "o")
	dialComputer(t, nodes[1].URL, "pcB", "o")
	dialAgent(t, nodes[1].URL, "alice", "o")
	dialComputer(t, nodes[1].URL, "pcX", "p")

	list := func(url string) string {
		t.Helper()
		api := smcpv1connect.NewAgentServiceClient(http.DefaultClient, url)
		res, err := api.ListOffices(ctxT(t), &smcpv1.ListOfficesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range res.GetOffices() {
			out = append(out, o.GetOfficeId()+" agent="+o.GetAgent()+" "+strings.Join(o.GetComputers(), ","))
		}
		return strings.Join(out, "; ")
	}
	want := map[int]string{
		0: "o agent=alice pcA,pcB",
		1: "o agent=alice pcA,pcB; p agent= pcX",
	}
	for i, w := range want {
		if got := list(nodes[i].URL); got != w {
			t.Errorf("node %d: %q, want %q", i, got, w)
		}
	}
}
