package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Mode is what a run drives.
type Mode string

// Modes of a run.
const (
	// ModeSIO: client:tool_call over Socket.IO, agent → server → computer → back.
	ModeSIO Mode = "sio"
	// ModeSIO04: the same in 0.4 offices (a2c_version=0.4.0 in every
	// handshake); ModeSIO's clients send none and speak 0.2.
	ModeSIO04 Mode = "sio-0.4"
	// ModeConnect: CallTool over the Connect protocol (binary proto) with
	// the stock connect-go client over HTTP/1.1 keep-alive connections, to a
	// Socket.IO computer.
	ModeConnect Mode = "connect"
	// ModeConnectH2C: the same over h2c (HTTP/2 without TLS).
	ModeConnectH2C Mode = "connect-h2c"
	// ModeGRPC: CallTool over gRPC (h2c), with the stock connect-go client.
	ModeGRPC Mode = "grpc"
	// ModeConnectRaw: CallTool over the Connect protocol on HTTP/1.1 with a
	// hand-written client (connectCaller) that costs the load generator
	// less; the rows of issue 7 were measured with it.
	ModeConnectRaw Mode = "connect-raw"
	// ModeFinder: client:get_finder over Socket.IO to a real computer whose
	// cache holds the documents of its MCP servers (see FinderSetup).
	ModeFinder Mode = "finder"
	// ModeIdle: N connections joined and left idle; memory per connection.
	ModeIdle Mode = "idle"
	// ModeMCP: tools/call on the office's MCP endpoint (/mcp/{office_id},
	// streamable HTTP) with the stock go-sdk client, one session per office.
	ModeMCP Mode = "mcp"
	// ModeMCPRaw: the same calls as HTTP/1.1 POSTs written and parsed in
	// place on one initialized session per office (the lean client: the
	// load generator costs less, as ModeConnectRaw's does).
	ModeMCPRaw Mode = "mcp-raw"
)

// CallTool reports whether m drives CallTool on the Connect / gRPC API.
func (m Mode) CallTool() bool {
	return m == ModeConnect || m == ModeConnectH2C || m == ModeGRPC || m == ModeConnectRaw
}

// InTurns reports whether runs of m can be measured in turns (RunTurns).
func (m Mode) InTurns() bool { return m.SIO() || m.CallTool() || m.MCP() }

// SIO reports whether m drives client:tool_call over Socket.IO.
func (m Mode) SIO() bool { return m == ModeSIO || m == ModeSIO04 }

// a2cVersion is what m's connections send as a2c_version.
func (m Mode) a2cVersion() string {
	if m == ModeSIO04 {
		return smcp.V04.Full()
	}
	return ""
}

// MCP reports whether m drives tools/call on the MCP front end.
func (m Mode) MCP() bool { return m == ModeMCP || m == ModeMCPRaw }

// Options of a run.
type Options struct {
	// URL of the server, e.g. http://127.0.0.1:8080.
	URL string
	// ComputerURL, when set, is where the computers connect, URL being the
	// agents' (a cluster bench puts them on different nodes).
	ComputerURL string
	// Path is the Engine.IO path (default /socket.io/).
	Path string
	Mode Mode
	// Offices is the number of (agent, computer) pairs.
	Offices int
	// InFlight is the number of calls each agent keeps in flight.
	InFlight int
	// Rate, when positive, is the calls per second offered across all the
	// agents (at most InFlight in flight each): a server is measured at the
	// load it meets, not only at saturation. Zero: as fast as answers come.
	Rate     float64
	Warmup   time.Duration
	Duration time.Duration
	// ParamBytes is the size of the tool call's params JSON object.
	ParamBytes int
	// Conns is the number of idle connections (ModeIdle).
	Conns int
	// APIKey, when set, is sent as x-api-key.
	APIKey string
	// PIDs of the server processes, for CPU and RSS from /proc, summed
	// (none: not measured).
	PIDs []int
	// RedisPID, when set, is a redis-server serving the cluster: its CPU is
	// Result.RedisCPU, apart from the servers'.
	RedisPID int
	// RedisPIDs, when set, are the nodes of a Redis Cluster serving the
	// cluster: their CPU is added up as RedisPID's is.
	RedisPIDs []int
	// Stats, when set, reads the server's runtime counters (spawned servers).
	Stats func(ctx context.Context, gc bool) (RuntimeStats, error)
	// Finder, for ModeFinder, starts the computers (one per office, named
	// "pc" in office "bench-<i>") and returns a stop function.
	// probe, when not nil, times one get_finder inside the first computer
	// (no network): the computer's share of the latency.
	Finder func(ctx context.Context, url string, offices int) (stop func(), probe func() time.Duration, err error)
}

