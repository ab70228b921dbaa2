package loadtest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestParamsSize(t *testing.T) {
	for _, n := range []int{16, 64, 1000} {
		p := Params(n)
		if len(p) != n || !json.Valid(p) {
			t.Errorf("Params(%d) = %d bytes %s", n, len(p), p)
		}
	}
}

func TestSummarise(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	got := Summarise(s)
	want := Latencies{P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if (Summarise(nil) != Latencies{}) {
		t.Error("empty samples")
	}
}

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.Sys > s.CPU {
		t.Errorf("RSS %d, system %s of CPU %s", s.RSS, s.Sys, s.CPU)
	}
	// Each ReadFile is at least one read: the count follows, where the
	// kernel keeps it (/proc/<pid>/io; readIO says 0 otherwise).
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Logf("no read/write counts here: %v", err)
	} else {
		for range 10 {
			if _, err := os.ReadFile("/proc/self/stat"); err != nil {
				t.Fatal(err)
			}
		}
		if s2, err := ReadProc(strconv.Itoa(os.Getpid())); err != nil || s2.IO < s.IO+10 {
			t.Errorf("read/write calls %d then %d after 10 reads (%v)", s.IO, s2.IO, err)
		}
	}
	if _, err := ReadProc("0"); err == nil {
		t.Error("pid 0 read")
	}
}

func TestSplitEvent(t *testing.T) {
	for in, want := range map[string][2]string{
		`["client:tool_call",{"a":1}]`: {"client:tool_call", `{"a":1}`},
		`["notify:x"]`:                 {"notify:x", ``},
	} {
		ev, p, ok := splitEvent([]byte(in))
		if !ok || ev != want[0] || string(p) != want[1] {
			t.Errorf("%s: %q %q %v", in, ev, p, ok)
		}
	}
	if _, _, ok := splitEvent([]byte(`{}`)); ok {
		t.Error("not an event array accepted")
	}
}

// TestFloorRelaysToolCall drives the floor relay with the lean client over
// real sockets: join, forward to the named computer, answer back, and a
// computer that is not in the office.
func TestFloorRelaysToolCall(t *testing.T) {
	f := NewFloor("/socket.io/")
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(func() { f.Close(); srv.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	o := Options{URL: srv.URL, Path: "/socket.io/"}
	comp := new(*Conn)
	c, err := o.dial(ctx, o.URL, echoComputer(comp))
	if err != nil {
		t.Fatal(err)
	}
	*comp = c
	defer c.Close()
	if err := join(ctx, c, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	a, err := o.dial(ctx, o.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := join(ctx, a, smcp.RoleAgent, "bot", "o"); err != nil {
		t.Fatal(err)
	}
	call := sioCaller(a, ModeSIO, "bot", Params(64))
	if err := call(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ans, err := a.Call(ctx, smcp.EventToolCall, []byte(`{"agent":"bot","req_id":"2","computer":"other","tool_name":"echo","timeout":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAnswer(ModeSIO, ans); err == nil {
		t.Errorf("unknown computer answered %s", ans)
	}
}

func TestRunTurnsRefuses(t *testing.T) {
	run := func(m Mode) Options { return Options{URL: "http://127.0.0.1:1", Mode: m, Duration: time.Second} }
	for _, tc := range []struct {
		runs  []Options
		turns int
	}{
		{[]Options{run(ModeSIO), run(ModeConnect)}, 0},
		{nil, 2},
		{[]Options{run(ModeSIO), run(ModeFinder)}, 2},
		{[]Options{run(ModeIdle)}, 2},
	} {
		if _, err := RunTurns(t.Context(), tc.runs, tc.turns); err == nil {
			t.Errorf("%d runs in %d turns accepted", len(tc.runs), tc.turns)
		}
	}
}

// TestDriveCountsStragglers: a call that outlasts the window (a call lost
// and ended by its timeout) is counted as a straggler with its duration,
// not in the window's calls, and the end of the run waits for it instead of
// failing.
func TestDriveCountsStragglers(t *testing.T) {
	slow := StragglerAfter + 200*time.Millisecond
	var first atomic.Bool
	call := func(ctx context.Context, seq uint64) error {
		if first.CompareAndSwap(false, true) {
			time.Sleep(slow)
			return nil
		}
		time.Sleep(time.Millisecond)
		return nil
	}
	w := &window{}
	var seq atomic.Uint64
	o := Options{InFlight: 2}
	wait := drive(context.Background(), o, []caller{call}, w, &seq, func() bool { return !w.stopped.Load() })
	w.measuring.Store(true)
	time.Sleep(100 * time.Millisecond)
	w.measuring.Store(false)
	w.stopped.Store(true)
	samples, ok := wait(SettleWait)
	if !ok {
		t.Fatal("the run did not wait for its straggler")
	}
	var r Result
	w.settled(&r)
	if r.Stragglers != 1 || r.SlowestStraggler < slow || r.Unsettled != 0 {
		t.Errorf("stragglers %d, slowest %s, unsettled %d; want 1, >= %s, 0", r.Stragglers, r.SlowestStraggler, r.Unsettled, slow)
	}
	if int64(len(samples)) != w.calls.Load() || w.calls.Load() == 0 {
		t.Errorf("%d samples, %d calls in the window", len(samples), w.calls.Load())
	}
	for _, s := range samples {
		if s >= StragglerAfter {
			t.Errorf("the straggler, which ended after the window, is among the window's samples (%s)", s)
		}
	}
}

// TestDrivePacesAtRate: with Options.Rate the workers together start no
// more calls than the rate allows (plus its burst), however fast the calls
// answer; without it they call as fast as answers come.
func TestDrivePacesAtRate(t *testing.T) {
	// run drives for about 0.5 s: on a busy machine the sleep may last
	// longer, so the calls are counted against the time it did last.
	run := func(rate float64) (int64, time.Duration) {
		var started atomic.Int64
		call := func(context.Context, uint64) error {
			started.Add(1)
			return nil
		}
		w := &window{}
		var seq atomic.Uint64
		begin := time.Now()
		wait := drive(context.Background(), Options{InFlight: 8, Rate: rate}, []caller{call, call}, w, &seq,
			func() bool { return !w.stopped.Load() })
		time.Sleep(500 * time.Millisecond)
		w.stopped.Store(true)
		ran := time.Since(begin)
		if _, ok := wait(SettleWait); !ok {
			t.Fatal("the run did not end")
		}
		return started.Load(), ran
	}
	// 200 calls/s: one every 5 ms of the run, plus the burst of 1 and the
	// call each worker may have reserved as the run stopped.
	if n, ran := run(200); n > int64(ran/(5*time.Millisecond))+1+16 || n < 20 {
		t.Errorf("%d calls started at 200 calls/s in %s, want about %d", n, ran, ran/(5*time.Millisecond))
	}
	if n, ran := run(0); n < 1000 {
		t.Errorf("%d calls started unpaced in %s", n, ran)
	}
}
