package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestSubscriberMessagesByteExact publishes payloads of every awkward size
// (empty, around the 32 KiB read buffer, past it, 1 MiB) and content
// (CRLF, RESP markers, every byte value) in pipelined bursts, interleaved
// with messages to another channel, and requires the inbox's reader to
// return exactly the payloads of its channel, in order.
func TestSubscriberMessagesByteExact(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb *redis.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := cluster.Subscribe(ctx, rdb.Options(), "inbox")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rnd := rand.New(rand.NewPCG(1, 2))
		var want [][]byte
		for _, size := range []int{0, 1, 2, 7, 120, 32<<10 - 40, 32<<10 - 1, 32 << 10, 32<<10 + 1, 100_000, 1 << 20} {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rnd.IntN(256))
			}
			want = append(want, b)
		}
		want = append(want, []byte("\r\n"), []byte("*3\r\n$7\r\nmessage\r\n"), []byte("$-1\r\n"), []byte(strings.Repeat("\r\n", 1000)))
		for burst := range 3 {
			p := rdb.Pipeline()
			for i, w := range want {
				p.Publish(ctx, "elsewhere", fmt.Sprintf("not for the inbox %d %d", burst, i))
				p.Publish(ctx, "inbox", w)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				got, err := s.Next()
				if err != nil {
					t.Fatalf("burst %d, message %d: %v", burst, i, err)
				}
				if !bytes.Equal(got, w) {
					t.Fatalf("burst %d, message %d: %d bytes %.40q, want %d bytes %.40q", burst, i, len(got), got, len(w), w)
				}
			}
		}
	})
}

// TestSubscriberAuthenticates: the inbox's reader authenticates as the
// client does (a password, an ACL user), and a wrong password fails the
// subscription rather than leaving a reader that never receives.
func TestSubscriberAuthenticates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ name, user, pass string }{{"password", "", "pw"}, {"ACL user", "gw", "pw2"}} {
		t.Run(tc.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			if tc.user == "" {
				m.RequireAuth(tc.pass)
			} else {
				m.RequireUserAuth(tc.user, tc.pass)
			}
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Username: tc.user, Password: tc.pass})
			t.Cleanup(func() { _ = rdb.Close() })
			s, err := cluster.Subscribe(ctx, rdb.Options(), "inbox")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := rdb.Publish(ctx, "inbox", "hello").Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Next(); err != nil || string(got) != "hello" {
				t.Fatalf("got %q, %v", got, err)
			}
			bad := redis.NewClient(&redis.Options{Addr: m.Addr(), Username: tc.user, Password: "wrong"})
			t.Cleanup(func() { _ = bad.Close() })
			if s, err := cluster.Subscribe(ctx, bad.Options(), "inbox"); err == nil {
				s.Close()
				t.Fatal("subscribed with a wrong password")
			}
		})
	}
}

// TestReadPush holds the reader to the replies of a subscribed RESP2
// connection: messages, confirmations and pongs, and refuses what would
// leave it out of step with the stream.
func TestReadPush(t *testing.T) {
	msg := func(ch, payload string) string {
		return fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(ch), ch, len(payload), payload)
	}
	good := "*3\r\n$9\r\nsubscribe\r\n$5\r\ninbox\r\n:1\r\n" +
		msg("inbox", "a\r\nb") +
		"*2\r\n$4\r\npong\r\n$0\r\n\r\n" +
		msg("inbox", "") +
		"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n" +
		msg("inbox", strings.Repeat("z", 100))
	kinds, payloads, err := cluster.ReadPush([]byte(good))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err %v, want EOF at the end", err)
	}
	wantKinds := []int{cluster.PushSubscribe, cluster.PushMessage, cluster.PushOther, cluster.PushMessage, cluster.PushOther, cluster.PushMessage}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Fatalf("kinds %v, want %v", kinds, wantKinds)
	}
	if len(payloads) != 3 || string(payloads[0]) != "a\r\nb" || len(payloads[1]) != 0 || string(payloads[2]) != strings.Repeat("z", 100) {
		t.Fatalf("payloads %q", payloads)
	}
	for _, bad := range []string{
		"-ERR unknown command\r\n",
		"+OK\r\n",
		"*x\r\n",
		"*3\n$7\r\nmessage\r\n", // LF alone
		"*3\r\n$7\r\nmessage\r\n$5\r\ninbox\r\n$3\r\nabcd\r\n", // payload longer than said
		"*3\r\n$7\r\nmessage\r\n$5\r\ninbox\r\n$9\r\nabc",      // cut short
		"*3\r\n$z\r\nmessage\r\n",
	} {
		kinds, _, err := cluster.ReadPush([]byte(bad))
		if err == nil || errors.Is(err, io.EOF) && len(kinds) > 0 {
			t.Errorf("%q: kinds %v, err %v, want an error before any push", bad, kinds, err)
		}
	}
}

