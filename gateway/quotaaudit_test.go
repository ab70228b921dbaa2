package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	smcpcomputer "github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// qaFronts are the front ends of the quota and audit tests, each with its
// own office (one agent seat per office) and its own key.
var qaFronts = []string{"sio", "connect", "grpc", "mcp"}

// qaGateway is a gateway whose keys are full-key (the computers') and
// slow-<front> per front end, each bound by quota (nil: none), with a
// computer "pc" in office q-<front>.
func qaGateway(t *testing.T, l *quota.Limits, a gateway.AuditConfig) (*gateway.Running, map[string]*computer) {
	t.Helper()
	keys := []core.Key{{Key: "full-key", ID: "full"}}
	table := &quota.Table{Keys: map[string]*quota.Limits{}}
	for _, f := range qaFronts {
		keys = append(keys, core.Key{Key: "slow-" + f, ID: "slow-" + f, Roles: []string{smcp.RoleAgent}})
		if l != nil {
			table.Keys["slow-"+f] = l
		}
	}
	ring, err := core.NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring, Quotas: table, Audit: a, Metrics: true, Logger: testLogger})
	pcs := map[string]*computer{}
	for _, f := range qaFronts {
		pcs[f] = dialComputerWithKey(t, g.URL, "full-key", "pc", "q-"+f)
	}
	return g, pcs
}

// qaCaller calls echo through one front end with its slow- key: the
// request id the computer saw, or the refusal.
type qaCaller func(t *testing.T, arg string) (reqID string, refusal error)

func qaCallers(t *testing.T, url string) map[string]qaCaller {
	t.Helper()
	params := func(arg string) *structpb.Struct {
		s, err := structpb.NewStruct(map[string]any{"text": arg})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// reqIDOf reads the request id from the test computer's answer
	// ("pc:<req_id>:map[...]").
	reqIDOf := func(text string) (string, bool) {
		parts := strings.SplitN(text, ":", 3)
		if len(parts) < 2 {
			return "", false
		}
		return parts[1], true
	}
	callers := map[string]qaCaller{}

	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: url, APIKey: "slow-sio", Logger: testLogger, Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "q-sio"); err != nil {
		t.Fatal(err)
	}
	callers["sio"] = func(t *testing.T, arg string) (string, error) {
		id := agent.NewReqID()
		_, err := ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Agent: "bot", ReqId: id, Computer: "pc", ToolName: "echo",
			Params: params(arg), Timeout: 20})
		return id, err
	}
	for _, grpc := range []bool{false, true} {
		front := map[bool]string{false: "connect", true: "grpc"}[grpc]
		c := rpcClient(t, url, grpc, connecttest.Headers(rpc.DefaultAPIKeyHeader, "slow-"+front, rpc.AgentHeader, "bot"))
		callers[front] = func(t *testing.T, arg string) (string, error) {
			id := agent.NewReqID()
			_, err := c.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: "q-" + front, Computer: "pc", ToolName: "echo",
				Params: params(arg), Timeout: 20, ReqId: id})
			return id, err
		}
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "quota-test", Version: "1"}, nil)
	rec := &answerRecorder{next: headerTransport{"x-api-key", "slow-mcp"}}
	cs, err := mc.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url + "/mcp/q-mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: rec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	callers["mcp"] = func(t *testing.T, arg string) (string, error) {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc__echo", Arguments: map[string]any{"text": arg}})
		if err != nil {
			return "", mcpError(rec, err)
		}
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if res.IsError {
			return "", mcpRefusal{text: text, meta: res.Meta}
		}
		id, ok := reqIDOf(text)
		if !ok {
			return "", fmt.Errorf("mcp tools/call answered %q", text)
		}
		return id, nil
	}
	return callers
}

// mcpRefusal is an MCP error result, as an error.
type mcpRefusal struct {
	text string
	meta mcp.Meta
}

func (r mcpRefusal) Error() string { return r.text }

// mcpTooMany is a tools/call answered with HTTP 429: the go-sdk's error
// (the JSON-RPC error of the body), and the status and Retry-After rec saw.
type mcpTooMany struct {
	err        error
	status     int
	retryAfter string
}

