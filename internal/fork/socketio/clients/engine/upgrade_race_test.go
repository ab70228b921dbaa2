package engine

import (
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	enginesrv "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
)

// These tests force, with hooks, two interleavings of the upgrade from
// long-polling to WebSocket that JavaScript's single thread never sees and
// this port's goroutines do (see ../PATCHED.md, "The upgrade window").
// Found through sioclient: about one join in sixty lost its answer with
// polling first (gateway/mcpfront, -count=30 under -race).

// echoServer is a real engine (upgrade check every 100 ms, as by default)
// that answers each message with "echo:" and the message.
func echoServer(t *testing.T) string {
	t.Helper()
	srv := enginesrv.NewServer(config.DefaultServerOptions())
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	_ = srv.On("connection", func(a ...any) {
		sock := a[0].(enginesrv.Socket)
		_ = sock.On("message", func(a ...any) {
			if data, ok := a[0].(types.BufferInterface); ok {
				sock.Send(strings.NewReader("echo:"+data.String()), nil, nil)
			}
		})
	})
	return hs.URL
}

// pollingFirst dials url with long-polling, upgrading to WebSocket; the
// channels report the socket's open, its upgrade and its messages.
func pollingFirst(t *testing.T, url string) (s Socket, opened, upgraded <-chan struct{}, messages <-chan string) {
	t.Helper()
	opts := DefaultSocketOptions()
	opts.SetTransports(types.NewSet[TransportCtor](&PollingBuilder{}, &WebSocketBuilder{}))
	s = MakeSocket()
	open, up := make(chan struct{}), make(chan struct{})
	var openOnce, upOnce sync.Once
	msgs := make(chan string, 16)
	_ = s.On("open", func(...any) { openOnce.Do(func() { close(open) }) })
	_ = s.On("upgrade", func(...any) { upOnce.Do(func() { close(up) }) })
	_ = s.On("message", func(a ...any) {
		if r, ok := a[0].(io.Reader); ok {
			b, _ := io.ReadAll(r)
			msgs <- string(b)
		}
	})
	s.Construct(url, opts)
	t.Cleanup(func() { s.Close() })
	return s, open, up, msgs
}

func setHook[T any](t *testing.T, p *atomic.Pointer[T], fn T) {
	p.Store(&fn)
	t.Cleanup(func() { p.Store(nil) })
}

