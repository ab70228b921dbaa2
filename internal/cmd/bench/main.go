// Command bench load-tests a gateway, spawned or running, against the floor
// relay: go run ./internal/cmd/bench -h. It is not part of the smcp binary.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/loadtest"
)

// benchConfig is what one bench invocation measures.
type benchConfig struct {
	modes      []loadtest.Mode
	offices    []int
	inFlight   int
	warmup     time.Duration
	duration   time.Duration
	params     int
	conns      int
	gatewayURL string
	path       string
	pid        int
	apiKey     string
	compare    map[string]bool
	nodes      []int
	nodeRelay  string
	redisURL   string
	redisPID   int
	// redisShapes are the Redis the cluster rows run on: shapeSingle (one
	// redis-server, redisURL) and/or shapeCluster (a Redis Cluster of three
	// primaries started by the bench, rcURL).
	redisShapes []string
	rcURL       string
	rcPIDs      []int
	profileDir  string
	jsonOut     bool
	finderDocs  int
	startupN    int
	startupDly  time.Duration
	repeat      int
	turns       int
	rates       []rateSpec
}

// rateSpec is one --rate: calls per second, or a percentage of the
// reference's saturated calls/s in the same repetition.
type rateSpec struct {
	value   float64
	percent bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := benchMain(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// benchMain is the bench command writing its report to out. Its first
// argument may name a hidden role the command re-executes itself in:
// "serve" (a spawned gateway or floor relay) or "mcp" (a stdio MCP server of
// the start-up mode).
func benchMain(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return benchServe(ctx, args[1:])
		case "mcp":
			return benchMCP(ctx, args[1:])
		case "computer":
			return benchComputer(ctx, args[1:])
		}
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: go run ./internal/cmd/bench [flags]

Starts offices of one agent and one computer answering an echo tool at once,
drives calls through a gateway and reports calls/s, latency percentiles,
errors, and the server's CPU per call and RSS (from /proc). Without --gateway
the gateway is spawned as a child process (so /proc figures are its own);
--compare floor also spawns the floor relay (the same Socket.IO stack doing
nothing but join and forward) and prints the gateway's cost as ratios to it;
for the CallTool modes its floor is the same net/http server and connect-go
handler answering in place (no computer), the price of the transport alone.
for the MCP modes, the same net/http server and go-sdk streamable HTTP handler
answering tools/call in place (the MCP floor).
--compare relay (CallTool and MCP modes) also spawns the relay floor: the
same servers and handlers as those floors, forwarding each call to the
office's computer over the floor's Socket.IO relay and answering with its
result (internal/loadtest/relay.go); it prints the relay floor's CPU per call
as a ratio to the in-place floor (the least a leg to the computer costs on
these libraries) and the gateway's as a ratio to the relay floor.
--compare node (mode sio) also starts the Node peer: the relay a JavaScript
team would write on the official socket.io server (test/noderelay, installed
with npm ci on first use), and prints the gateway's cost as ratios to it.
--compare cluster (mode sio) also spawns gateway nodes (--nodes of them, one
row per count) sharing a Redis (--redis, or a redis-server started on a free
loopback port), agents on the first node and computers on the last so that
every call crosses nodes, and prints the cluster's figures as ratios to the
single gateway; its CPU and RSS are all nodes', redis-server's CPU is
reported apart. --redis-shape cluster (or single,cluster) runs those rows
on a Redis Cluster of three primaries the bench starts (rows cluster-rc...),
printed as ratios to the one-redis-server rows too. --compare governance (sio, CallTool and MCP modes) also
spawns the gateway with governance on: a keys file whose one key has a rule
set (evaluated on every call) and a quota never reached (spent on every
call), and the audit trail written to a temporary file; and the gateway
with the same key alone (row keys: authentication, governance off); it
prints governance's CPU per call as a ratio to keys'. --compare takes several of floor,
relay, node, cluster and governance, comma-separated.
--offices 1,10,100,1000 makes the scaling table: each count is a run, and
the CPU per call at 1,000 offices is printed as a ratio to 10's.
--rate 25%,50%,75% (or calls/s: 8000) measures every server again at each
offered load after its saturated row: the calls are paced across the agents
(--inflight still caps each), a percentage taken of the Node relay's saturated
calls/s with --compare node (else the gateway's), so that servers are compared
at the load they meet, not only at saturation.
--turns N measures the sio and CallTool rows (on the gateway and on the
--compare servers) in rotation instead of one after the other: every row's
clients stay connected, and each row's --duration is cut into N turns, so that
the machine's speed drifting over minutes falls on every row alike.

mode blob (alone) moves a random file of --blob-size bytes through each
blob path of a spawned gateway and a spawned 0.4 computer (skills folder and
landing root) and reports MiB/s, the sha256 check, and the RSS growth and
CPU of gateway, computer and this process (the agent side): downloads
sio-get (client:get_blob, Go agent), connect-get (ReadBlob), mcp-get
(resources/read), uploads sio-put (client:put_blob, Go agent), connect-put
(PutBlob); --compare http adds net/http serving and receiving the file
(the computer serves files up to its 100 MiB cap);
--profile writes CPU profiles of the three processes over the whole run.

modes: sio (client:tool_call; sio-0.4 the same in 0.4 offices), connect (CallTool, Connect protocol, stock
connect-go client over HTTP/1.1), connect-h2c (the same over h2c), grpc
(CallTool, gRPC over h2c, stock connect-go client), connect-raw (CallTool,
Connect over HTTP/1.1 with a hand-written client costing the load generator
less), mcp (tools/call on /mcp/{office_id}, streamable HTTP, stock go-sdk
client, one MCP session per office), mcp-raw (the same as HTTP/1.1 POSTs
written and parsed in place on one session per office, a hand-written
client costing the load generator less), finder (client:get_finder over a computer with
--finder-docs documents), idle (--conns idle connections: memory per
connection), startup (computer start-up with --startup-servers stdio servers).

flags:
`)
		fs.PrintDefaults()
	}
	modes := fs.String("mode", "sio", "comma-separated modes: sio, sio-0.4, connect, connect-h2c, grpc, connect-raw, mcp, mcp-raw, finder, idle, startup")
	offices := fs.String("offices", "10", "comma-separated office counts, one run each")
	c := benchConfig{}
	fs.IntVar(&c.inFlight, "inflight", 8, "calls in flight per agent")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "warm-up before the measured window")
	fs.DurationVar(&c.duration, "duration", 15*time.Second, "measured window (idle: how long connections stay idle)")
	fs.IntVar(&c.params, "params", 64, "size of the tool call's params JSON, bytes")
	fs.IntVar(&c.conns, "conns", 1000, "idle connections (mode idle)")
	fs.StringVar(&c.gatewayURL, "gateway", "", "URL of a running gateway (default: spawn one)")
	fs.StringVar(&c.path, "path", "/socket.io/", "Engine.IO path of the gateway")
	fs.IntVar(&c.pid, "pid", 0, "pid of the --gateway process, for CPU and RSS from /proc")
	fs.StringVar(&c.apiKey, "api-key", "", "API key for --gateway (default $SMCP_API_KEY)")
	compare := fs.String("compare", "", `comma-separated: "floor": also run the floor relay (Socket.IO, CallTool and MCP modes) and print ratios; "relay": also run the relay floor (CallTool and MCP modes: the floors with a leg to the computer); "node": also run the Node socket.io relay (mode sio); "cluster": also run gateway nodes sharing a Redis (mode sio); "governance": also run the gateway with rules, quotas and audit on (sio, CallTool and MCP modes)`)
	nodes := fs.String("nodes", "2", "comma-separated node counts of --compare cluster, one row each")
	fs.StringVar(&c.nodeRelay, "node-relay", "test/noderelay", "directory of the Node relay of --compare node (looked up from the working directory upwards)")
	fs.StringVar(&c.redisURL, "redis", "", "Redis URL for --compare cluster (default: start redis-server on a free loopback port)")
	shapes := fs.String("redis-shape", shapeSingle, `comma-separated Redis of the --compare cluster rows, one row each: "single" (one redis-server, or --redis), "cluster" (a Redis Cluster of three primaries on loopback, started by the bench; the rows' server is cluster-rc, cluster-3-rc...)`)
	fs.StringVar(&c.profileDir, "profile", "", "directory for CPU profiles of spawned servers over each measured window")
	fs.BoolVar(&c.jsonOut, "json", false, "print the results as JSON")
	fs.IntVar(&c.finderDocs, "finder-docs", 10000, "documents in the computer's Finder (mode finder), over 10 MCP servers")
	fs.IntVar(&c.startupN, "startup-servers", 10, "stdio MCP servers of the computer (mode startup)")
	fs.DurationVar(&c.startupDly, "startup-delay", 300*time.Millisecond, "start-up work of each stdio MCP server (mode startup)")
	fs.IntVar(&c.repeat, "repeat", 1, "run each configuration this many times")
	rates := fs.String("rate", "", `comma-separated offered loads, each one more run of every server after the saturated one: calls/s ("8000"), or a percentage ("25%") of the saturated calls/s of the Node relay (with --compare node) or else the gateway, in the same repetition`)
	fs.IntVar(&c.turns, "turns", 0, "measure the sio and CallTool rows in rotation, each --duration cut into this many turns (0: one after the other)")
	blobSize := fs.Int64("blob-size", 256<<20, "size of the random file of mode blob, bytes")
	blobPaths := fs.String("blob-paths", "", "comma-separated paths of mode blob (default all): sio-get, connect-get, mcp-get, sio-put, connect-put")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *modes == modeBlob {
		// The blob mode moves one file through each path: none of the call
		// modes' load options apply.
		if *blobSize < 1 {
			return errors.New("--blob-size must be positive")
		}
		if *compare != "" && *compare != kindHTTP {
			return fmt.Errorf("--compare: mode blob compares with %q only", kindHTTP)
		}
		if c.profileDir != "" {
			if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
				return err
			}
		}
		return runBlob(ctx, out, *blobSize, *blobPaths, *compare == kindHTTP, c.profileDir, c.jsonOut)
	}
	for m := range strings.SplitSeq(*modes, ",") {
		switch mode := loadtest.Mode(strings.TrimSpace(m)); mode {
		case loadtest.ModeSIO, loadtest.ModeSIO04, loadtest.ModeConnect, loadtest.ModeConnectH2C, loadtest.ModeGRPC, loadtest.ModeConnectRaw,
			loadtest.ModeFinder, loadtest.ModeIdle, modeStartup, loadtest.ModeMCP, loadtest.ModeMCPRaw:
			c.modes = append(c.modes, mode)
		default:
			return fmt.Errorf("--mode: unknown mode %q", m)
		}
	}
	for o := range strings.SplitSeq(*offices, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(o))
		if err != nil || n <= 0 {
			return fmt.Errorf("--offices: %q is not a positive number", o)
		}
		c.offices = append(c.offices, n)
	}
	for r := range strings.SplitSeq(*rates, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		num, pct := strings.CutSuffix(r, "%")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("--rate: %q is neither calls/s nor a percentage", r)
		}
		c.rates = append(c.rates, rateSpec{value: v, percent: pct})
	}
	c.compare = map[string]bool{}
	for k := range strings.SplitSeq(*compare, ",") {
		switch k = strings.TrimSpace(k); k {
		case "":
		case loadtest.KindFloor, loadtest.KindRelay, kindNode, serverCluster, loadtest.KindGovernance:
			c.compare[k] = true
		default:
			return fmt.Errorf("--compare: %q is none of %q, %q, %q, %q and %q", k, loadtest.KindFloor, loadtest.KindRelay, kindNode,
				serverCluster, loadtest.KindGovernance)
		}
	}
	for k := range strings.SplitSeq(*shapes, ",") {
		switch k = strings.TrimSpace(k); k {
		case shapeSingle, shapeCluster:
			c.redisShapes = append(c.redisShapes, k)
		default:
			return fmt.Errorf("--redis-shape: %q is none of %q and %q", k, shapeSingle, shapeCluster)
		}
	}
	for k := range strings.SplitSeq(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || n < 2 {
			return fmt.Errorf("--nodes: %q is not a node count of 2 or more", k)
		}
		c.nodes = append(c.nodes, n)
	}
	switch {
	case c.redisURL != "" && !c.compare[serverCluster]:
		return errors.New("--redis goes with --compare cluster")
	case c.inFlight <= 0 || c.duration <= 0 || c.warmup < 0 || c.conns <= 0 || c.repeat <= 0:
		return errors.New("--inflight, --duration, --conns and --repeat must be positive, --warmup not negative")
	case c.gatewayURL != "" && c.profileDir != "":
		return errors.New("--profile needs a spawned gateway (no --gateway)")
	case c.turns < 0 || c.turns > 0 && c.profileDir != "":
		return errors.New("--turns must not be negative, and a profile would mix the modes in turns")
	}
	if c.apiKey == "" {
		c.apiKey = os.Getenv("SMCP_API_KEY")
	}
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			return err
		}
	}
	rep := &benchReport{
		Started: time.Now().UTC(), LoadAvgBefore: loadtest.LoadAvg(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUs: runtime.NumCPU(), Params: c.params, InFlight: c.inFlight, Warmup: c.warmup, Window: c.duration,
	}
	err := c.run(ctx, rep)
	rep.LoadAvgAfter = loadtest.LoadAvg()
	if c.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if e := enc.Encode(rep); e != nil {
			return e
		}
	} else {
		rep.print(out)
	}
	return err
}

