package cluster

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Outbox publishes batches of frames as Peers does.
type Outbox struct{ o *outbox }

func NewOutbox(rdb redis.UniversalClient) Outbox {
	return Outbox{newOutbox(rdb, NewHealth(nil), func(uint64, error) {}, IsCluster(rdb))}
}

// Send publishes n frames of size bytes to channel in one round trip.
func (o Outbox) Send(ctx context.Context, channel string, n, size int) {
	batch := make([]outFrame, n)
	for i := range batch {
		batch[i] = outFrame{channel: channel, frame: &frameBuf{b: make([]byte, size)}}
	}
	o.o.send(ctx, batch)
}

// AliveKey is node's heartbeat key.
func AliveKey(node string) string { return aliveKey(node) }

// MembersKey is the set of the member records node holds.
func MembersKey(node string) string { return membersKey(node) }

// InboxChannel carries the calls to node's computers and the answers to
// its agents.
func InboxChannel(node string) string { return inboxChannel(node) }

// NotifyChannel carries the notifications of every node.
const NotifyChannel = notifyChannel

// OfficeKey is the hash of office id.
func OfficeKey(id string) string { return officeKey(id) }