func (r mcpTooMany) Error() string { return r.err.Error() }
func (r mcpTooMany) Unwrap() error { return r.err }

// mcpError is err of a tools/call made through rec: an mcpTooMany when
// the POST was answered 429.
func mcpError(rec *answerRecorder, err error) error {
	if status, retryAfter := rec.last(); status == http.StatusTooManyRequests {
		return mcpTooMany{err: err, status: status, retryAfter: retryAfter}
	}
	return fmt.Errorf("mcp tools/call: %w", err)
}

// toolCalls is how many tool calls reached pc.
func toolCalls(pc *computer) int {
	n := 0
	for _, ev := range pc.receivedEvents() {
		if ev == smcp.EventToolCall {
			n++
		}
	}
	return n
}

// A key bound to 5 calls per second with a burst of 5 is refused, after
// its burst, on every front end with a hint of when to come back (a flat
// 429 with details.retry_after_ms on Socket.IO, ResourceExhausted with
// Retry-After on Connect, RetryInfo on gRPC, HTTP 429 with Retry-After and
// the JSON-RPC error's retry_after_ms on MCP), and no refused call reaches
// the computer.
func TestQuotaSlowKeyEveryFrontEnd(t *testing.T) {
	g, pcs := qaGateway(t, &quota.Limits{Bound: quota.Bound{CallsPerSecond: 5, Burst: 5}}, gateway.AuditConfig{})
	callers := qaCallers(t, g.URL)
	for _, front := range qaFronts {
		t.Run(front, func(t *testing.T) {
			admitted := 0
			var refusal error
			// The burst is admitted; at 5/s, fifty calls in a row cannot
			// all be.
			for range 50 {
				_, err := callers[front](t, "hi")
				if err != nil {
					refusal = err
					break
				}
				admitted++
			}
			if refusal == nil {
				t.Fatal("50 calls in a row admitted at 5/s")
			}
			if admitted < 5 {
				t.Fatalf("refused after %d calls, inside the burst of 5: %v", admitted, refusal)
			}
			if n := toolCalls(pcs[front]); n != admitted {
				t.Fatalf("the computer saw %d calls, %d were admitted", n, admitted)
			}
			checkQuotaRefusal(t, front, refusal)
		})
	}
	body := scrapeAs(t, g.URL, "full-key")
	for _, f := range []string{"socket.io", "rpc", "mcp"} {
		line := fmt.Sprintf(`smcp_governance_refused_total{front=%q,reason="quota_calls_per_second"}`, f)
		if !strings.Contains(body, line) {
			t.Errorf("/metrics has no %s", line)
		}
	}
}

func checkQuotaRefusal(t *testing.T, front string, err error) {
	t.Helper()
	var wait float64
	switch front {
	case "sio":
		e, ok := smcp.AsError(err)
		if !ok || e.Code != 429 {
			t.Fatalf("refusal %v is not a flat 429", err)
		}
		wait, _ = e.Details["retry_after_ms"].(float64)
		if e.Details["bound"] != quota.BoundRate {
			t.Fatalf("refusal details %v do not name the bound", e.Details)
		}
	case "connect", "grpc":
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
			t.Fatalf("refusal %v is not ResourceExhausted", err)
		}
		if front == "connect" {
			if s, err := strconv.Atoi(ce.Meta().Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("Retry-After %q", ce.Meta().Get("Retry-After"))
			}
		}
		for _, d := range ce.Details() {
			if v, err := d.Value(); err == nil {
				if ri, ok := v.(*errdetails.RetryInfo); ok {
					wait = float64(ri.GetRetryDelay().AsDuration().Milliseconds())
				}
			}
		}
	case "mcp":
		var r mcpTooMany
		if !errors.As(err, &r) {
			t.Fatalf("refusal %v is not an HTTP 429", err)
		}
		if s, err := strconv.Atoi(r.retryAfter); err != nil || s < 1 {
			t.Fatalf("Retry-After %q", r.retryAfter)
		}
		wait = mcpRetryAfterMS(t, r.err)
	}
	if wait <= 0 || wait > 200 {
		t.Fatalf("%s: retry after %vms, want in (0, 200] at 5/s", front, wait)
	}
}

