package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// TestMain lets the test binary play the bench command when it re-executes
// itself (spawned servers, stdio MCP servers): a first argument that is not a
// test flag runs main with the arguments as given. An environment variable
// would not do: a computer starts its stdio MCP servers with a minimal
// environment that has no SMCP_* variable.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchSmoke runs `bench` for a fraction of a second in every mode
// that needs no extra setup, spawning the gateway and the floor as child
// processes (this test binary re-executed), and checks that the report has
// measured something in each row. No figure is asserted: speed is measured,
// not tested.
func TestBenchSmoke(t *testing.T) {
	t.Parallel()
	rep, _ := benchJSON(t, "-mode", "sio,connect,connect-h2c,grpc,connect-raw,idle,startup", "-offices", "2", "-compare", "floor",
		"-warmup", "100ms", "-duration", "600ms", "-conns", "20",
		"-startup-servers", "3", "-startup-delay", "50ms", "-json")
	seen := map[string]bool{}
	for _, row := range rep.Rows {
		key := row.Server + "/" + string(row.Mode)
		seen[key] = true
		switch row.Mode {
		case loadtest.ModeIdle:
			if row.Conns != 20 || row.ServerRSS <= 0 || row.GoroutinesLoaded <= row.GoroutinesStart {
				t.Errorf("%s: idle row measured nothing: %+v", key, row.Result)
			}
		case modeStartup:
			if row.StartupOne <= 0 || row.StartupAll < 50*time.Millisecond {
				t.Errorf("%s: start-up times %s / %s", key, row.StartupOne, row.StartupAll)
			}
		default:
			if row.Calls <= 0 || row.Errors != 0 || row.Latency.P50 <= 0 || row.Latency.Max < row.Latency.P99 ||
				row.ServerCPU <= 0 || row.ServerRSS <= 0 || row.LoadCPU <= 0 {
				t.Errorf("%s: %+v", key, row.Result)
			}
		}
	}
	for _, want := range []string{"floor/sio", "gateway/sio", "gateway/connect", "gateway/connect-h2c", "gateway/grpc", "gateway/connect-raw", "floor/idle", "gateway/idle", "computer/startup"} {
		if !seen[want] {
			t.Errorf("no %s row in the report", want)
		}
	}

	// The text report prints the same rows and the ratios to the floor.
	var text bytes.Buffer
	rep.print(&text)
	for _, want := range []string{"gateway/floor CPU per call", "calls/s / Socket.IO calls/s", "RSS KiB/conn", "idle: gateway/floor RSS", "computer start-up"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestBenchCluster runs a tiny `bench --compare cluster`: a
// redis-server and two gateway nodes spawned by the bench, the agent on one
// node and the computer on the other, and checks that calls crossed nodes.
func TestBenchCluster(t *testing.T) {
	t.Parallel()
	testdeps.Program(t, "redis-server", "redis-server")
	rep, out := benchJSON(t, "-mode", "sio", "-offices", "1", "-compare", "cluster", "-warmup", "1s", "-duration", "1s", "-json")
	servers := map[string]*benchRow{}
	for i, row := range rep.Rows {
		servers[row.Server] = &rep.Rows[i]
	}
	if g := servers["gateway"]; g == nil || g.Calls <= 0 || g.Errors != 0 {
		t.Errorf("gateway row: %+v", g)
	}
	cl := servers[serverCluster]
	if cl == nil || cl.Result == nil {
		t.Fatalf("no cluster row: %s", out)
	}
	if cl.Calls <= 0 || cl.Errors != 0 || cl.ServerCPU <= 0 || cl.ServerRSS <= 0 || cl.Stragglers != 0 || cl.Unsettled != 0 {
		t.Errorf("cluster row: %+v", cl.Result)
	}
	var text bytes.Buffer
	rep.print(&text)
	if !strings.Contains(text.String(), "cluster/gateway calls/s") {
		t.Errorf("text report lacks the cluster ratios:\n%s", text.String())
	}
}

// nodeRelayDir is the Node relay of --compare node (test/noderelay).
var nodeRelayDir = filepath.Join("..", "..", "..", "test", "noderelay")

// TestBenchNodeAndMCPFloor runs a tiny `bench -compare floor,node` with
// the sio and mcp-raw modes: the Node socket.io relay (npm ci on first use)
// and the floor's MCP server each answer every call, and the report prints
// the gateway's ratios to both and the scaling line of its two office counts.
func TestBenchNodeAndMCPFloor(t *testing.T) {
	t.Parallel()
	// Installed here, once for the tests that run in parallel: two bench
	// processes running npm ci into one node_modules corrupt it.
	nodetest.Require(t, nodeRelayDir)
	rep, out := benchJSON(t, "-mode", "sio,mcp-raw", "-offices", "1,2", "-compare", "floor,node",
		"-warmup", "200ms", "-duration", "600ms", "-json")
	seen := map[string]bool{}
	for _, row := range rep.Rows {
		key := row.Server + "/" + string(row.Mode)
		seen[key] = true
		if row.Calls <= 0 || row.Errors != 0 || row.ServerCPU <= 0 || row.ServerRSS <= 0 {
			t.Errorf("%s offices=%d: %+v", key, row.Offices, row.Result)
		}
	}
	for _, want := range []string{"node/sio", "floor/sio", "gateway/sio", "floor/mcp-raw", "gateway/mcp-raw"} {
		if !seen[want] {
			t.Errorf("no %s row in the report: %s", want, out)
		}
	}
	if seen["node/mcp-raw"] {
		t.Errorf("the Node relay was measured on mcp-raw, which it does not serve")
	}
	var text bytes.Buffer
	rep.print(&text)
	for _, want := range []string{"sio offices=2: gateway/Node socket.io relay CPU per call", "mcp-raw offices=1: gateway/MCP floor",
		"gateway sio: CPU per call at 2 offices / at 1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestBenchRate runs a tiny `bench -compare node -rate 50%`: after the
// saturated rows, the gateway and the Node relay are measured again at half
// the Node relay's saturated calls/s, and the ratio at that rate printed.
func TestBenchRate(t *testing.T) {
	t.Parallel()
	// Installed here, once for the tests that run in parallel: two bench
	// processes running npm ci into one node_modules corrupt it.
	nodetest.Require(t, nodeRelayDir)
	rep, out := benchJSON(t, "-mode", "sio", "-offices", "1", "-compare", "node", "-rate", "50%",
		"-warmup", "200ms", "-duration", "600ms", "-json")
	var node float64
	for _, row := range rep.Rows {
		if row.Server == kindNode && row.Rate == 0 {
			node = row.CallsPerSec()
		}
	}
	paced := 0
	for _, row := range rep.Rows {
		if row.Rate == 0 {
			continue
		}
		paced++
		if row.Rate < node/2*0.99 || row.Rate > node/2*1.01 || row.Calls <= 0 || row.Errors != 0 {
			t.Errorf("%s offered %.0f calls/s (Node saturated %.0f): %+v", row.Server, row.Rate, node, row.Result)
		}
	}
	if paced != 2 {
		t.Errorf("%d rows at an offered rate, want the gateway's and Node's: %s", paced, out)
	}
	var text bytes.Buffer
	rep.print(&text)
	if !strings.Contains(text.String(), "calls/s offered: gateway/Node socket.io relay CPU per call") {
		t.Errorf("text report lacks the ratio at the offered rate:\n%s", text.String())
	}
}

// TestReportTellsStragglers: calls lost or stalled, which the columns do
// not show when they ended after the window, get a line of their own.
func TestReportTellsStragglers(t *testing.T) {
	rep := &benchReport{Rows: []benchRow{{Server: serverCluster, Result: &loadtest.Result{
		Mode: loadtest.ModeSIO, Offices: 10, Calls: 100, Elapsed: time.Second,
		Stragglers: 3, SlowestStraggler: 30012 * time.Millisecond, Unsettled: 1,
	}}}}
	var text bytes.Buffer
	rep.print(&text)
	want := "cluster sio offices=10: stragglers: 3 calls took 2s or longer (slowest 30012.00 ms), 1 still running 45s after the window"
	if !strings.Contains(text.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, text.String())
	}
}

// TestBenchTurns measures sio, connect, connect-h2c and grpc on a spawned gateway and sio
// on a spawned floor in rotation, and checks that each row got its calls, in
// turns, with the ratios printed.
func TestBenchTurns(t *testing.T) {
	t.Parallel()
	rep, out := benchJSON(t, "-mode", "sio,connect,connect-h2c,grpc", "-offices", "2", "-compare", "floor", "-turns", "3",
		"-warmup", "300ms", "-duration", "900ms", "-json")
	seen := map[string]bool{}
	for _, row := range rep.Rows {
		key := row.Server + "/" + string(row.Mode)
		seen[key] = true
		if row.Calls <= 0 || row.Errors != 0 || row.ServerCPU <= 0 || row.LoadCPU <= 0 || row.Elapsed < 900*time.Millisecond {
			t.Errorf("%s: %+v", key, row.Result)
		}
		if row.Turns != 3 {
			t.Errorf("%s: turns %d", key, row.Turns)
		}
	}
	for _, want := range []string{"floor/sio", "gateway/sio", "gateway/connect", "gateway/connect-h2c", "gateway/grpc", "floor/connect-h2c", "floor/grpc"} {
		if !seen[want] {
			t.Errorf("no %s row in the report: %s", want, out)
		}
	}
	var text bytes.Buffer
	rep.print(&text)
	for _, want := range []string{"gateway (3 turns)", "floor (3 turns)", "connect offices=2, in turns: calls/s / Socket.IO", "connect-h2c offices=2, in turns: calls/s / Socket.IO", "grpc offices=2, in turns: gateway/connect floor", "sio offices=2, in turns: gateway/floor CPU per call"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestBenchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "nope"},
		{"-offices", "0"},
		{"-compare", "python"},
		{"-compare", "floor,python"},
		{"-compare", "cluster", "-nodes", "1"},
		{"-redis", "redis://127.0.0.1:1/0"},
		{"-duration", "0s"},
		{"-gateway", "http://127.0.0.1:1", "-profile", t.TempDir()},
		{"-turns", "-1"},
		{"-turns", "2", "-profile", t.TempDir()},
		{"-rate", "fast"},
		{"-rate", "0"},
		{"-rate", "-5%"},
	} {
		if err := benchMain(t.Context(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// benchJSON runs `bench` with args (the test binary plays the spawned
// servers) and returns its JSON report and raw output.
func benchJSON(t *testing.T, args ...string) (benchReport, string) {
	t.Helper()
	var out bytes.Buffer
	if err := benchMain(t.Context(), args, &out); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	return rep, out.String()
}

// TestBenchGovernance runs a tiny `bench -compare governance` in turns:
// the gateway with rules, quotas and an audit file (its key required on
// every front end) and the gateway with that key alone answer every call on
// Socket.IO, Connect over h2c and MCP, and the report prints governance's
// ratio to the key alone.
func TestBenchGovernance(t *testing.T) {
	t.Parallel()
	rep, out := benchJSON(t, "-mode", "sio,connect-h2c,mcp-raw", "-offices", "1", "-compare", "governance", "-turns", "2",
		"-warmup", "200ms", "-duration", "600ms", "-json")
	seen := map[string]bool{}
	for _, row := range rep.Rows {
		key := row.Server + "/" + string(row.Mode)
		seen[key] = true
		if row.Result == nil || row.Calls <= 0 || row.Errors != 0 || row.ServerCPU <= 0 {
			t.Errorf("%s: %+v", key, row.Result)
		}
	}
	for _, mode := range []string{"sio", "connect-h2c", "mcp-raw"} {
		for _, server := range []string{"gateway", "keys", "governance"} {
			if !seen[server+"/"+mode] {
				t.Errorf("no %s/%s row: %s", server, mode, out)
			}
		}
	}
	var text bytes.Buffer
	rep.print(&text)
	if n := strings.Count(text.String(), "governance on/off"); n != 3 {
		t.Errorf("text report has %d governance ratios, want 3:\n%s", n, text.String())
	}
}

// TestBenchBlob runs `bench -mode blob -compare http` on a file of a few
// chunks and an odd tail: every path (Socket.IO, Connect and MCP
// downloads, Socket.IO and Connect uploads, net/http both ways) moves it
// with its sha256 intact, and the text report names each path.
func TestBenchBlob(t *testing.T) {
	var out bytes.Buffer
	if err := benchMain(t.Context(), []string{"-mode", "blob", "-blob-size", "1234567", "-compare", "http", "-json"}, &out); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	var rows []blobRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Path] = true
		if !r.SHA256 || r.Err != "" || r.Bytes != 1234567 || r.MiBps <= 0 {
			t.Errorf("%s: %+v", r.Path, r)
		}
	}
	for _, p := range blobPaths {
		if !seen[p] {
			t.Errorf("no %s row in %s", p, out.String())
		}
	}
}

// The cluster rows' server names carry their node count and Redis shape,
// read back for the rows' servers and ratios.
func TestClusterServerNames(t *testing.T) {
	for _, tc := range []struct {
		n     int
		shape string
		name  string
	}{{2, shapeSingle, "cluster"}, {3, shapeSingle, "cluster-3"}, {2, shapeCluster, "cluster-rc"}, {3, shapeCluster, "cluster-3-rc"}} {
		if got := clusterServer(tc.n, tc.shape); got != tc.name {
			t.Errorf("clusterServer(%d, %s) = %q, want %q", tc.n, tc.shape, got, tc.name)
		}
		if n, shape := clusterOf(tc.name); n != tc.n || shape != tc.shape {
			t.Errorf("clusterOf(%q) = %d, %s", tc.name, n, shape)
		}
	}
	if n, _ := clusterOf(kindNode); n != 0 {
		t.Errorf("clusterOf(%q) = %d, want 0", kindNode, n)
	}
}
