package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// DefaultHeartbeatTTL is how long a node is deemed alive after its last
// heartbeat; heartbeats and reaping run every TTL/3.
const DefaultHeartbeatTTL = 3 * time.Second

// Node keeps one gateway node alive in Redis and reaps dead ones.
type Node struct {
	rdb redis.UniversalClient
	reg *Registry
	hub *core.Hub
	id  string
	ttl time.Duration
	log *slog.Logger
}

// NewNode makes the heartbeat of hub's node (hub.Node()); reg is the hub's
// registry, whose claims reap the dead nodes they meet.
func NewNode(rdb redis.UniversalClient, reg *Registry, hub *core.Hub, ttl time.Duration, log *slog.Logger) *Node {
	if ttl <= 0 {
		ttl = DefaultHeartbeatTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{rdb: rdb, reg: reg, hub: hub, id: hub.Node(), ttl: ttl, log: log}
	reg.reap, reg.ttl = n.reapNode, ttl
	return n
}

// Start announces the node. Call it before serving.
func (n *Node) Start(ctx context.Context) error {
	if err := n.rdb.Set(ctx, aliveKey(n.id), time.Now().UnixMilli(), n.ttl).Err(); err != nil {
		return fmt.Errorf("cluster: announce node %s: %w", n.id, err)
	}
	if err := n.rdb.SAdd(ctx, nodesKey(), n.id).Err(); err != nil {
		return fmt.Errorf("cluster: announce node %s: %w", n.id, err)
	}
	return nil
}

// Run heartbeats and reaps until ctx ends. It leaves the heartbeat key to
// expire: Stop withdraws it at once, after the node's sessions have released
// their slots.
func (n *Node) Run(ctx context.Context) {
	t := time.NewTicker(n.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.beat(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("heartbeat", "node", n.id, "err", err)
		}
		if err := n.Reap(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("reap dead nodes", "node", n.id, "err", err)
		}
	}
}

func (n *Node) beat(ctx context.Context) error {
	ok, err := n.rdb.SetXX(ctx, aliveKey(n.id), time.Now().UnixMilli(), n.ttl).Result()
	if err != nil {
		return err
	}
	if !ok {
		// Our heartbeat lapsed (a pause longer than the TTL): other nodes
		// may have reaped our members. Announce again; the sessions of ours
		// that were reaped are gone from their offices until they rejoin.
		n.log.Warn("heartbeat had lapsed: node was presumed dead", "node", n.id)
		return n.Start(ctx)
	}
	return nil
}

// Reap removes the members of every node whose heartbeat lapsed and tells
// their offices. Several nodes may reap at once: each record is removed once.
func (n *Node) Reap(ctx context.Context) error {
	nodes, err := n.rdb.SMembers(ctx, nodesKey()).Result()
	if err != nil {
		return err
	}
	for _, id := range nodes {
		if id == n.id {
			continue
		}
		alive, err := n.rdb.Exists(ctx, aliveKey(id)).Result()
		if err != nil {
			return err
		}
		if alive == 1 {
			continue
		}
		if err := n.reapNode(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) reapNode(ctx context.Context, id string) error {
	recs, err := n.rdb.SMembers(ctx, membersKey(id)).Result()
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if len(recs) == 0 {
		level = slog.LevelInfo
	}
	n.log.Log(ctx, level, "reaping dead node", "node", id, "members", len(recs))
	for _, rec := range recs {
		m, err := decode(rec)
		if err != nil {
			n.rdb.SRem(ctx, membersKey(id), rec)
			continue
		}
		removed, err := n.reg.Release(ctx, m)
		if err != nil {
			return err
		}
		if removed {
			n.hub.Reap(m)
		}
	}
	return n.rdb.SRem(ctx, nodesKey(), id).Err()
}

// Stop withdraws the node's heartbeat, and the node itself when it holds
// no members. Members it still holds (sessions that did not close in time)
// are reaped by the other nodes.
func (n *Node) Stop(ctx context.Context) error {
	if err := n.rdb.Del(ctx, aliveKey(n.id)).Err(); err != nil {
		return fmt.Errorf("cluster: withdraw node %s: %w", n.id, err)
	}
	held, err := n.rdb.SCard(ctx, membersKey(n.id)).Result()
	if err == nil && held == 0 {
		err = n.rdb.SRem(ctx, nodesKey(), n.id).Err()
	}
	if err != nil {
		return fmt.Errorf("cluster: withdraw node %s: %w", n.id, err)
	}
	return nil
}