// The poll that Pause waits for is answered (the server's NOOP for the
// upgrade) just after Pause looked at the transport. Upstream looked, then
// registered its pollComplete listener: a poll answered in between was
// missed, the transport never paused, the upgrade never finished, and the
// socket kept every packet buffered from then on. The hook holds Pause
// right after its look until the poll has been answered.
func TestPauseSeesPollAnsweredMeanwhile(t *testing.T) {
	url := echoServer(t)
	// pollDone is closed by the test's own pollComplete listener, registered
	// when the upgrade starts, before Pause runs.
	var pollDone atomic.Pointer[chan struct{}]
	var forced atomic.Bool
	setHook(t, &testHookPause, func(p *polling) {
		done := pollDone.Load()
		if done == nil || !p._polling.Load() {
			return // no poll in flight: nothing to force this time
		}
		forced.Store(true)
		select {
		case <-*done:
		case <-time.After(10 * time.Second):
			t.Error("the poll in flight was never answered")
		}
	})
	// The server answers the pending poll 100 ms after the probe; a busy
	// machine may answer it before the probe's pong, so a few tries.
	for try := 1; !forced.Load(); try++ {
		if try > 10 {
			t.Fatal("no upgrade paused a transport with a poll in flight in 10 tries")
		}
		done := make(chan struct{})
		var once sync.Once
		pollDone.Store(&done)
		s, _, upgraded, messages := pollingFirst(t, url)
		_ = s.On("upgrading", func(...any) {
			_ = s.Transport().On("pollComplete", func(...any) { once.Do(func() { close(done) }) })
		})
		select {
		case <-upgraded:
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: the upgrade never finished (transport %s, forced %v): the pause missed the poll's end", try, s.Transport().Name(), forced.Load())
		}
		s.Send(strings.NewReader("after"), nil, nil)
		select {
		case got := <-messages:
			if got != "echo:after" {
				t.Fatalf("got %q after the upgrade", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: no echo after the upgrade", try)
		}
		pollDone.Store(nil)
		s.Close()
	}
}

// A message whose flush has seen no upgrade under way reaches the server
// although the upgrade pauses the polling transport before the flush hands
// it over. Upstream set the socket's upgrading flag without the flush lock:
// the paused transport discarded the message.
func TestFlushRacingUpgradeIsDelivered(t *testing.T) {
	url := echoServer(t)
	var armed atomic.Bool
	setHook(t, &testHookFlush, func(s *socketWithoutUpgrade) {
		if !armed.CompareAndSwap(true, false) {
			return
		}
		// Give the upgrade time to pause the polling transport (with the
		// change it cannot start while a flush sends: the wait runs out).
		deadline := time.Now().Add(3 * time.Second)
		for s.Transport().ReadyState() == TransportStateOpen && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	})
	s, opened, _, messages := pollingFirst(t, url)
	select {
	case <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the socket did not open")
	}
	if s.Transport().Name() != "polling" {
		t.Fatalf("opened on %s, want polling", s.Transport().Name())
	}
	armed.Store(true)
	s.Send(strings.NewReader("during"), nil, nil)
	select {
	case got := <-messages:
		if got != "echo:during" {
			t.Fatalf("got %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the message sent as the upgrade started never reached the server (transport now %s)", s.Transport().Name())
	}
}

// A poll answered just before the upgrade pauses the transport is the
// last: no poll starts once the transport is paused. Upstream decided to
// poll again from the state it read before emitting pollComplete; a Pause
// just before that emit paused on it, and a poll went out anyway, soon
// cancelled by the release: whatever the server wrote to it before it saw
// the upgrade was lost.
func TestNoPollAfterPause(t *testing.T) {
	url := echoServer(t)
	var forced, late atomic.Bool
	setHook(t, &testHookPollAnswered, func(p *polling) {
		if p.ReadyState() != TransportStateOpen || p.Socket().Id() == "" {
			return // the handshake, or the upgrade already pausing
		}
		// The decision to poll again is taken: hold it until the upgrade
		// starts pausing the transport (the probe's pong), for 15 s at most.
		// The hold ends as the pause starts; its bound is for a machine so
		// loaded that the pong takes seconds: let go sooner, the poll goes
		// out after the server's noop and waits for its next ping (25 s),
		// past this test's wait for the upgrade.
		deadline := time.Now().Add(15 * time.Second)
		for p.ReadyState() == TransportStateOpen && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if p.ReadyState() != TransportStateOpen {
			forced.Store(true)
		}
	})
	setHook(t, &testHookPoll, func(p *polling) {
		if p.ReadyState() == TransportStatePaused {
			late.Store(true)
		}
	})
	// The echo must come back on a poll before the probe's pong pauses the
	// transport; when the pong wins, try again.
	for try := 1; !forced.Load(); try++ {
		if try > 10 {
			t.Fatal("no poll was answered before the upgrade paused the transport in 10 tries")
		}
		s, opened, upgraded, messages := pollingFirst(t, url)
		select {
		case <-opened:
		case <-time.After(20 * time.Second):
			t.Fatal("the socket did not open")
		}
		old := s.Transport()
		s.Send(strings.NewReader("before"), nil, nil)
		select {
		case <-upgraded:
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: the upgrade never finished", try)
		}
		select {
		case got := <-messages:
			if got != "echo:before" {
				t.Fatalf("got %q", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("try %d: no echo", try)
		}
		// The old transport is released without a poll started once paused.
		p := old.(*polling)
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			p.mu.Lock()
			released := p.released
			p.mu.Unlock()
			if released {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("the paused transport was never released")
			}
		}
		if late.Load() {
			t.Fatalf("try %d: a poll started after the upgrade paused the transport", try)
		}
		s.Close()
	}
}

// A Close that begins just as the upgrade does closes the upgrade's probe
// too. Close, seeing no upgrade under way yet (the probe's pong has just
// arrived), closes the old transport alone; upstream, the upgrade, pausing
// meanwhile, could find the socket still closing, stop listening for its
// close, and hand it over to the probe once Close was done: nobody closed
// the probe's WebSocket, and its reader, any more (one client in a few
// thousand in sioclient's TestClosedClientsAreReleased). The hooks force
// that order: the upgrade waits at the pong until Close has taken the old
// transport, Close waits there until the upgrade is about to hand over, and
// the upgrade hands over once Close has returned.
func TestCloseAsUpgradeBeginsClosesProbe(t *testing.T) {
	url := echoServer(t)
	pong, took, atHandover, closed, handed := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var pongOnce, tookOnce, handoverOnce, handedOnce sync.Once
	await := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Error(what)
		}
	}
	setHook(t, &testHookProbePong, func(*socketWithUpgrade) {
		pongOnce.Do(func() {
			close(pong)
			await(took, "Close never took the transport")
		})
	})
	setHook(t, &testHookCloseTook, func(*socketWithoutUpgrade) {
		tookOnce.Do(func() {
			close(took)
			await(atHandover, "the upgrade never came to its handover")
		})
	})
	setHook(t, &testHookHandover, func(*socketWithUpgrade) {
		handoverOnce.Do(func() {
			close(atHandover)
			await(closed, "Close never returned")
		})
	})
	s, _, _, _ := pollingFirst(t, url)
	probes := make(chan Transport, 1)
	handOver := func(...any) { handedOnce.Do(func() { close(handed) }) }
	_ = s.On("upgrading", func(a ...any) {
		probe := a[0].(Transport)
		_ = probe.On("close", handOver)
		probes <- probe
	})
	_ = s.On("upgrade", handOver)
	select {
	case <-pong:
	case <-time.After(20 * time.Second):
		t.Fatal("no upgrade probe was answered")
	}
	s.Close()
	close(closed)
	await(handed, "the upgrade neither handed over to its probe nor closed it")
	probe := <-probes
	if state := probe.ReadyState(); state != TransportStateClosed {
		t.Fatalf("the socket is %s, its upgrade probe (%s) is %q: nothing closes it any more", s.ReadyState(), probe.Name(), state)
	}
}

// A Close that waits for the write buffer to drain hears a drain that comes
// just after it looked at the buffer. Upstream looked, then listened: the
// drain in between (the transport's writer runs on a goroutine of its own)
// was missed, and the socket stayed "closing", its transport open, until its
// ping timeout (2 goroutines, the WebSocket's readers, left in sioclient's
// TestClosedClientsAreReleased about one run in 12: the client's DISCONNECT,
// buffered during the upgrade, drained just then). The hook sends the
// buffered packet, and waits for the drain, right after Close looked.
func TestCloseHearsDrainMeanwhile(t *testing.T) {
	url := echoServer(t)
	opts := DefaultSocketOptions()
	opts.SetTransports(types.NewSet[TransportCtor](&WebSocketBuilder{}))
	s := MakeSocket()
	opened, closed, drained := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var openOnce, closeOnce, drainOnce sync.Once
	_ = s.On("open", func(...any) { openOnce.Do(func() { close(opened) }) })
	_ = s.On("close", func(...any) { closeOnce.Do(func() { close(closed) }) })
	s.Construct(url, opts)
	t.Cleanup(func() { s.Close() })
	select {
	case <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the socket did not open")
	}
	// The socket holds what is sent while it says it is upgrading: the
	// packet Close waits for is in the buffer when Close looks.
	s.SetUpgrading(true)
	s.Send(strings.NewReader("last"), nil, nil)
	_ = s.On("drain", func(...any) { drainOnce.Do(func() { close(drained) }) })
	var once sync.Once
	setHook(t, &testHookCloseLooked, func(sw *socketWithoutUpgrade) {
		once.Do(func() {
			sw.SetUpgrading(false)
			sw.Proto().Flush()
			select {
			case <-drained:
			case <-time.After(10 * time.Second):
				t.Error("the buffered packet never drained")
			}
		})
	})
	s.Close()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the socket is still %s 10 s after Close: Close missed the drain it waited for", s.ReadyState())
	}
}

// A Close that comes just after the upgrade emitted "upgrade" closes the
// socket. Upstream cleared the socket's upgrading flag after that emit: a
// Close in between saw an upgrade under way and waited for its end, which it
// had missed, as it had the drain of the upgrade's packet (written on the
// new transport's goroutine): the socket stayed "closing" until its ping
// timeout. The hook closes the socket just after the emit, and waits for
// that drain (or the close).
func TestCloseJustAfterUpgradeCloses(t *testing.T) {
	url := echoServer(t)
	s, _, upgraded, _ := pollingFirst(t, url)
	closed, drained := make(chan struct{}), make(chan struct{})
	var closeOnce, drainOnce, handoverOnce, upgradedOnce sync.Once
	_ = s.On("close", func(...any) { closeOnce.Do(func() { close(closed) }) })
	setHook(t, &testHookHandover, func(*socketWithUpgrade) {
		// From now on the socket's drains are the new transport's.
		handoverOnce.Do(func() {
			_ = s.On("drain", func(...any) { drainOnce.Do(func() { close(drained) }) })
		})
	})
	setHook(t, &testHookUpgraded, func(*socketWithUpgrade) {
		upgradedOnce.Do(func() {
			s.Close()
			select {
			case <-drained:
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Error("the upgrade packet never drained")
			}
		})
	})
	select {
	case <-upgraded:
	case <-time.After(20 * time.Second):
		t.Fatal("the upgrade never finished")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the socket is still %s 10 s after Close (upgrading %v): Close waited for an upgrade that had ended", s.ReadyState(), s.Upgrading())
	}
}

// The probe's pong is read before the probe's ping has returned from Send.
// Upstream sent the ping, then listened for the pong: a pong read in
// between was lost, and the upgrade stalled until the server gave up on the
// probe (the socket stayed on long-polling). The hook holds the probe after
// its ping until its pong has been read.
func TestProbePongReadBeforeListening(t *testing.T) {
	url := echoServer(t)
	// heard: the probe's own listener took the pong (it may have, before
	// the hook's listener below is in place).
	heard := make(chan struct{})
	var heardOnce sync.Once
	setHook(t, &testHookProbePong, func(*socketWithUpgrade) { heardOnce.Do(func() { close(heard) }) })
	setHook(t, &testHookProbeSent, func(probe Transport) {
		pong := make(chan struct{})
		var once sync.Once
		_ = probe.On("packet", func(...any) { once.Do(func() { close(pong) }) })
		select {
		case <-pong:
		case <-heard:
		case <-time.After(5 * time.Second):
			t.Error("the probe's pong never came")
		}
	})
	s, _, upgraded, _ := pollingFirst(t, url)
	select {
	case <-upgraded:
	case <-time.After(5 * time.Second): // the server gives up on a probe after 10 s
		t.Fatalf("no upgrade: transport %s (the probe's pong was lost)", s.Transport().Name())
	}
}