// RuntimeStats are the Go runtime counters of a spawned server.
type RuntimeStats struct {
	Goroutines int    `json:"goroutines"`
	HeapInuse  uint64 `json:"heap_inuse"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	StackInuse uint64 `json:"stack_inuse"`
}

// Result of a run.
type Result struct {
	Mode     Mode
	Offices  int
	InFlight int
	// Rate is Options.Rate: the calls per second offered (0: saturation).
	Rate    float64 `json:",omitempty"`
	Elapsed time.Duration
	Calls   int64
	Errors  int64
	// FirstError is the first failure seen, for the report.
	FirstError string
	Latency    Latencies
	// ServerCPU is the servers' CPU time over the window (0 without PIDs),
	// ServerSys its system part; ServerIO their read and write system
	// calls (ProcSample.IO).
	ServerCPU time.Duration
	ServerSys time.Duration
	ServerIO  int64
	ServerRSS int64
	// RedisCPU is the redis-server's CPU time over the window (0 without
	// RedisPID).
	RedisCPU time.Duration
	// LoadCPU is this process's CPU time over the window.
	LoadCPU time.Duration
	LoadAvg string
	// AtComputer is the median get_finder time inside the computer (ModeFinder).
	AtComputer time.Duration
	// Stragglers counts the calls that took StragglerAfter or longer,
	// whenever they ended (warm-up, window, or after it: those are in no
	// other column); SlowestStraggler is the longest of them. Unsettled
	// counts the calls still running SettleWait after the window, abandoned.
	Stragglers       int64
	SlowestStraggler time.Duration
	Unsettled        int64

	// Idle mode.
	Conns              int
	RSSBefore          int64
	GoroutinesPerConn  float64
	HeapPerConn        float64
	StackPerConn       float64
	RSSPerConn         float64
	GoroutinesStart    int
	GoroutinesLoaded   int
	GoroutinesEnd      int
	HeapStart, HeapEnd uint64
}

// CallsPerSec over the measured window.
func (r *Result) CallsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// CPUPerCall is the server's CPU per completed call.
func (r *Result) CPUPerCall() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Calls)
}

func (o *Options) defaults() error {
	if o.Path == "" {
		o.Path = "/socket.io/"
	}
	if o.ComputerURL == "" {
		o.ComputerURL = o.URL
	}
	if o.Offices <= 0 {
		o.Offices = 1
	}
	if o.InFlight <= 0 {
		o.InFlight = 8
	}
	if o.ParamBytes < 16 {
		o.ParamBytes = 16
	}
	if o.Duration <= 0 {
		return errors.New("loadtest: duration must be positive")
	}
	if o.Mode == ModeIdle && o.Conns <= 0 {
		return errors.New("loadtest: idle mode needs a positive number of connections")
	}
	if o.Mode == ModeFinder && o.Finder == nil {
		return errors.New("loadtest: finder mode needs a computer setup")
	}
	return nil
}

// Params returns a params object of exactly n bytes of JSON.
func Params(n int) json.RawMessage {
	const frame = `{"text":""}`
	return json.RawMessage(`{"text":"` + strings.Repeat("x", max(0, n-len(frame))) + `"}`)
}

// Run drives one run and measures it.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	r := &Result{Mode: o.Mode, Offices: o.Offices, InFlight: o.InFlight, Rate: o.Rate}
	if o.Stats != nil {
		s, err := o.Stats(ctx, true)
		if err != nil {
			return nil, err
		}
		r.GoroutinesStart, r.HeapStart = s.Goroutines, s.HeapInuse
	}
	var err error
	var closeAll func()
	if o.Mode == ModeIdle {
		closeAll, err = runIdle(ctx, o, r)
	} else {
		closeAll, err = runCalls(ctx, o, r)
	}
	if closeAll != nil {
		closeAll()
	}
	if err != nil {
		return r, err
	}
	r.LoadAvg = LoadAvg()
	if o.Stats != nil {
		settle(ctx, o, r)
	}
	return r, nil
}

// settle waits for the server to release what the clients held, then reads
// the heap: until its goroutines are back to their starting count, or their
// count has not moved for a second (a goroutine a server starts once, on
// first use, such as a log file's rotation worker, stays for good: End then
// shows it), or 10 s have passed.
func settle(ctx context.Context, o Options, r *Result) {
	deadline := time.Now().Add(10 * time.Second)
	last, since := -1, time.Now()
	for {
		s, err := o.Stats(ctx, true)
		if err != nil {
			return
		}
		r.GoroutinesEnd, r.HeapEnd = s.Goroutines, s.HeapInuse
		if s.Goroutines != last {
			last, since = s.Goroutines, time.Now()
		}
		if s.Goroutines <= r.GoroutinesStart || time.Since(since) >= time.Second || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dial connects to url, retrying twice: the library can drop a namespace
// CONNECT sent right after the handshake and then closes the connection.
func (o *Options) dial(ctx context.Context, url string, handler func(event string, id int64, payload json.RawMessage)) (*Conn, error) {
	var err error
	for range 3 {
		var c *Conn
		if c, err = Dial(ctx, url, o.Path, smcp.Namespace, o.Mode.a2cVersion(), o.APIKey, handler); err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func join(ctx context.Context, c *Conn, role, name, office string) error {
	b, _ := json.Marshal(map[string]string{"role": role, "name": name, "office_id": office})
	ans, err := c.Call(ctx, smcp.EventJoinOffice, b)
	if err != nil {
		return fmt.Errorf("join %s as %s %s: %w", office, role, name, err)
	}
	if !bytes.HasPrefix(ans, []byte("[true")) {
		return fmt.Errorf("join %s as %s %s refused: %s", office, role, name, ans)
	}
	return nil
}

// echoComputer answers client:tool_call at once with the params as text,
// and the reads an MCP session of the office makes when it opens (its one
// echo tool, an empty desktop and finder).
func echoComputer(c **Conn) func(event string, id int64, payload json.RawMessage) {
	return func(event string, id int64, payload json.RawMessage) {
		if id < 0 {
			return
		}
		switch event {
		case smcp.EventToolCall:
		case smcp.EventGetTools:
			_ = (*c).Ack(id, echoTools)
			return
		case smcp.EventGetDesktop:
			_ = (*c).Ack(id, []byte(`{"desktops":[]}`))
			return
		case smcp.EventGetFinder:
			_ = (*c).Ack(id, []byte(`{"documents":[],"total_count":0}`))
			return
		default:
			return
		}
		var req struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(payload, &req)
		text, _ := json.Marshal(string(req.Params))
		ans := make([]byte, 0, len(text)+64)
		ans = append(ans, `{"content":[{"type":"text","text":`...)
		ans = append(ans, text...)
		ans = append(ans, `}],"isError":false}`...)
		_ = (*c).Ack(id, ans)
	}
}

// echoTools is the echo computer's get_tools answer.
var echoTools = []byte(`{"tools":[{"name":"echo","description":"echo","params_schema":{"type":"object","properties":{"text":{"type":"string"}}},"return_schema":null,"meta":{}}]}`)

func office(i int) string { return "bench-" + strconv.Itoa(i) }

// window counts completed calls and their latencies between start and stop.
type window struct {
	measuring atomic.Bool
	stopped   atomic.Bool
	calls     atomic.Int64
	errors    atomic.Int64
	errOnce   sync.Once
	firstErr  string

	running    atomic.Int64 // calls in flight
	stragglers atomic.Int64
	slowest    atomic.Int64 // ns
}

// CallTimeout is the timeout the load tool's tool calls carry.
const CallTimeout = 30 * time.Second

// StragglerAfter: on loopback a call takes milliseconds, so one that takes
// seconds was stalled or lost and ended by its timeout (CallTimeout, or the
// gateway's answer at its deadline). The report counts them (Stragglers).
const StragglerAfter = 2 * time.Second

// SettleWait is how long the end of a run waits for the calls in flight:
// past their timeout and the gateway's margin, so that a lost call is
// counted as a straggler with its duration instead of failing the run.
const SettleWait = CallTimeout + 15*time.Second

// done records a call of d that has ended.
func (w *window) done(d time.Duration) {
	w.running.Add(-1)
	if d < StragglerAfter {
		return
	}
	w.stragglers.Add(1)
	for {
		old := w.slowest.Load()
		if int64(d) <= old || w.slowest.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// settled copies the straggler counts to r.
func (w *window) settled(r *Result) {
	r.Stragglers, r.SlowestStraggler, r.Unsettled = w.stragglers.Load(), time.Duration(w.slowest.Load()), w.running.Load()
}

func (w *window) fail(err error) {
	if !w.measuring.Load() {
		return
	}
	w.errors.Add(1)
	w.errOnce.Do(func() { w.firstErr = err.Error() })
}

// caller makes one call; it is called concurrently by o.InFlight workers
// per office.
type caller func(ctx context.Context, seq uint64) error

func runCalls(ctx context.Context, o Options, r *Result) (func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	var probe func() time.Duration
	if o.Mode == ModeFinder {
		stop, p, err := o.Finder(ctx, o.ComputerURL, o.Offices)
		if stop != nil {
			closers = append(closers, stop)
		}
		if err != nil {
			return closeAll, err
		}
		probe = p
	}
	callers, err := dialCallers(ctx, o, 0, &closers)
	if err != nil {
		return closeAll, err
	}
	w := &window{}
	var seq atomic.Uint64
	wait := drive(ctx, o, callers, w, &seq, func() bool { return !w.stopped.Load() })
	sleep(ctx, o.Warmup)
	srv0, redis0, self0 := o.readServer(), o.readRedis(), readSelf()
	t0 := time.Now()
	w.measuring.Store(true)
	sleep(ctx, o.Duration)
	w.measuring.Store(false)
	w.stopped.Store(true)
	r.Elapsed = time.Since(t0)
	srv1, redis1, self1 := o.readServer(), o.readRedis(), readSelf()
	r.Calls, r.Errors, r.FirstError = w.calls.Load(), w.errors.Load(), w.firstErr
	r.ServerCPU, r.ServerRSS = srv1.CPU-srv0.CPU, srv1.RSS
	r.ServerSys, r.ServerIO = srv1.Sys-srv0.Sys, srv1.IO-srv0.IO
	r.RedisCPU = redis1.CPU - redis0.CPU
	r.LoadCPU = self1.CPU - self0.CPU
	samples, ok := wait(SettleWait)
	w.settled(r)
	if !ok {
		closeAll()
		closers = nil
		samples, _ = wait(0)
	}
	if o.Stats != nil {
		if s, err := o.Stats(ctx, false); err == nil {
			r.GoroutinesLoaded = s.Goroutines
		}
	}
	if probe != nil {
		const n = 200
		times := make([]time.Duration, n)
		for i := range times {
			times[i] = probe()
		}
		r.AtComputer = Summarise(times).P50
	}
	r.Latency = Summarise(samples)
	if err := ctx.Err(); err != nil {
		return closeAll, err
	}
	return closeAll, nil
}

// dialCallers connects o.Offices offices, numbered from base (an echo
// computer and the o.Mode agent each; the computers of ModeFinder are set up
// by the caller), and makes one call per office: the route exists before any
// clock starts.
func dialCallers(ctx context.Context, o Options, base int, closers *[]func()) ([]caller, error) {
	callers := make([]caller, o.Offices)
	params := Params(o.ParamBytes)
	var httpClient *http.Client
	if o.Mode == ModeConnect || o.Mode == ModeConnectH2C || o.Mode == ModeGRPC {
		// One keep-alive connection per call in flight on HTTP/1.1; h2c
		// multiplexes the calls over one.
		tr := &http.Transport{MaxIdleConnsPerHost: o.Offices * o.InFlight, DisableCompression: true}
		tr.Protocols = new(http.Protocols)
		if o.Mode == ModeConnect {
			tr.Protocols.SetHTTP1(true)
		} else {
			tr.Protocols.SetUnencryptedHTTP2(true)
		}
		httpClient = &http.Client{Transport: tr}
		*closers = append(*closers, tr.CloseIdleConnections)
	}
	if o.Mode.MCP() {
		httpClient = mcpHTTPClient(o)
		*closers = append(*closers, httpClient.CloseIdleConnections)
	}
	for i := range o.Offices {
		officeID := office(base + i)
		if o.Mode != ModeFinder {
			comp := new(*Conn)
			c, err := o.dial(ctx, o.ComputerURL, echoComputer(comp))
			if err != nil {
				return nil, err
			}
			*comp = c
			*closers = append(*closers, func() { _ = c.Close() })
			if err := join(ctx, c, smcp.RoleComputer, "pc", officeID); err != nil {
				return nil, err
			}
		}
		agentName := "agent-" + strconv.Itoa(base+i)
		switch o.Mode {
		case ModeSIO, ModeSIO04, ModeFinder:
			a, err := o.dial(ctx, o.URL, nil)
			if err != nil {
				return nil, err
			}
			*closers = append(*closers, func() { _ = a.Close() })
			if err := join(ctx, a, smcp.RoleAgent, agentName, officeID); err != nil {
				return nil, err
			}
			callers[i] = sioCaller(a, o.Mode, agentName, params)
		case ModeConnectRaw:
			c, err := newConnectCaller(o, agentName, officeID, params)
			if err != nil {
				return nil, err
			}
			*closers = append(*closers, c.close)
			callers[i] = c.call
		case ModeMCP:
			c, closeSession, err := stockMCPCaller(ctx, o, httpClient, agentName, officeID, params)
			if err != nil {
				return nil, err
			}
			*closers = append(*closers, closeSession)
			callers[i] = c
		case ModeMCPRaw:
			c, err := newMCPRawCaller(ctx, o, httpClient, agentName, officeID, params)
			if err != nil {
				return nil, err
			}
			*closers = append(*closers, c.close)
			callers[i] = c.call
		case ModeConnect, ModeConnectH2C, ModeGRPC:
			c, err := stockCaller(o, httpClient, agentName, officeID, params)
			if err != nil {
				return nil, err
			}
			callers[i] = c
		default:
			return nil, fmt.Errorf("loadtest: unknown mode %q", o.Mode)
		}
	}
	for i, call := range callers {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := call(cctx, 0)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("office %d: first call: %w", i, err)
		}
	}
	return callers, nil
}

// drive runs o.InFlight workers per caller, each calling in a loop while
// proceed (which may block) returns true, and recording what ends while w
// is measuring. wait returns the latencies once every worker has stopped,
// or false if that takes longer than d.
func drive(ctx context.Context, o Options, callers []caller, w *window, seq *atomic.Uint64, proceed func() bool) (wait func(d time.Duration) ([]time.Duration, bool)) {
	var wg sync.WaitGroup
	samples := make([][]time.Duration, len(callers)*o.InFlight)
	// One limiter shared by every worker paces the calls at o.Rate; a
	// burst of a millisecond's calls keeps the pacing's own timers from
	// costing the load generator more than the calls do.
	var offered *rate.Limiter
	if o.Rate > 0 {
		offered = rate.NewLimiter(rate.Limit(o.Rate), max(1, int(o.Rate/1000)))
	}
	for i := range samples {
		call := callers[i/o.InFlight]
		wg.Go(func() {
			buf := make([]time.Duration, 0, 4096)
			defer func() { samples[i] = buf }()
			for proceed() && ctx.Err() == nil {
				if offered != nil && offered.Wait(ctx) != nil {
					break
				}
				w.running.Add(1)
				t0 := time.Now()
				err := call(ctx, seq.Add(1))
				w.done(time.Since(t0))
				if !w.measuring.Load() {
					if err != nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				if err != nil {
					w.fail(err)
					// A server refusing at once must not turn the worker
					// into a busy loop that starves the server of CPU.
					time.Sleep(10 * time.Millisecond)
					continue
				}
				buf = append(buf, time.Since(t0))
				w.calls.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return func(d time.Duration) ([]time.Duration, bool) {
		if d > 0 {
			select {
			case <-done:
			case <-time.After(d):
				return nil, false
			}
		}
		<-done
		var all []time.Duration
		for _, s := range samples {
			all = append(all, s...)
		}
		return all, true
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// readServer sums the readings of the server processes.
func (o *Options) readServer() ProcSample { return readPIDs(o.PIDs) }

// readRedis sums the readings of the Redis processes.
func (o *Options) readRedis() ProcSample { return readPIDs(append([]int{o.RedisPID}, o.RedisPIDs...)) }

func readPIDs(pids []int) ProcSample {
	var sum ProcSample
	for _, pid := range pids {
		s := readPID(pid)
		sum.CPU += s.CPU
		sum.Sys += s.Sys
		sum.RSS += s.RSS
		sum.IO += s.IO
	}
	return sum
}

func readPID(pid int) ProcSample {
	if pid <= 0 {
		return ProcSample{}
	}
	s, _ := ReadProc(strconv.Itoa(pid))
	return s
}

func readSelf() ProcSample { return readPID(os.Getpid()) }

func sioCaller(a *Conn, mode Mode, agentName string, params json.RawMessage) caller {
	event := smcp.EventToolCall
	if mode == ModeFinder {
		event = smcp.EventGetFinder
	}
	return func(ctx context.Context, seq uint64) error {
		b := make([]byte, 0, 160+len(params))
		b = append(b, `{"agent":"`...)
		b = append(b, agentName...)
		b = append(b, `","req_id":"`...)
		b = strconv.AppendUint(b, seq, 10)
		if mode == ModeFinder {
			b = append(b, `","computer":"pc","keywords":["report 9"],"limit":20}`...)
		} else {
			b = append(b, `","computer":"pc","tool_name":"echo","params":`...)
			b = append(b, params...)
			b = append(b, `,"timeout":`...)
			b = strconv.AppendInt(b, int64(CallTimeout/time.Second), 10)
			b = append(b, '}')
		}
		ans, err := a.Call(ctx, event, b)
		if err != nil {
			return err
		}
		return checkAnswer(mode, ans)
	}
}