// 10,000 calls across every front end (8 in flight on each) leave exactly
// 10,000 audit records, once the gateway has stopped (Stop drains the
// audit queue): matched by the request id the computer saw, each with its
// principal, office, tool, outcome and duration, and none holding an
// argument's value.
func TestAuditRecordsEveryCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	g, pcs := qaGateway(t, nil, gateway.AuditConfig{Sinks: []audit.Sink{sink}})
	const total = 10_000
	want, err := qaLoad(t, qaCallers(t, g.URL), total/len(qaFronts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, pc := range pcs {
		seen += toolCalls(pc)
	}
	if seen != total || len(want) != total {
		t.Fatalf("the computers saw %d calls, %d answered, %d were made", seen, len(want), total)
	}
	got, stray := readCallRecords(t, path, want)
	if stray != 0 {
		t.Fatalf("%d records of calls never made", stray)
	}
	if len(got) != len(want) {
		var missing []string
		for id, front := range want {
			if !got[id] {
				missing = append(missing, front+":"+id)
			}
		}
		slices.Sort(missing)
		t.Fatalf("%d records of %d calls; missing %v", len(got), len(want), missing[:min(len(missing), 20)])
	}
}

// A stop (SIGTERM) in the middle of calls on every front end loses no
// record of a call that was answered: every call its caller got an
// answer for is in the file once Stop returns (the audit is closed after
// the last call is answered; audit's TestCloseDrains: Close writes what is
// queued).
func TestAuditStopUnderLoadLosesNoRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	g, pcs := qaGateway(t, nil, gateway.AuditConfig{Sinks: []audit.Sink{sink}})
	callers := qaCallers(t, g.URL)
	stop := make(chan struct{})
	type result struct {
		answered map[string]string
		err      error
	}
	loaded := make(chan result, 1)
	go func() {
		a, err := qaLoad(t, callers, 1_000_000, stop)
		loaded <- result{a, err}
	}()
	testwait.Until(t, "calls on every front end", func() bool {
		for _, pc := range pcs {
			if toolCalls(pc) < 200 {
				return false
			}
		}
		return true
	})
	close(stop)
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	r := <-loaded
	if r.err != nil {
		t.Fatal(r.err)
	}
	got, _ := readCallRecords(t, path, r.answered)
	if len(got) != len(r.answered) {
		t.Fatalf("%d of %d answered calls have a record", len(got), len(r.answered))
	}
	t.Logf("%d calls answered before and during the stop, each recorded", len(r.answered))
}