const modeStartup loadtest.Mode = "startup"

// modeBlob moves a file through each blob path (blob.go); kindHTTP is its
// reference, net/http serving and receiving the same file.
const (
	modeBlob = "blob"
	kindHTTP = "http"
)

// serverCluster is the server of the rows measured through two gateway
// nodes sharing a Redis; clusterServer(n) names those of n nodes.
const serverCluster = "cluster"

// kindNode is the server of the rows measured on the Node socket.io relay.
const kindNode = "node"

// The Redis shapes of --redis-shape.
const (
	shapeSingle  = "single"
	shapeCluster = "cluster"
	// rcSuffix ends the server name of the rows on a Redis Cluster.
	rcSuffix = "-rc"
)

// clusterServer is the server name of the rows of a cluster of n nodes:
// "cluster" for two (the name of earlier reports), "cluster-3" for three;
// on a Redis Cluster (shape shapeCluster) "cluster-rc", "cluster-3-rc".
func clusterServer(n int, shape string) string {
	name := serverCluster
	if n != 2 {
		name += "-" + strconv.Itoa(n)
	}
	if shape == shapeCluster {
		name += rcSuffix
	}
	return name
}

// clusterNodes is the node count of a cluster server name, 0 for others.
func clusterNodes(server string) int {
	n, _ := clusterOf(server)
	return n
}