// checkAnswer looks for the success marker of an answer without decoding
// it: the load generator must stay cheap.
func checkAnswer(mode Mode, ans []byte) error {
	var ok bool
	if mode == ModeFinder {
		ok = bytes.Contains(ans, []byte(`"total_count":`)) && !bytes.Contains(ans, []byte(`"total_count":0`))
	} else {
		ok = bytes.Contains(ans, []byte(`"isError":false`))
	}
	if !ok {
		if len(ans) > 200 {
			ans = ans[:200]
		}
		return fmt.Errorf("unexpected answer: %s", ans)
	}
	return nil
}

// stockCaller calls CallTool with the stock connect-go client over hc: the
// Connect protocol, or gRPC for ModeGRPC.
func stockCaller(o Options, hc *http.Client, agentName, officeID string, params json.RawMessage) (caller, error) {
	opts := []connect.ClientOption{connect.WithInterceptors(headers{"x-smcp-agent": agentName, "x-api-key": o.APIKey})}
	if o.Mode == ModeGRPC {
		opts = append(opts, connect.WithGRPC())
	}
	client := smcpv1connect.NewAgentServiceClient(hc, o.URL, opts...)
	st := &structpb.Struct{}
	if err := st.UnmarshalJSON(params); err != nil {
		return nil, err
	}
	return func(ctx context.Context, seq uint64) error {
		res, err := client.CallTool(ctx, &smcpv1.CallToolRequest{
			OfficeId: officeID, Computer: "pc", ToolName: "echo", Params: st, Timeout: int32(CallTimeout / time.Second),
			ReqId: strconv.FormatUint(seq, 10),
		})
		if err != nil {
			return err
		}
		if res.GetResult().GetIsError() {
			return fmt.Errorf("tool error: %v", res.GetResult())
		}
		return nil
	}, nil
}

