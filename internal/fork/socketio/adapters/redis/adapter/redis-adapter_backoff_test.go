package adapter

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	rds "github.com/redis/go-redis/v9"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/adapters/redis"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
)

// TestReceiveLoopsBackOff (patched: retryWait): with Redis gone, the two
// receive loops wait between their attempts instead of dialing again at
// once, and they subscribe again once Redis is back. Upstream's loops
// emitted an error per refused dial, tens of thousands a second.
func TestReceiveLoopsBackOff(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := rds.NewClient(&rds.Options{Addr: mr.Addr(), MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	rc := redis.NewRedisClient(context.Background(), rdb)
	var errs atomic.Int64
	_ = rc.On("error", func(...any) { errs.Add(1) })
	opts := socket.DefaultServerOptions()
	opts.SetAdapter(&RedisAdapterBuilder{Redis: rc, Opts: DefaultRedisAdapterOptions()})
	io := socket.NewServer(nil, opts)
	t.Cleanup(func() { io.Close(nil) })
	requests := "socket.io-request#/#"
	subscribed := func() bool {
		n, err := rdb.PubSubNumSub(context.Background(), requests).Result()
		return err == nil && n[requests] == 1
	}
	waitFor(t, "subscribed", subscribed)

	mr.Close() // every dial is now refused at once
	const down = time.Second
	time.Sleep(down)
	n := errs.Load()
	t.Logf("%d errors in %v with Redis down", n, down)
	// Two loops, waits of 10-200 ms: about 10 attempts each. Upstream: thousands.
	if n > 60 {
		t.Fatalf("%d errors in %v with Redis down: the receive loops do not back off", n, down)
	}
	if n == 0 {
		t.Fatal("no error with Redis down: the loops did not notice")
	}

	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "subscribed again", subscribed)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