// clusterOf is the node count (0: not a cluster) and Redis shape of a
// server name.
func clusterOf(server string) (int, string) {
	shape := shapeSingle
	if rest, ok := strings.CutSuffix(server, rcSuffix); ok {
		server, shape = rest, shapeCluster
	}
	if server == serverCluster {
		return 2, shape
	}
	if rest, ok := strings.CutPrefix(server, serverCluster+"-"); ok {
		if n, err := strconv.Atoi(rest); err == nil {
			return n, shape
		}
	}
	return 0, ""
}

// benchRow is one measured configuration.
type benchRow struct {
	Server string `json:"server"`
	*loadtest.Result
	// Startup mode: computer start-up with one and with N servers.
	StartupOne, StartupAll time.Duration `json:",omitempty"`
	StartupN               int           `json:",omitempty"`
	Profiles               []string      `json:",omitempty"`
	Err                    string        `json:",omitempty"`
	// Turns > 0: measured in rotation with the other modes of its group.
	Turns int `json:",omitempty"`
}

type benchReport struct {
	Started       time.Time
	LoadAvgBefore string
	LoadAvgAfter  string
	GOMAXPROCS    int
	CPUs          int
	Params        int
	InFlight      int
	Warmup        time.Duration
	Window        time.Duration
	Rows          []benchRow
}

