package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPubSubDeliversEveryMessage publishes bursts of messages of varied
// sizes to a channel and requires the subscriber, reading as cluster.Peers
// does (PubSub.ReceiveMessage), to receive every one, in order.
//
// Cross-node tool calls travel this way. go-redis before v9.20.1 (fixed for
// good in v9.22.0) dropped a RESP3 pub/sub message whenever a read of the
// connection ended inside the frame's "message" name: its push-notification
// peek took the cut name ("messa") for another notification and consumed the
// frame (redis/go-redis#3839). Under load some requests or answers between
// nodes were lost and the calls ended at their timeout. With v9.18.0 this
// test loses a message in the first few hundred of every run.
func TestPubSubDeliversEveryMessage(t *testing.T) {
	rdb := realRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const channel = "socket.io-request#/smcp#"
	sub := rdb.Subscribe(ctx, channel)
	defer func() { _ = sub.Close() }()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatalf("subscribe: %v", err)
	}

	// Bursts larger than the connection's read buffer, so that reads end at
	// every offset of a frame, including inside its header.
	const bursts, perBurst = 20, 1000
	pad := strings.Repeat("x", 400)
	var wg sync.WaitGroup
	pubErr := make(chan error, 1)
	wg.Go(func() {
		for b := range bursts {
			p := rdb.Pipeline()
			for i := range perBurst {
				n := b*perBurst + i
				p.Publish(ctx, channel, fmt.Sprintf("%06d:%s", n, pad[:n*7%len(pad)]))
			}
			if _, err := p.Exec(ctx); err != nil {
				pubErr <- fmt.Errorf("publish burst %d: %w", b, err)
				return
			}
		}
	})
	defer wg.Wait()

	var lost []int
	for next := 0; next < bursts*perBurst; next++ {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := sub.ReceiveMessage(rctx)
		rcancel()
		if err != nil {
			select {
			case perr := <-pubErr:
				t.Fatal(perr)
			default:
			}
			t.Fatalf("after %d messages (lost before: %v): %v", next, lost, err)
		}
		var n int
		if _, err := fmt.Sscanf(m.Payload, "%06d:", &n); err != nil || n < next {
			t.Fatalf("message %d: unexpected payload %.20q", next, m.Payload)
		}
		for ; next < n; next++ {
			lost = append(lost, next)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d messages lost: %v", len(lost), bursts*perBurst, lost)
	}
}