// TestCallsReadInboxWithPubSub: a client the inbox's reader does not
// support (one with an OnConnect hook) has its inbox read by go-redis's
// PubSub, and calls cross nodes as bytes all the same.
func TestCallsReadInboxWithPubSub(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), OnConnect: func(context.Context, *redis.Conn) error { return nil }})
	t.Cleanup(func() { _ = rdb.Close() })
	if cluster.LeanSubscribable(rdb.Options()) {
		t.Fatal("a client with OnConnect taken for one the inbox's reader supports")
	}
	plain := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = plain.Close() })
	if !cluster.LeanSubscribable(plain.Options()) {
		t.Fatal("a plain client not taken for one the inbox's reader supports")
	}
	nodes := startNodes(t, rdb, 2, core.Config{}, time.Second, false)
	odd := `{"z":1, "big":12345678901234567890,"s":"\ud800"}`
	joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", &computerConn{answer: echoBack})
	if got := call(t, nodes[0].calls, core.Member{Node: "n1", SID: "pc-sid"}, odd); got != odd {
		t.Fatalf("answer %s, want %s", got, odd)
	}
}

// TestCallsAfterRedisRestarts: redis-server restarts under two nodes; the
// inbox's reader subscribes again, and cross-node calls are answered again
// within 10 s.
func TestCallsAfterRedisRestarts(t *testing.T) {
	rd := systest.RedisProcess(t)
	opts, err := redis.ParseURL(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	nodes := startNodes(t, rdb, 2, core.Config{}, time.Second, false)
	joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", &computerConn{answer: echoBack})
	pc := core.Member{Node: "n1", SID: "pc-sid"}
	if got := call(t, nodes[0].calls, pc, `"before"`); got != `"before"` {
		t.Fatalf("answer %s", got)
	}
	rd.Stop()
	rd.Start(t)
	i := 0
	testwait.Within(t, 10*time.Second, "a cross-node call answered after the restart", func() bool {
		i++
		want := fmt.Sprintf(`"after-%d"`, i)
		done := make(chan json.RawMessage, 1)
		nodes[0].calls.Request(pc, smcp.EventToolCall, json.RawMessage(want), time.Second, func(raw json.RawMessage, err error) {
			if err != nil {
				raw = nil
			}
			done <- raw
		})
		select {
		case raw := <-done:
			return string(raw) == want
		case <-time.After(2 * time.Second):
			return false
		}
	})
}

// call makes one call through calls to computer to and returns its answer.
func call(t *testing.T, calls *cluster.Calls, to core.Member, payload string) string {
	t.Helper()
	done := make(chan string, 1)
	calls.Request(to, smcp.EventToolCall, json.RawMessage(payload), 10*time.Second, func(raw json.RawMessage, err error) {
		if err != nil {
			t.Errorf("call: %v", err)
		}
		done <- string(raw)
	})
	select {
	case got := <-done:
		return got
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}