func (c *benchConfig) run(ctx context.Context, rep *benchReport) error {
	clusterRows := c.compare[serverCluster] && slices.Contains(c.modes, loadtest.ModeSIO)
	if clusterRows && c.redisURL == "" && slices.Contains(c.redisShapes, shapeSingle) {
		redis, err := loadtest.StartRedis(ctx)
		if err != nil {
			return err
		}
		defer redis.Stop()
		c.redisURL, c.redisPID = redis.URL, redis.PID
	}
	if clusterRows && slices.Contains(c.redisShapes, shapeCluster) {
		rc, err := loadtest.StartRedisCluster(ctx, 3)
		if err != nil {
			return err
		}
		defer rc.Stop()
		c.rcURL = rc.URL
		for _, ch := range rc.Nodes {
			c.rcPIDs = append(c.rcPIDs, ch.PID)
		}
	}
	// Call modes run side by side: for each office count and repetition,
	// every mode and server in turn, so that the rows a ratio compares are
	// measured next to each other in time (the speed of a shared machine
	// drifts over minutes).
	var callModes []loadtest.Mode
	for _, mode := range c.modes {
		if mode != modeStartup && mode != loadtest.ModeIdle {
			callModes = append(callModes, mode)
		}
	}
	for _, n := range c.offices {
		for range c.repeat {
			saturated := len(rep.Rows)
			if err := c.callRows(ctx, rep, callModes, n, 0); err != nil {
				return err
			}
			for _, spec := range c.rates {
				for _, mode := range callModes {
					offered, err := c.offered(spec, rep.Rows[saturated:], mode)
					if err != nil {
						return err
					}
					if err := c.callRows(ctx, rep, []loadtest.Mode{mode}, n, offered); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, mode := range c.modes {
		switch mode {
		case modeStartup:
			for range c.repeat {
				row, err := c.startup(ctx)
				rep.Rows = append(rep.Rows, row)
				if err != nil {
					return err
				}
			}
		case loadtest.ModeIdle:
			for range c.repeat {
				if err := c.rows(ctx, rep, mode, 0, 0); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// offered is the calls/s of spec for mode: its value, or its percentage
// of the reference server's saturated row among rows.
func (c *benchConfig) offered(spec rateSpec, rows []benchRow, mode loadtest.Mode) (float64, error) {
	if !spec.percent {
		return spec.value, nil
	}
	ref := loadtest.KindGateway
	if c.compare[kindNode] && mode == loadtest.ModeSIO {
		ref = kindNode
	}
	for _, row := range rows {
		if row.Result != nil && row.Server == ref && row.Mode == mode && row.Rate == 0 && row.Calls > 0 {
			return row.CallsPerSec() * spec.value / 100, nil
		}
	}
	return 0, fmt.Errorf("--rate %g%%: no saturated %s row of mode %s to take it of", spec.value, ref, mode)
}

// callRows measures the call modes at offices (offered calls/s at rate, 0:
// saturation) one after the other, or with --turns, the sio, connect and
// grpc rows (gateway and comparison servers alike) in rotation.
func (c *benchConfig) callRows(ctx context.Context, rep *benchReport, modes []loadtest.Mode, offices int, rate float64) error {
	var inTurns []loadtest.Mode
	for _, mode := range modes {
		if c.turns > 0 && mode.InTurns() {
			inTurns = append(inTurns, mode)
			continue
		}
		if err := c.rows(ctx, rep, mode, offices, rate); err != nil {
			return err
		}
	}
	if len(inTurns) == 0 {
		return nil
	}
	var rows []benchRow
	var runs []loadtest.Options
	targets := map[string]loadtest.Options{}
	var err error
	for _, mode := range inTurns {
		for _, kind := range c.servers(mode) {
			rows = append(rows, benchRow{Server: kind, Turns: c.turns, Result: &loadtest.Result{Mode: mode, Offices: offices, Rate: rate}})
			o, ok := targets[kind]
			if !ok && err == nil {
				var stop func()
				o, stop, err = c.target(ctx, kind, mode, offices, nil)
				defer stop()
				targets[kind] = o
			}
			o.Mode, o.Rate = mode, rate
			runs = append(runs, o)
		}
	}
	if err == nil {
		var res []*loadtest.Result
		res, err = loadtest.RunTurns(ctx, runs, c.turns)
		for k, r := range res {
			rows[k].Result = r
		}
	}
	if err != nil {
		for k := range rows {
			rows[k].Err = err.Error()
		}
	}
	rep.Rows = append(rep.Rows, rows...)
	if err != nil {
		return fmt.Errorf("in turns, offices=%d: %w", offices, err)
	}
	return nil
}

// servers are the kinds of server mode is measured on: the gateway and
// what it is compared with.
func (c *benchConfig) servers(mode loadtest.Mode) []string {
	var kinds []string
	if c.compare[loadtest.KindFloor] && (mode == loadtest.ModeSIO || mode == loadtest.ModeIdle || mode.CallTool() || mode.MCP()) {
		kinds = append(kinds, loadtest.KindFloor)
	}
	if c.compare[loadtest.KindRelay] && (mode.CallTool() || mode.MCP()) {
		kinds = append(kinds, loadtest.KindRelay)
	}
	if c.compare[kindNode] && mode == loadtest.ModeSIO {
		kinds = append(kinds, kindNode)
	}
	kinds = append(kinds, loadtest.KindGateway)
	if c.compare[loadtest.KindGovernance] && mode.InTurns() {
		kinds = append(kinds, loadtest.KindKeys, loadtest.KindGovernance)
	}
	if c.compare[serverCluster] && mode == loadtest.ModeSIO {
		for _, n := range c.nodes {
			for _, shape := range c.redisShapes {
				kinds = append(kinds, clusterServer(n, shape))
			}
		}
	}
	return kinds
}

// rows measures mode at offices (offered calls/s at rate, 0: saturation) on
// each of its servers, one row each.
func (c *benchConfig) rows(ctx context.Context, rep *benchReport, mode loadtest.Mode, offices int, rate float64) error {
	for _, kind := range c.servers(mode) {
		row, err := c.one(ctx, kind, mode, offices, rate)
		rep.Rows = append(rep.Rows, row)
		if err != nil {
			return fmt.Errorf("%s %s offices=%d: %w", kind, mode, offices, err)
		}
	}
	return nil
}

func (c *benchConfig) one(ctx context.Context, kind string, mode loadtest.Mode, offices int, rate float64) (benchRow, error) {
	// A row that fails before measuring keeps its mode and offices, for
	// the report's error line.
	row := benchRow{Server: kind, Result: &loadtest.Result{Mode: mode, Offices: offices, Rate: rate}}
	o, stop, err := c.target(ctx, kind, mode, offices, &row.Profiles)
	defer stop()
	if err != nil {
		row.Err = err.Error()
		return row, err
	}
	o.Rate = rate
	res, err := loadtest.Run(ctx, o)
	if res != nil {
		row.Result = res
	}
	if err != nil {
		row.Err = err.Error()
	}
	return row, err
}

// target returns the load options for a server of kind, spawned unless it
// is the --gateway one, and the function that stops it. With profiles, the
// spawned servers are profiled over the run and the files listed there.
func (c *benchConfig) target(ctx context.Context, kind string, mode loadtest.Mode, offices int, profiles *[]string) (loadtest.Options, func(), error) {
	o := loadtest.Options{
		URL: c.gatewayURL, Path: c.path, Mode: mode, Offices: offices, InFlight: c.inFlight,
		Warmup: c.warmup, Duration: c.duration, ParamBytes: c.params, Conns: c.conns, APIKey: c.apiKey, PIDs: []int{c.pid},
	}
	if mode == loadtest.ModeFinder {
		o.Finder = loadtest.FinderSetup(10, max(1, c.finderDocs/10), slog.New(slog.DiscardHandler))
	}
	if c.gatewayURL != "" && kind == loadtest.KindGateway {
		return o, func() {}, nil
	}
	servers, err := c.spawn(ctx, kind)
	stop := func() {
		for _, s := range servers {
			s.Stop()
		}
	}
	if err != nil {
		return o, stop, err
	}
	// Agents connect to the first server, computers to the last.
	o.URL, o.ComputerURL, o.Path, o.PIDs, o.APIKey = servers[0].URL, servers[len(servers)-1].URL, "/socket.io/", nil, ""
	if kind == loadtest.KindGovernance || kind == loadtest.KindKeys {
		o.APIKey = loadtest.GovernanceKey
	}
	var urls []string
	stamp := time.Now().Format("150405")
	for i, s := range servers {
		o.PIDs = append(o.PIDs, s.PID)
		urls = append(urls, s.URL)
		if c.profileDir != "" && profiles != nil && mode != loadtest.ModeIdle && kind != kindNode {
			name := fmt.Sprintf("%s-%s-%d-%s", kind, mode, offices, stamp)
			if len(servers) > 1 {
				name += "-n" + strconv.Itoa(i)
			}
			*profiles = append(*profiles, filepath.Join(c.profileDir, name+".pprof"))
			go c.profile(ctx, s.URL, (*profiles)[i])
		}
	}
	if kind != kindNode {
		// The Node relay has no runtime stats endpoint: its goroutine and
		// heap columns stay empty.
		o.Stats = loadtest.StatsClient(urls...)
	}
	if n, shape := clusterOf(kind); n > 0 && shape == shapeCluster {
		o.RedisPIDs = c.rcPIDs
	} else if n > 0 {
		o.RedisPID = c.redisPID
	}
	return o, stop, nil
}

func (c *benchConfig) profile(ctx context.Context, url, path string) {
	time.Sleep(c.warmup)
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = loadtest.FetchProfile(ctx, url, c.duration, f)
}

func (c *benchConfig) startup(ctx context.Context) (benchRow, error) {
	row := benchRow{Server: "computer", Result: &loadtest.Result{Mode: modeStartup}, StartupN: c.startupN}
	exe, err := os.Executable()
	if err != nil {
		return row, err
	}
	cfg := func(n int) map[string]map[string]any {
		m := map[string]map[string]any{}
		for i := range n {
			m[fmt.Sprintf("s%02d", i)] = map[string]any{
				"command": exe, "args": []any{"mcp", "-delay", c.startupDly.String()},
			}
		}
		return m
	}
	log := slog.New(slog.DiscardHandler)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if row.StartupOne, err = loadtest.StartupTime(sctx, cfg(1), log); err != nil {
		return row, fmt.Errorf("start-up with one server: %w", err)
	}
	if row.StartupAll, err = loadtest.StartupTime(sctx, cfg(c.startupN), log); err != nil {
		return row, fmt.Errorf("start-up with %d servers: %w", c.startupN, err)
	}
	row.LoadAvg = loadtest.LoadAvg()
	return row, nil
}

// spawn starts the servers of one row: the server of kind, or for the
// cluster two gateway nodes sharing c.redisURL. On error, the servers
// already started are returned with it, to be stopped.
func (c *benchConfig) spawn(ctx context.Context, kind string) ([]*loadtest.Child, error) {
	if kind == kindNode {
		s, err := spawnNodeRelay(ctx, c.nodeRelay)
		if err != nil {
			return nil, err
		}
		return []*loadtest.Child{s}, nil
	}
	n, shape := clusterOf(kind)
	if n == 0 {
		s, err := spawnServer(ctx, kind)
		if err != nil {
			return nil, err
		}
		return []*loadtest.Child{s}, nil
	}
	// Node ids unique to the row: a node of an earlier row that left
	// entries in Redis is never taken for alive.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var nodes []*loadtest.Child
	for i := range n {
		args := []string{"-redis", c.redisURL, "-node-id", fmt.Sprintf("bench-%s-%d", run, i)}
		if shape == shapeCluster {
			args = []string{"-redis", c.rcURL, "-redis-cluster", "-node-id", fmt.Sprintf("bench-%s-%d", run, i)}
		}
		s, err := spawnServer(ctx, loadtest.KindGateway, args...)
		if err != nil {
			return nodes, fmt.Errorf("cluster node %d: %w", i, err)
		}
		nodes = append(nodes, s)
	}
	return nodes, nil
}

// spawnServer re-executes this binary as `bench serve -kind kind args`
// and reads the address it listens on from its first line of output.
func spawnServer(ctx context.Context, kind string, args ...string) (*loadtest.Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return spawnAnnouncing(ctx, kind, exec.Command(exe, append([]string{"serve", "-kind", kind}, args...)...))
}

// spawnNodeRelay starts the Node relay in dir (installing its packages with
// npm ci when they are not there), found from the working directory
// upwards when dir is relative.
func spawnNodeRelay(ctx context.Context, dir string) (*loadtest.Child, error) {
	dir, err := findUp(dir, "relay.js")
	if err != nil {
		return nil, fmt.Errorf("--compare node: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "socket.io", "package.json")); err != nil {
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir, npm.Stdout, npm.Stderr = dir, os.Stderr, os.Stderr
		if err := npm.Run(); err != nil {
			return nil, fmt.Errorf("--compare node: npm ci in %s: %w", dir, err)
		}
	}
	cmd := exec.Command("node", "relay.js")
	cmd.Dir = dir
	return spawnAnnouncing(ctx, kindNode, cmd)
}

// findUp returns dir if it holds file, else the first dir under one of the
// working directory's parents that does (dir relative), else an error.
func findUp(dir, file string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, file)); err == nil || filepath.IsAbs(dir) {
		return dir, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, dir, file)); err == nil {
			return filepath.Join(d, dir), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s in %s, nor above %s", file, dir, wd)
		}
	}
}

// spawnWait bounds a spawned server's start-up: Node takes seconds to load
// socket.io on a loaded machine.
const spawnWait = time.Minute

// spawnAnnouncing starts cmd and reads the address it listens on from its
// first line of output, "LISTEN <url>".
func spawnAnnouncing(ctx context.Context, kind string, cmd *exec.Cmd) (*loadtest.Child, error) {
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch, err := loadtest.StartChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", kind, err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		u, found := strings.CutPrefix(l, "LISTEN ")
		if !ok {
			ch.Stop()
			return nil, fmt.Errorf("spawn %s: exited before announcing its address (its stderr is above)", kind)
		}
		if !found {
			ch.Stop()
			return nil, fmt.Errorf("spawn %s: no address announced (got %q)", kind, l)
		}
		ch.URL = u
	case <-time.After(spawnWait):
		ch.Stop()
		return nil, fmt.Errorf("spawn %s: no address after %s", kind, spawnWait)
	case <-ctx.Done():
		ch.Stop()
		return nil, ctx.Err()
	}
	return ch, nil
}

// benchServe is the hidden child: a gateway (or a cluster node) or floor
// relay on a loopback port, announced on stdout as "LISTEN <url>".
func benchServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench serve", flag.ContinueOnError)
	kind := fs.String("kind", loadtest.KindGateway, "gateway, governance, keys, floor or relay")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	var node loadtest.Node
	fs.StringVar(&node.Redis, "redis", "", "Redis URL: serve as one node of a cluster (gateway only)")
	fs.StringVar(&node.ID, "node-id", "", "cluster node id")
	fs.BoolVar(&node.RedisCluster, "redis-cluster", false, "--redis names a Redis Cluster's seeds")
	fs.IntVar(&node.MCPMaxBlobBytes, "mcp-max-blob-bytes", 0, "MCP front end's bound on a blob drained into one answer (0: its default)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return loadtest.Serve(ctx, *kind, node, &announcing{Listener: ln}, log)
}

// announcing prints "LISTEN <url>" at its first Accept: once the server is
// built (a cluster node has reached Redis) and serving.
type announcing struct {
	net.Listener
	once sync.Once
}

func (l *announcing) Accept() (net.Conn, error) {
	l.once.Do(func() { fmt.Printf("LISTEN http://%s\n", l.Addr()) })
	return l.Listener.Accept()
}

// benchMCP is the hidden stdio MCP server of the start-up mode.
func benchMCP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench mcp", flag.ContinueOnError)
	delay := fs.Duration("delay", 0, "wait this long before serving (start-up work)")
	docs := fs.Int("docs", 10, "dpe:// documents served")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return loadtest.ServeStdioMCP(ctx, *delay, *docs)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }
func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

func (r *benchReport) print(w io.Writer) {
	fmt.Fprintf(w, "bench  %s  GOMAXPROCS %d (%d CPUs)  load avg %s -> %s\n",
		r.Started.Format(time.RFC3339), r.GOMAXPROCS, r.CPUs, r.LoadAvgBefore, r.LoadAvgAfter)
	fmt.Fprintf(w, "params %d B, %d calls in flight per agent, warm-up %s, window %s\n\n", r.Params, r.InFlight, r.Warmup, r.Window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	calls := false
	for _, row := range r.Rows {
		if row.Result == nil || row.Mode == loadtest.ModeIdle || row.Mode == modeStartup || (row.Err != "" && row.Calls == 0) {
			continue
		}
		if !calls {
			fmt.Fprintln(tw, "server\tmode\toffices\toffered/s\tcalls/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\tsrv CPU/call µs\tsys µs\tread+write/call\tsrv RSS MiB\tload CPU/call µs\tgoroutines start/loaded/end\theap MiB start/end\tload avg\t")
			calls = true
		}
		server := row.Server
		if row.Turns > 0 {
			server += fmt.Sprintf(" (%d turns)", row.Turns)
		}
		lc, sys, io := time.Duration(0), time.Duration(0), 0.0
		if row.Calls > 0 {
			lc, sys = row.LoadCPU/time.Duration(row.Calls), row.ServerSys/time.Duration(row.Calls)
			io = float64(row.ServerIO) / float64(row.Calls)
		}
		offered := "max"
		if row.Rate > 0 {
			offered = strconv.FormatFloat(row.Rate, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%.2f\t%.1f\t%s\t%d/%d/%d\t%.1f/%.1f\t%s\t\n",
			server, row.Mode, row.Offices, offered, row.CallsPerSec(), ms(row.Latency.P50), ms(row.Latency.P90), ms(row.Latency.P99), ms(row.Latency.Max),
			row.Errors, us(row.CPUPerCall()), us(sys), io, float64(row.ServerRSS)/(1<<20), us(lc),
			row.GoroutinesStart, row.GoroutinesLoaded, row.GoroutinesEnd, float64(row.HeapStart)/(1<<20), float64(row.HeapEnd)/(1<<20), row.LoadAvg)
	}
	_ = tw.Flush()
	for _, row := range r.Rows {
		if row.Result == nil {
			continue
		}
		if row.Mode == loadtest.ModeFinder && row.AtComputer > 0 {
			fmt.Fprintf(w, "finder: get_finder inside the computer (no network), median of 200: %s ms\n", ms(row.AtComputer))
		}
		if row.FirstError != "" {
			fmt.Fprintf(w, "%s %s offices=%d: first error: %s\n", row.Server, row.Mode, row.Offices, row.FirstError)
		}
		if row.Stragglers > 0 || row.Unsettled > 0 {
			// Calls lost or stalled: those that ended after the window are in
			// no column above, so they are told here.
			fmt.Fprintf(w, "%s %s offices=%d: stragglers: %d calls took %s or longer (slowest %s ms), %d still running %s after the window\n",
				row.Server, row.Mode, row.Offices, row.Stragglers, loadtest.StragglerAfter, ms(row.SlowestStraggler), row.Unsettled, loadtest.SettleWait)
		}
		if row.RedisCPU > 0 && row.Calls > 0 {
			fmt.Fprintf(w, "%s %s offices=%d: redis-server CPU/call %s µs (not in srv CPU/call)\n",
				row.Server, row.Mode, row.Offices, us(row.RedisCPU/time.Duration(row.Calls)))
		}
	}
	idle := false
	for _, row := range r.Rows {
		if row.Result == nil || row.Mode != loadtest.ModeIdle {
			continue
		}
		if !idle {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "server\tidle conns\tRSS KiB/conn\theap KiB/conn\tstack KiB/conn\tgoroutines/conn\tsrv CPU ms (idle window)\tgoroutines start/loaded/end\tload avg\t")
			idle = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t%d/%d/%d\t%s\t\n", row.Server, row.Conns, row.RSSPerConn/1024, row.HeapPerConn/1024, row.StackPerConn/1024,
			row.GoroutinesPerConn, ms(row.ServerCPU), row.GoroutinesStart, row.GoroutinesLoaded, row.GoroutinesEnd, row.LoadAvg)
	}
	_ = tw.Flush()
	for _, row := range r.Rows {
		if row.Mode == modeStartup {
			fmt.Fprintf(w, "\ncomputer start-up: 1 stdio server %s ms, %d stdio servers %s ms (ratio %.2f; each server waits %s before serving)\n",
				ms(row.StartupOne), row.StartupN, ms(row.StartupAll), float64(row.StartupAll)/float64(max(1, row.StartupOne)), "its --startup-delay")
		}
	}
	r.printRatios(w)
	for _, row := range r.Rows {
		if row.Err != "" {
			fmt.Fprintf(w, "error: %s %s offices=%d: %s\n", row.Server, row.Mode, row.Offices, row.Err)
		}
		for _, p := range row.Profiles {
			fmt.Fprintf(w, "profile: %s\n", p)
		}
	}
}

// printRatios compares each gateway row with the floor and the cluster rows
// of the same mode, offices and repetition, and the RPC rows with the
// gateway's Socket.IO row of the same offices and repetition.
func (r *benchReport) printRatios(w io.Writer) {
	// nth returns the n-th (0-based) measured row of server, mode, offices
	// and offered rate.
	nth := func(server string, mode loadtest.Mode, offices int, rate float64, n int) *benchRow {
		for i := range r.Rows {
			row := &r.Rows[i]
			if row.Result != nil && row.Server == server && row.Mode == mode && row.Offices == offices && row.Rate == rate {
				if n == 0 {
					return row
				}
				n--
			}
		}
		return nil
	}
	header := false
	line := func(format string, a ...any) {
		if !header {
			fmt.Fprintln(w, "\nratios (same invocation, same repetition):")
			header = true
		}
		fmt.Fprintf(w, "  "+format+"\n", a...)
	}
	var clusterServers []string
	for _, row := range r.Rows {
		if clusterNodes(row.Server) > 0 && !slices.Contains(clusterServers, row.Server) {
			clusterServers = append(clusterServers, row.Server)
		}
	}
	count := map[string]int{}
	for i := range r.Rows {
		g := &r.Rows[i]
		if g.Result == nil || g.Server != loadtest.KindGateway {
			continue
		}
		key := string(g.Mode) + "/" + strconv.Itoa(g.Offices) + "/" + strconv.FormatFloat(g.Rate, 'f', -1, 64)
		n := count[key]
		count[key]++
		if g.Mode == loadtest.ModeIdle {
			if f := nth(loadtest.KindFloor, g.Mode, g.Offices, g.Rate, n); f != nil && f.RSSPerConn > 0 {
				line("idle: gateway/floor RSS per connection %.2f", g.RSSPerConn/f.RSSPerConn)
			}
			continue
		}
		if g.Calls == 0 {
			continue
		}
		f := nth(loadtest.KindFloor, g.Mode, g.Offices, g.Rate, n)
		switch {
		case f == nil || f.Calls == 0:
		case g.Mode.CallTool():
			goal := ""
			if g.Mode == loadtest.ModeConnectH2C || g.Mode == loadtest.ModeGRPC {
				goal = " (goal <= 1.3)"
			}
			cpu, cps, p99 := ratios(g, f)
			line("%s offices=%s%s: gateway/connect floor (net/http + connect-go answering in place) CPU per call %.2f%s, calls/s %.2f, p99 %.2f",
				g.Mode, at(g), inTurns(g, f), cpu, goal, cps, p99)
		case g.Mode.MCP():
			cpu, cps, p99 := ratios(g, f)
			line("%s offices=%s%s: gateway/MCP floor (net/http + go-sdk answering in place) CPU per call %.2f (goal <= 1.3), calls/s %.2f, p99 %.2f",
				g.Mode, at(g), inTurns(g, f), cpu, cps, p99)
		default:
			cpu, cps, p99 := ratios(g, f)
			line("%s offices=%s%s: gateway/floor CPU per call %.2f (goal <= 0.68), calls/s %.2f, p99 %.2f",
				g.Mode, at(g), inTurns(g, f), cpu, cps, p99)
		}
		if rl := nth(loadtest.KindRelay, g.Mode, g.Offices, g.Rate, n); rl != nil && rl.Calls > 0 {
			if f != nil && f.Calls > 0 {
				cpu, cps, _ := ratios(rl, f)
				line("%s offices=%s%s: relay floor/floor (the leg to the computer on the same libraries) CPU per call %.2f, calls/s %.2f",
					g.Mode, at(g), inTurns(rl, f), cpu, cps)
			}
			cpu, cps, p99 := ratios(g, rl)
			line("%s offices=%s%s: gateway/relay floor CPU per call %.2f, calls/s %.2f, p99 %.2f",
				g.Mode, at(g), inTurns(g, rl), cpu, cps, p99)
		}
		if k := nth(loadtest.KindKeys, g.Mode, g.Offices, g.Rate, n); k != nil && k.Calls > 0 {
			cpu, cps, _ := ratios(k, g)
			line("%s offices=%s%s: keys file/no authentication CPU per call %.2f, calls/s %.2f",
				g.Mode, at(g), inTurns(k, g), cpu, cps)
			if gv := nth(loadtest.KindGovernance, g.Mode, g.Offices, g.Rate, n); gv != nil && gv.Calls > 0 {
				cpu, cps, p99 := ratios(gv, k)
				line("%s offices=%s%s: governance on/off (rules + quotas + audit file; both with the keys file) CPU per call %.2f (goal <= 1.05), calls/s %.2f, p99 %.2f",
					g.Mode, at(g), inTurns(gv, k), cpu, cps, p99)
			}
		}
		if nd := nth(kindNode, g.Mode, g.Offices, g.Rate, n); nd != nil && nd.Calls > 0 {
			cpu, cps, p99 := ratios(g, nd)
			goal := " (goal <= 1)"
			if g.Rate > 0 {
				goal = " (goal <= 0.75)"
			}
			line("%s offices=%s%s: gateway/Node socket.io relay CPU per call %.2f%s, calls/s %.2f, p99 %.2f",
				g.Mode, at(g), inTurns(g, nd), cpu, goal, cps, p99)
		}
		for _, server := range clusterServers {
			cl := nth(server, g.Mode, g.Offices, g.Rate, n)
			if cl == nil || cl.Calls == 0 {
				continue
			}
			cpu, cps, p99 := ratios(cl, g)
			redis := ""
			if cl.RedisCPU > 0 {
				redis = fmt.Sprintf(", %.2f with redis-server", float64(cl.CPUPerCall()+cl.RedisCPU/time.Duration(cl.Calls))/float64(max(1, g.CPUPerCall())))
			}
			line("%s offices=%s%s: %s/gateway calls/s %.2f, p99 %.2f, CPU per call %.2f (all %d nodes%s)",
				g.Mode, at(g), inTurns(g, cl), server, cps, p99, cpu, clusterNodes(server), redis)
			if single, ok := strings.CutSuffix(server, rcSuffix); ok {
				if sg := nth(single, g.Mode, g.Offices, g.Rate, n); sg != nil && sg.Calls > 0 {
					_, cps, p99 := ratios(cl, sg)
					line("%s offices=%s%s: Redis Cluster/one redis-server (%s/%s) calls/s %.2f (goal >= 1), p99 %.2f",
						g.Mode, at(g), inTurns(sg, cl), server, single, cps, p99)
				}
			}
		}
		if g.Mode == loadtest.ModeSIO04 {
			if s := nth(loadtest.KindGateway, loadtest.ModeSIO, g.Offices, g.Rate, n); s != nil && s.Calls > 0 {
				line("%s offices=%s%s: calls/s / 0.2 calls/s %.2f, CPU per call / 0.2 %.2f (goal: 1 within noise)",
					g.Mode, at(g), inTurns(g, s), g.CallsPerSec()/s.CallsPerSec(), float64(g.CPUPerCall())/float64(max(1, s.CPUPerCall())))
			}
		}
		if g.Mode.CallTool() || g.Mode.MCP() {
			if s := nth(loadtest.KindGateway, loadtest.ModeSIO, g.Offices, g.Rate, n); s != nil && s.Calls > 0 {
				line("%s offices=%s%s: calls/s / Socket.IO calls/s %.2f, CPU per call / Socket.IO %.2f",
					g.Mode, at(g), inTurns(g, s), g.CallsPerSec()/s.CallsPerSec(), float64(g.CPUPerCall())/float64(max(1, s.CPUPerCall())))
			}
		}
	}
	r.scaling(line)
}

// scaling is the scaling table's ratio line for each server and call mode
// measured at several office counts: CPU per call and calls/s at the most
// offices over those at 10 (or the fewest, without a run at 10), first
// repetition.
func (r *benchReport) scaling(line func(format string, a ...any)) {
	type key struct {
		server string
		mode   loadtest.Mode
	}
	var keys []key
	at := map[key]map[int]*benchRow{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Result == nil || row.Calls == 0 || row.Mode == loadtest.ModeIdle || row.Mode == modeStartup {
			continue
		}
		k := key{row.Server, row.Mode}
		if at[k] == nil {
			at[k] = map[int]*benchRow{}
			keys = append(keys, k)
		}
		if at[k][row.Offices] == nil {
			at[k][row.Offices] = row
		}
	}
	for _, k := range keys {
		counts := slices.Sorted(maps.Keys(at[k]))
		if len(counts) < 2 {
			continue
		}
		lo, hi := counts[0], counts[len(counts)-1]
		if slices.Contains(counts, 10) && hi > 10 {
			lo = 10
		}
		a, b := at[k][hi], at[k][lo]
		goal := ""
		if k.server == loadtest.KindGateway && k.mode == loadtest.ModeSIO && lo == 10 && hi == 1000 {
			goal = " (goal < 1.5)"
		}
		line("%s %s: CPU per call at %d offices / at %d %.2f%s, calls/s %.2f",
			k.server, k.mode, hi, lo, float64(a.CPUPerCall())/float64(max(1, b.CPUPerCall())), goal, a.CallsPerSec()/b.CallsPerSec())
	}
}

// at names a row's offices, and its offered load when not saturated.
func at(r *benchRow) string {
	if r.Rate > 0 {
		return fmt.Sprintf("%d at %.0f calls/s offered", r.Offices, r.Rate)
	}
	return strconv.Itoa(r.Offices)
}

// inTurns marks a ratio of two rows measured in the same rotation.
func inTurns(a, b *benchRow) string {
	if a.Turns > 0 && b.Turns > 0 {
		return ", in turns"
	}
	return ""
}

// ratios are a's CPU per call, calls/s and p99 latency over b's.
func ratios(a, b *benchRow) (cpu, callsPerSec, p99 float64) {
	return float64(a.CPUPerCall()) / float64(max(1, b.CPUPerCall())), a.CallsPerSec() / b.CallsPerSec(),
		float64(a.Latency.P99) / float64(max(1, b.Latency.P99))
}
