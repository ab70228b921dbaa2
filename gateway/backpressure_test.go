package gateway_test

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/testheap"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestStoppedComputerHoldsBoundedBytes: 300 calls of 930 KB toward a
// computer that stopped reading (its socket unread, as a SIGSTOPped process
// leaves it) are refused with a flat 429 naming the bound once its queue is
// full, rather than held: the gateway's live heap grows by at most 64 MiB.
// Another office's calls go on meanwhile, and once the computer reads
// again every call it took is answered and the queue is empty.
func TestStoppedComputerHoldsBoundedBytes(t *testing.T) {
	const calls, chunk, limitMiB, heldMiB = 300, 930_000, 64, 32
	resume := make(chan struct{})
	var resumeOnce sync.Once
	resumed := func() { resumeOnce.Do(func() { close(resume) }) }
	// The stopped computer answers no ping either: under -race beside other
	// packages' tests the 300 calls can take longer than the default
	// heartbeat's 45 s, after which the computer would be gone (404).
	o := newRelayOffice(t, gateway.Config{Metrics: true, SIO: sio.Config{PingTimeout: 5 * time.Minute}}, func(string, []byte) string {
		<-resume // the raw client's one reader: the computer's socket is not read
		return `{"content":[],"isError":false}`
	})
	t.Cleanup(resumed) // before the clients' cleanups, which await their readers
	other := dialRaw(t, o.gw.URL, func(array []byte, reply func([]byte)) {
		if bytes.HasPrefix(array, []byte(`["client:`)) {
			reply([]byte(`[{"content":[],"isError":false}]`))
		}
	})
	other.join("computer", "pc", "o2")
	otherAgent := dialRaw(t, o.gw.URL, nil)
	otherAgent.join("agent", "ag", "o2")

	params := `{"data":"` + strings.Repeat("a", chunk) + `"}`
	base := heldHeap()
	h := testheap.Start()
	acks := make([]<-chan []byte, calls)
	for i := range acks {
		acks[i] = o.agent.emit("client:tool_call", toolCall("r"+strconv.Itoa(i), params, 60))
	}
	// A connection's events are handled in order: once the last is
	// answered (refused), every one before it was sent or refused.
	last := o.agent.wait(acks[calls-1], 30*time.Second)
	_, live, _ := h.Done()
	held := float64(heldHeap()-base) / (1 << 20)
	t.Logf("with the computer stopped the live heap grew by at most %.1f MiB, and holds %.1f MiB more", live, held)
	if !bytes.Contains(last, []byte(`"code":429`)) || !bytes.Contains(last, []byte("max_queued_bytes_per_computer")) {
		t.Fatalf("the last call toward a stopped computer: %s", last)
	}
	if live > limitMiB || held > heldMiB {
		t.Fatalf("toward a stopped computer the live heap grew by %.1f MiB (limit %d) and holds %.1f MiB more (limit %d)",
			live, limitMiB, held, heldMiB)
	}

	got := otherAgent.wait(otherAgent.emit("client:tool_call", `{"agent":"ag","req_id":"o2","computer":"pc","tool_name":"t","params":{},"timeout":5}`), 5*time.Second)
	if string(got) != `[{"content":[],"isError":false}]` {
		t.Fatalf("another office's call while a computer is stopped: %s", got)
	}

	resumed()
	refused := 1
	for _, ack := range acks[:calls-1] {
		got := o.agent.wait(ack, 30*time.Second)
		switch {
		case string(got) == `[{"content":[],"isError":false}]`:
		case bytes.Contains(got, []byte(`"code":429`)):
			refused++
		default:
			t.Fatalf("a call toward the computer: %s", got)
		}
	}
	t.Logf("%d of %d calls refused while the computer was stopped", refused, calls)
	testwait.Until(t, "the queue toward the computer empties", func() bool {
		return strings.Contains(scrape(t, o.gw.URL), "\nsmcp_queued_bytes 0\n")
	})
	got = o.agent.wait(o.agent.emit("client:tool_call", toolCall("after", params, 5)), 10*time.Second)
	if string(got) != `[{"content":[],"isError":false}]` {
		t.Fatalf("a call once the computer reads again: %s", got)
	}
}

// heldHeap is the heap's live bytes after a collection.
func heldHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestClusterStoppedComputerRefusal: an agent on another node than the
// stopped computer gets the computer node's refusal as it is (429 naming
// the bound), not "computer gone".
func TestClusterStoppedComputerRefusal(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 2)
	resume := make(chan struct{})
	o := newRelayOfficeOn(t, nodes[0], nodes[1], func(string, []byte) string {
		<-resume
		return `{"content":[],"isError":false}`
	})
	t.Cleanup(func() { close(resume) })
	params := `{"data":"` + strings.Repeat("a", 930_000) + `"}`
	acks := make([]<-chan []byte, 40)
	for i := range acks {
		acks[i] = o.agent.emit("client:tool_call", toolCall("r"+strconv.Itoa(i), params, 60))
	}
	// In order, as on one node: the last is refused once the queue is full.
	got := o.agent.wait(acks[len(acks)-1], 30*time.Second)
	if !bytes.Contains(got, []byte(`"code":429`)) || !bytes.Contains(got, []byte("max_queued_bytes_per_computer")) {
		t.Fatalf("a call across nodes toward a stopped computer: %s", got)
	}
}