// qaLoad makes n calls on each front end, 8 in flight on each, each with
// an argument no record may hold. It stops early, without an error, once
// stop is closed (nil: never). It returns the calls answered (request id →
// front end); a call that fails before stop is closed is the error.
func qaLoad(t *testing.T, callers map[string]qaCaller, n int, stop <-chan struct{}) (map[string]string, error) {
	const inFlight = 8
	var (
		mu       sync.Mutex
		answered = map[string]string{}
		firstErr error
		wg       sync.WaitGroup
	)
	for _, front := range qaFronts {
		next := atomic.Int64{}
		for range inFlight {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					id, err := callers[front](t, fmt.Sprintf("secret-%s-%d", front, i))
					select {
					case <-stop:
						if err != nil {
							return // refused or cut by the stop: not answered
						}
					default:
					}
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = fmt.Errorf("%s call %d: %w", front, i, err)
					}
					if err == nil {
						answered[id] = front
					}
					failed := firstErr != nil
					mu.Unlock()
					if failed {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return answered, firstErr
}

// readCallRecords reads the answered tool call records of the audit file
// at path, checking each against the calls answered (request id → front
// end): two records of one call, one missing a field or holding an
// argument's value fail t. It returns the request ids recorded, and how
// many records are of no call answered.
func readCallRecords(t *testing.T, path string, made map[string]string) (got map[string]bool, stray int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	got = map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "secret-") {
			t.Fatalf("a record holds an argument's value: %s", line)
		}
		var r struct {
			Event, Principal, Office, Tool, Outcome, Front string
			RequestID                                      string  `json:"request_id"`
			DurationMS                                     float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.Event != smcp.EventToolCall || r.Outcome != audit.OutcomeOK {
			continue // the agents' listings; calls cut by a stop
		}
		front, ok := made[r.RequestID]
		switch {
		case !ok:
			stray++
			continue
		case got[r.RequestID]:
			t.Fatalf("two records of %s", r.RequestID)
		case r.Principal != "slow-"+front || r.Office != "q-"+front || r.Tool != "echo" || r.DurationMS <= 0:
			t.Fatalf("record of a %s call: %s", front, line)
		}
		got[r.RequestID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got, stray
}

// With the audit required, calls are refused (503; Unavailable on
// Connect) while the audit cannot be written, and nothing reaches the
// computer; once it writes again, calls are admitted.
func TestAuditRequiredRefusesWhileFailing(t *testing.T) {
	sink := &failingSink{}
	sink.fail.Store(true)
	g, pcs := qaGateway(t, nil, gateway.AuditConfig{Sinks: []audit.Sink{sink}, Required: true})
	t.Cleanup(func() { sink.fail.Store(false) }) // before Stop, which drains
	callers := qaCallers(t, g.URL)
	// A record that cannot be written (the MCP session's listings, or
	// the calls below while the audit has not tried yet) makes the audit
	// refuse once it has tried.
	var err error
	testwait.Until(t, "a call refused while the audit fails", func() bool {
		_, err = callers["connect"](t, "x")
		return err != nil
	})
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("while the audit fails: %v, want Unavailable", err)
	}
	before := toolCalls(pcs["connect"])
	if _, err := callers["connect"](t, "x"); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("still failing: %v", err)
	}
	if toolCalls(pcs["connect"]) != before {
		t.Fatal("a refused call reached the computer")
	}
	sink.fail.Store(false)
	testwait.Until(t, "a call admitted once the audit writes", func() bool {
		_, err = callers["connect"](t, "x")
		return err == nil
	})
}

// failingSink refuses every batch while fail is set.
type failingSink struct{ fail atomic.Bool }

func (s *failingSink) Write(context.Context, []audit.Record) error {
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return nil
}

func (s *failingSink) Close(context.Context) error { return nil }

// A stop (SIGTERM) while calls wait on their computer: the calls are
// answered (the drain), and every answered call has its record in the
// file once Stop returns.
func TestAuditStopDuringCallsLosesNoRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	g, pcs := qaGateway(t, nil, gateway.AuditConfig{Sinks: []audit.Sink{sink}})
	pc := pcs["connect"]
	release := make(chan struct{})
	pc.mu.Lock()
	pc.block = release
	pc.mu.Unlock()
	call := qaCallers(t, g.URL)["connect"]
	const n = 20
	type answer struct {
		id  string
		err error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			id, err := call(t, "x")
			answers <- answer{id, err}
		}()
	}
	testwait.Until(t, "the calls at the computer", func() bool { return toolCalls(pc) == n })
	stopped := make(chan error, 1)
	go func() { stopped <- g.Stop() }()
	// The gateway is draining: /readyz says so before the calls are let go.
	testwait.Until(t, "the gateway to drain", func() bool {
		res, err := http.Get(g.URL + "/readyz")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable
	})
	close(release)
	answered := map[string]bool{}
	for range n {
		a := <-answers
		if a.err != nil {
			t.Fatalf("a call in flight at the stop: %v", a.err)
		}
		answered[a.id] = true
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Event     string
			RequestID string `json:"request_id"`
			Outcome   string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.Event == smcp.EventToolCall && r.Outcome == audit.OutcomeOK {
			delete(answered, r.RequestID)
		}
	}
	if len(answered) != 0 {
		t.Fatalf("%d answered calls have no record: %v", len(answered), answered)
	}
}