// headers is a unary client interceptor setting fixed request headers.
type headers map[string]string

func (h headers) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		for k, v := range h {
			if v != "" {
				req.Header().Set(k, v)
			}
		}
		return next(ctx, req)
	}
}

func (h headers) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (h headers) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func runIdle(ctx context.Context, o Options, r *Result) (func(), error) {
	var conns []*Conn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	r.Conns = o.Conns
	before := o.readServer()
	r.RSSBefore = before.RSS
	var statsBefore RuntimeStats
	if o.Stats != nil {
		statsBefore, _ = o.Stats(ctx, true)
	}
	self0 := readSelf()
	t0 := time.Now()
	for i := range o.Conns {
		c, err := o.dial(ctx, o.URL, nil)
		if err != nil {
			return closeAll, fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
		if err := join(ctx, c, smcp.RoleComputer, "pc", "idle-"+strconv.Itoa(i)); err != nil {
			return closeAll, err
		}
	}
	// Idle for the run's duration: timers and pings have run at least once
	// before memory is read (the default ping interval is 25 s).
	sleep(ctx, o.Duration)
	r.Elapsed = time.Since(t0)
	after := o.readServer()
	r.ServerRSS = after.RSS
	r.ServerCPU = after.CPU - before.CPU
	r.LoadCPU = readSelf().CPU - self0.CPU
	r.RSSPerConn = float64(after.RSS-before.RSS) / float64(o.Conns)
	if o.Stats != nil {
		if s, err := o.Stats(ctx, true); err == nil {
			r.GoroutinesLoaded = s.Goroutines
			r.GoroutinesPerConn = float64(s.Goroutines-statsBefore.Goroutines) / float64(o.Conns)
			r.HeapPerConn = (float64(s.HeapInuse) - float64(statsBefore.HeapInuse)) / float64(o.Conns)
			r.StackPerConn = (float64(s.StackInuse) - float64(statsBefore.StackInuse)) / float64(o.Conns)
		}
	}
	for _, c := range conns {
		select {
		case <-c.Done():
			return closeAll, fmt.Errorf("an idle connection was closed by the server: %v", c.Err())
		default:
		}
	}
	return closeAll, ctx.Err()
}

// turnSettle is how long a mode runs unmeasured at the start of its turn,
// while the calls of the previous turn drain.
const turnSettle = 500 * time.Millisecond

// RunTurns measures runs (each a call mode against a server) in turns:
// every run's clients stay connected (offices of their own) and the measured
// time is cut into turns slices per run, taken in rotation, each after
// turnSettle unmeasured. Runs made one after the other put each on whatever
// the machine's speed is during its minutes; on a shared machine that drifts
// by a quarter, more than the differences being measured. In turns the drift
// falls on every run alike. The first run's Warmup is shared among the runs
// and its Duration is each run's measured time in total.
func RunTurns(ctx context.Context, runs []Options, turns int) ([]*Result, error) {
	if turns < 1 || len(runs) == 0 {
		return nil, errors.New("loadtest: turns needs at least one run and one turn")
	}
	results := make([]*Result, len(runs))
	for k := range runs {
		o := &runs[k]
		if !o.Mode.InTurns() {
			return nil, fmt.Errorf("loadtest: mode %q cannot run in turns (sio and the CallTool modes can)", o.Mode)
		}
		if err := o.defaults(); err != nil {
			return nil, err
		}
		results[k] = &Result{Mode: o.Mode, Offices: o.Offices, InFlight: o.InFlight, Rate: o.Rate}
		if o.Stats != nil {
			st, err := o.Stats(ctx, true)
			if err != nil {
				return results, err
			}
			results[k].GoroutinesStart, results[k].HeapStart = st.Goroutines, st.HeapInuse
		}
	}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
		closers = nil
	}
	defer closeAll()
	var (
		mu      sync.Mutex
		turn    = sync.NewCond(&mu)
		active  = -1
		stopped bool
	)
	setTurn := func(k int, stop bool) {
		mu.Lock()
		active, stopped = k, stop
		mu.Unlock()
		turn.Broadcast()
	}
	windows := make([]*window, len(runs))
	waits := make([]func(time.Duration) ([]time.Duration, bool), len(runs))
	var seq atomic.Uint64
	base := 0
	for k, o := range runs {
		callers, err := dialCallers(ctx, o, base, &closers)
		base += o.Offices
		if err != nil {
			setTurn(-1, true)
			return results, fmt.Errorf("%s: %w", o.Mode, err)
		}
		windows[k] = &window{}
		waits[k] = drive(ctx, o, callers, windows[k], &seq, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for active != k && !stopped {
				turn.Wait()
			}
			return !stopped
		})
	}
	for k := range runs {
		setTurn(k, false)
		sleep(ctx, runs[0].Warmup/time.Duration(len(runs)))
	}
	slice := runs[0].Duration / time.Duration(turns)
	for range turns {
		for k, r := range results {
			o := &runs[k]
			setTurn(k, false)
			sleep(ctx, turnSettle)
			srv0, redis0, self0 := o.readServer(), o.readRedis(), readSelf()
			t0 := time.Now()
			windows[k].measuring.Store(true)
			sleep(ctx, slice)
			windows[k].measuring.Store(false)
			r.Elapsed += time.Since(t0)
			srv1, redis1, self1 := o.readServer(), o.readRedis(), readSelf()
			r.ServerCPU += srv1.CPU - srv0.CPU
			r.ServerSys += srv1.Sys - srv0.Sys
			r.ServerIO += srv1.IO - srv0.IO
			r.RedisCPU += redis1.CPU - redis0.CPU
			r.ServerRSS = max(r.ServerRSS, srv1.RSS)
			r.LoadCPU += self1.CPU - self0.CPU
		}
	}
	setTurn(-1, true)
	for k, r := range results {
		samples, ok := waits[k](SettleWait)
		w := windows[k]
		w.settled(r)
		if !ok {
			return results, fmt.Errorf("%s: %d calls still running %s after the last turn (their timeout is %s)", r.Mode, r.Unsettled, SettleWait, CallTimeout)
		}
		r.Calls, r.Errors, r.FirstError = w.calls.Load(), w.errors.Load(), w.firstErr
		r.Latency = Summarise(samples)
		if o := runs[k]; o.Stats != nil {
			if st, err := o.Stats(ctx, false); err == nil {
				r.GoroutinesLoaded = st.Goroutines
			}
		}
	}
	closeAll()
	avg := LoadAvg()
	for k, r := range results {
		r.LoadAvg = avg
		if runs[k].Stats != nil && ctx.Err() == nil {
			settle(ctx, runs[k], r)
		}
	}
	return results, ctx.Err()
}
