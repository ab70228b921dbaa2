package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestClusterListOffices: in cluster mode ListOffices is the cluster's,
// whichever node answers, as the proto says: the offices this node has a
// member in, each with its whole membership across nodes from the
// registry, and an office whose members are all on other nodes once they
// reported it (a console behind a load balancer sees one list, not each
// node's in turn).
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
	const want = "o agent=alice pcA,pcB; p agent= pcX"
	if got := list(nodes[1].URL); got != want {
		t.Errorf("node 1: %q, want %q", got, want)
	}
	// Node 0 has nobody in p: it lists it from node 1's report, posted
	// every 2 s.
	testwait.Until(t, "node 0 lists office p", func() bool { return list(nodes[0].URL) == want })
}