// Three nodes on a real redis-server, an agent on each calling with one
// key: the nodes share the key's limit, so that in any 1 s window at most
// rate + burst calls are admitted (plus one per node for the window's
// edges), and every admitted call, and no refused one, reaches a
// computer.
func TestQuotaSharedAcrossNodesRedisServer(t *testing.T) {
	url := systest.RedisServer(t)
	const (
		nodes = 3
		rate  = 10
		burst = 5
		run   = 2500 * time.Millisecond
	)
	ring, err := core.NewKeyRing(core.Key{Key: "full-key", ID: "full"}, core.Key{Key: "shared-key", ID: "shared", Roles: []string{smcp.RoleAgent}})
	if err != nil {
		t.Fatal(err)
	}
	table := &quota.Table{Keys: map[string]*quota.Limits{"shared": {Bound: quota.Bound{CallsPerSecond: rate, Burst: burst}}}}
	var (
		mu       sync.Mutex
		admitted []time.Time
		wg       sync.WaitGroup
		pcs      []*computer
	)
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	for i := range nodes {
		g := startGateway(t, gateway.Config{Auth: ring, Quotas: table, Redis: url, NodeID: fmt.Sprintf("n%d", i),
			HeartbeatTTL: clusterTTL, Logger: testLogger})
		office := fmt.Sprintf("s-%d", i)
		pcs = append(pcs, dialComputerWithKey(t, g.URL, "full-key", "pc", office))
		c := rpcClient(t, g.URL, false, connecttest.Headers(rpc.DefaultAPIKeyHeader, "shared-key", rpc.AgentHeader, "bot"))
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := c.CallTool(context.Background(), &smcpv1.CallToolRequest{OfficeId: office, Computer: "pc", ToolName: "echo", Timeout: 20})
				at := time.Now()
				if err == nil {
					mu.Lock()
					admitted = append(admitted, at)
					mu.Unlock()
					continue
				}
				if connect.CodeOf(err) != connect.CodeResourceExhausted {
					t.Errorf("want ResourceExhausted, got %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, pc := range pcs {
		total += toolCalls(pc)
	}
	if total != len(admitted) {
		t.Fatalf("the computers saw %d calls, %d were admitted", total, len(admitted))
	}
	if len(admitted) <= burst {
		t.Fatalf("only %d calls admitted in %v", len(admitted), run)
	}
	slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, start := range admitted {
		j, _ := slices.BinarySearchFunc(admitted[i:], start.Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
		most = max(most, j)
	}
	if most > rate+burst+nodes {
		t.Fatalf("%d calls admitted in one 1 s window across the nodes, want at most %d+%d+%d", most, rate, burst, nodes)
	}
}

// A refused authentication is recorded as a security event, without the
// credential.
func TestAuditRecordsAuthRefusal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := qaGateway(t, nil, gateway.AuditConfig{Sinks: []audit.Sink{sink}})
	c := rpcClient(t, g.URL, false, connecttest.Headers(rpc.DefaultAPIKeyHeader, "guessed-key-1234", rpc.AgentHeader, "bot"))
	_, err = c.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: "q-connect", Computer: "pc", ToolName: "echo"})
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("a wrong key: %v", err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "guessed-key") {
		t.Fatalf("the audit holds the credential: %s", b)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Event, Outcome, Reason string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.Event == "auth_refused" && r.Outcome == "401" && r.Reason != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no auth_refused record:\n%s", b)
	}
}

