package cluster

import (
	"bufio"
	"bytes"
	"context"

	"github.com/redis/go-redis/v9"
)

// Subscriber is subscriber for the tests of package cluster_test.
type Subscriber struct{ s *subscriber }

func Subscribe(ctx context.Context, opts *redis.Options, channel string) (*Subscriber, error) {
	s := &subscriber{opts: opts, channel: channel}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	return &Subscriber{s}, nil
}

func (s *Subscriber) Next() ([]byte, error) { return s.s.next() }
func (s *Subscriber) Close()                { s.s.close() }

// Push kinds of ReadPush.
const (
	PushOther     = kindOther
	PushMessage   = kindMessage
	PushSubscribe = kindSubscribe
)

// ReadPush reads the pushes of a subscribed connection in data, as
// subscriber does: their kinds, the payloads of the messages, and the
// error that ended the reading (io.EOF at the end of data).
func ReadPush(data []byte) (kinds []int, payloads [][]byte, err error) {
	s := &subscriber{}
	rd := bufio.NewReaderSize(bytes.NewReader(data), 16)
	for {
		kind, err := s.read(rd)
		if err != nil {
			return kinds, payloads, err
		}
		kinds = append(kinds, kind)
		if kind == kindMessage {
			payloads = append(payloads, s.payload)
		}
	}
}

// LeanSubscribable tells whether Calls reads its inbox with subscriber
// for a client of opts.
func LeanSubscribable(opts *redis.Options) bool { return leanSubscribable(opts) }

// Outbox publishes batches of frames as Calls does.
type Outbox struct{ o *outbox }

func NewOutbox(rdb redis.UniversalClient) Outbox {
	return Outbox{newOutbox(rdb, NewHealth(nil), func(uint64, error) {})}
}

// Send publishes n frames of size bytes to channel in one round trip.
func (o Outbox) Send(ctx context.Context, channel string, n, size int) {
	batch := make([]outFrame, n)
	for i := range batch {
		batch[i] = outFrame{channel: channel, frame: &frameBuf{b: make([]byte, size)}}
	}
	o.o.send(ctx, batch)
}