// A token's call is recorded with its issuer and subject.
func TestAuditTokenPrincipal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := core.NewKeyRing(core.Key{Key: "full-key", ID: "full"})
	if err != nil {
		t.Fatal(err)
	}
	key := tokentest.NewKey(t, "audit", jose.ES256)
	iss := tokentest.New(t, tokenAudience, key)
	v, err := tokens.NewVerifier(tokens.Config{Issuer: iss.URL, Audience: tokenAudience})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: tokens.Authenticator{Keys: ring, Tokens: v},
		Audit: gateway.AuditConfig{Sinks: []audit.Sink{sink}}, Logger: testLogger})
	dialComputerWithKey(t, g.URL, "full-key", "pc", "o")
	tok := tokentest.Sign(t, key, iss.Claims("alice", nil))
	c := rpcClient(t, g.URL, false, connecttest.Headers("Authorization", "Bearer "+tok, rpc.AgentHeader, "bot"))
	if _, err := c.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo", ReqId: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Event, Principal, Issuer, Subject string
			RequestID                         string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.RequestID == "r1" {
			if r.Issuer != iss.URL || r.Subject != "alice" || r.Principal != tokens.IDPrefix+"alice" {
				t.Fatalf("record of a token's call: %s", line)
			}
			return
		}
	}
	t.Fatalf("no record of the call:\n%s", b)
}

// govQuotas are the quotas of examples/governance's keys file.
func govQuotas(t *testing.T) *quota.Table {
	t.Helper()
	tb, err := quota.LoadFile(govKeys)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// examples/governance's slow-key (5 calls/s, burst 5), with
// server-everything behind a real computer: on Socket.IO, Connect, gRPC,
// an MCP session and MCP 2026-07-28 its calls are refused once its
// allowance is spent, with a hint of when to come back, and no refused
// call reaches the computer.
func TestGovernanceSlowKeyOnEveryFrontEnd(t *testing.T) {
	e := startGovernance(t, smcpcomputer.Protocol02)
	args := map[string]any{"message": "hi"}
	params, err := structpb.NewStruct(args)
	if err != nil {
		t.Fatal(err)
	}
	// callUntilRefused calls until the first refusal (at 5/s, fifty calls
	// in a row cannot all be admitted), checking each admitted call and
	// only those reached the computer.
	callUntilRefused := func(t *testing.T, call func() error) error {
		t.Helper()
		before := e.calls()
		admitted := 0
		for range 50 {
			if err := call(); err != nil {
				if n := e.calls() - before; n != admitted {
					t.Fatalf("the computer saw %d calls, %d were admitted", n, admitted)
				}
				return err
			}
			admitted++
		}
		t.Fatal("50 calls in a row admitted at 5/s")
		return nil
	}
	t.Run("socket.io", func(t *testing.T) {
		ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: e.g.URL, APIKey: "slow-key", Logger: testLogger, Version: smcp.V02.Full()}, "bot")
		if err != nil {
			t.Fatal(err)
		}
		defer ag.Close()
		if err := ag.Join(ctxT(t), govOffice); err != nil {
			t.Fatal(err)
		}
		checkQuotaRefusal(t, "sio", callUntilRefused(t, func() error {
			_, err := ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Agent: "bot", ReqId: agent.NewReqID(), Computer: govPC,
				ToolName: "echo", Params: params, Timeout: 20})
			return err
		}))
	})
	for _, grpc := range []bool{false, true} {
		front := map[bool]string{false: "connect", true: "grpc"}[grpc]
		t.Run(front, func(t *testing.T) {
			c := rpcClient(t, e.g.URL, grpc, connecttest.Headers(rpc.DefaultAPIKeyHeader, "slow-key", rpc.AgentHeader, "bot"))
			checkQuotaRefusal(t, front, callUntilRefused(t, func() error {
				_, err := c.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: govOffice, Computer: govPC, ToolName: "echo",
					Params: params, Timeout: 20})
				return err
			}))
		})
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("mcp "+version, func(t *testing.T) {
			mc := mcp.NewClient(&mcp.Implementation{Name: "quota-test", Version: "1"}, nil)
			rec := &answerRecorder{next: headerTransport{"x-api-key", "slow-key"}}
			cs, err := mc.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: e.g.URL + "/mcp/" + govOffice, MaxRetries: -1,
				HTTPClient: &http.Client{Transport: rec}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			checkQuotaRefusal(t, "mcp", callUntilRefused(t, func() error {
				res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: govPC + "__echo", Arguments: args})
				if err != nil {
					return mcpError(rec, err)
				}
				if res.IsError {
					t.Fatalf("tools/call: %+v", res)
				}
				return nil
			}))
		})
	}
}
