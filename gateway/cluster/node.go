package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// DefaultHeartbeatTTL is how long a node is deemed alive after its last
// heartbeat; heartbeats and reaping run every TTL/3.
const DefaultHeartbeatTTL = 3 * time.Second

// reapedMemory is how long a reaped record is remembered for its node, in
// TTLs: a node that comes back after that long is told nothing of its
// members being back (they were gone long).
const reapedMemory = 100

// redialProbe is how often go-redis dials a Redis it could not reach once
// every connection of its pool failed (internal/pool tryDial, not
// configurable): a live node may need that long to be heard again after an
// outage.
const redialProbe = time.Second

// reassertBatch is how many members one reassert script gives back.
const reassertBatch = 64

// announceScript: KEYS heartbeat, nodes, epoch, settling, URL; ARGV node
// id, now, TTL ms, settling ms, force ("1": settle even if the epoch was
// there), URL ("": none published). Settles the registry for settling ms
// when the epoch was missing (Redis lost its data, or a first node starts)
// or when forced.
var announceScript = redis.NewScript(luaSlots + `
local fresh = redis.call('SET', KEYS[3], ARGV[2], 'NX')
if fresh or ARGV[5] == '1' then settle(KEYS[4], tonumber(ARGV[4])) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if ARGV[6] ~= '' then redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[3]) end
redis.call('SADD', KEYS[2], ARGV[1])
if fresh then return 1 end
return 0
`)

// beatScript: KEYS heartbeat, epoch, URL; ARGV now, TTL ms, URL ("": none
// published). Returns "ok", "lapsed" (the heartbeat had expired) or "reset"
// (no epoch: Redis lost its data). The URL lives exactly as long as the
// heartbeat: a node found through it is alive.
var beatScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 'reset' end
if redis.call('SET', KEYS[1], ARGV[1], 'XX', 'PX', ARGV[2]) then
  if ARGV[3] ~= '' then redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2]) end
  return 'ok'
end
return 'lapsed'
`)

// forgetScript: KEYS nodes, node's heartbeat, node's members; ARGV node id.
// Removes a node that is silent and holds nothing.
var forgetScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('SCARD', KEYS[3]) == 0 then
  redis.call('SREM', KEYS[1], ARGV[1])
end
return 0
`)

// Node keeps one gateway node alive in Redis, reaps dead ones, and rebuilds
// the registry when Redis loses it.
//
// Healing. The registry lives in Redis only; Redis may restart empty, or
// stop (a pause, a failover) for longer than the heartbeat TTL, after which
// every heartbeat has expired at once. Three rules keep the office rules
// (one agent session, one computer per name) through that:
//   - Each node gives its members back (reconcile): when its heartbeat finds
//     the registry without its epoch key (data lost) or its own heartbeat
//     expired, it marks the registry settling (see settleFor), announces itself,
//     claims each of its live members again and removes the records it
//     holds for sessions that are gone. Every live node beats every TTL/3,
//     so within the settling each has given its members back.
//   - While the registry settles, claims wait (within their bound) instead
//     of taking slots that may belong to a node that has not spoken yet,
//     lookups that miss wait too, and nobody is reaped.
//   - A node reaps another only while its own heartbeat is intact: if its
//     own lapsed too, Redis stopped, not the other node.
//
// A node whose heartbeat lapsed while the others ran (it was cut off, or
// paused) has been reaped; it takes back the slots still free and tells
// their offices they are back, and takes out of their offices the members
// whose slots were given to others meanwhile (core.Hub.Evict).
type Node struct {
	rdb    redis.UniversalClient
	reg    *Registry
	hub    *core.Hub
	id     string
	ttl    time.Duration
	log    *slog.Logger
	health *Health

	// recoverMu makes one recovery at a time (the heartbeat and claims
	// that find the registry reset may all start one).
	recoverMu sync.Mutex
	// recoveries counts the recoveries begun. A claim whose answer came
	// back across one may have been applied to the registry as it was
	// before (and lost with it): the claim is made again (Registry.Claim).
	recoveries atomic.Uint64
	// lastBeat is when the last heartbeat was answered (UnixNano; 0 before
	// the first, which is never taken for a stall).
	lastBeat atomic.Int64
	// url is where the other nodes reach this node's HTTP port (see
	// SetURL); "" until known.
	url atomic.Pointer[string]
	// gone, when set, is told of each node reaped (see OnNodeGone).
	gone func(node string)
}

// OnNodeGone has f called with the id of each node this node reaps, once
// its members are removed: the calls in flight to it are answered then
// (Peers.NodeGone). Call it before Run.
func (n *Node) OnNodeGone(f func(node string)) { n.gone = f }

// NewNode makes the heartbeat of hub's node (hub.Node()); reg is the hub's
// registry, whose claims reap the dead nodes they meet.
func NewNode(rdb redis.UniversalClient, reg *Registry, hub *core.Hub, ttl time.Duration, log *slog.Logger) *Node {
	if ttl <= 0 {
		ttl = DefaultHeartbeatTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{rdb: rdb, reg: reg, hub: hub, id: hub.Node(), ttl: ttl, log: log, health: NewHealth(log)}
	reg.node = n
	return n
}

// Health is the node's view of Redis; report the failures of the node's
// other Redis clients (its Peers') to it.
func (n *Node) Health() *Health { return n.health }

// Start announces the node. Call it before serving. The first node of a
// cluster (no epoch yet) settles the registry (settleFor): it cannot tell a
// new Redis from one that lost its data under running nodes.
func (n *Node) Start(ctx context.Context) error {
	if _, err := n.announce(ctx, false); err != nil {
		return fmt.Errorf("cluster: announce node %s: %w", n.id, err)
	}
	return nil
}

func (n *Node) announce(ctx context.Context, settle bool) (fresh bool, err error) {
	force := "0"
	if settle {
		force = "1"
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	res, err := announceScript.Run(ctx, n.rdb, []string{aliveKey(n.id), nodesKey(), epochKey(), settlingKey(), urlKey(n.id)},
		n.id, now, n.ttl.Milliseconds(), n.settleFor().Milliseconds(), force, n.URL()).Int()
	return res == 1, err
}

// settleFor is how long the registry settles after a reset or a pause: a
// node not heard from for a TTL is dead, counted from when its Redis
// client can dial again.
func (n *Node) settleFor() time.Duration { return n.ttl + redialProbe }

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
		n.tick(ctx)
	}
}

// tick is one heartbeat: beat, recover or reconcile when needed, reap.
func (n *Node) tick(ctx context.Context) {
	state, err := n.beat(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.health.Failed("heartbeat", err)
		}
		return
	}
	wasDown := n.health.Answered()
	switch {
	case state != "ok":
		err = n.recover(ctx, state)
	case wasDown:
		// Calls failed while Redis did not answer: releases among them
		// left records of sessions that are gone.
		_, err = n.reconcile(ctx, 0)
	}
	if err == nil {
		err = n.Reap(ctx)
	}
	if err != nil && ctx.Err() == nil {
		n.health.Failed("heartbeat", err)
	}
}

// beat refreshes the heartbeat. state is "ok", "lapsed" (it had expired:
// this node was presumed dead), "reset" (Redis lost its data) or "stalled":
// the heartbeat was found alive but the last one answered was more than
// two thirds of a TTL ago, so Redis (or this node) stood still long enough
// for other heartbeats to expire unseen.
func (n *Node) beat(ctx context.Context) (state string, err error) {
	ctx, cancel := context.WithTimeout(ctx, n.ttl/2)
	defer cancel()
	now := time.Now()
	state, err = beatScript.Run(ctx, n.rdb, []string{aliveKey(n.id), epochKey(), urlKey(n.id)},
		strconv.FormatInt(now.UnixMilli(), 10), n.ttl.Milliseconds(), n.URL()).Text()
	if err != nil {
		return "", err
	}
	prev := n.lastBeat.Swap(time.Now().UnixNano())
	if state == "ok" && prev != 0 && time.Since(time.Unix(0, prev)) > 2*n.ttl/3 {
		state = "stalled"
	}
	return state, nil
}

// recover rebuilds this node's part of the registry after state ("" when
// not known: it is checked first, and nothing is done if the heartbeat is
// alive): the registry settles for a TTL and the node's members are given
// back. One line is logged per recovery.
func (n *Node) recover(ctx context.Context, state string) error {
	n.recoverMu.Lock()
	defer n.recoverMu.Unlock()
	if state == "" {
		var err error
		if state, err = n.beat(ctx); err != nil {
			return err
		}
		if state == "ok" {
			return nil // recovered meanwhile, by the heartbeat or another claim
		}
	}
	n.recoveries.Add(1)
	if _, err := n.announce(ctx, true); err != nil {
		return fmt.Errorf("cluster: announce node %s: %w", n.id, err)
	}
	res, err := n.reconcile(ctx, n.settleFor())
	if err != nil {
		return err
	}
	why := map[string]string{
		"reset":   "Redis lost its data",
		"lapsed":  "this node's heartbeat had lapsed",
		"stalled": "Redis or this node stood still",
	}[state]
	n.log.Warn("cluster registry rebuilt: members given back", "node", n.id, "why", why,
		"members", res.held+res.back, "taken_back", res.back, "lost", res.lost, "stale_removed", res.stale)
	return nil
}

type reconciled struct{ held, back, lost, stale int }

// reconcile makes the registry's records of this node match its hub: the
// records of sessions that are gone are released, and every slot the hub
// holds is claimed again (settle > 0: the registry settles for that long
// from each batch on). A slot taken back after other nodes reaped it is
// announced to its office; a member whose slot another session holds now is
// evicted.
func (n *Node) reconcile(ctx context.Context, settle time.Duration) (reconciled, error) {
	var res reconciled
	recs, err := n.rdb.SMembers(ctx, membersKey(n.id)).Result()
	if err != nil {
		return res, fmt.Errorf("cluster: members of node %s: %w", n.id, err)
	}
	// Held and Claiming are read after the records: a claim sent before
	// the read is counted by the hub. Its record is not stale, but it is
	// not given back either: a claim in flight is no slot held, and
	// re-asserting it would take the slot while the registry settles,
	// ahead of the node whose member really holds it (which then loses its
	// seat). The claim itself waits for the settling and is decided by the
	// rules; one answered across this recovery is made again (see
	// Registry.Claim).
	held := n.hub.Held()
	live := make(map[string]bool, len(held))
	for _, m := range held {
		live[encode(m)] = true
	}
	for _, m := range n.hub.Claiming() {
		live[encode(m)] = true
	}
	for _, rec := range recs {
		if live[rec] {
			continue
		}
		m, err := decode(rec)
		if err != nil {
			if err := n.rdb.SRem(ctx, membersKey(n.id), rec).Err(); err != nil {
				return res, fmt.Errorf("cluster: members of node %s: %w", n.id, err)
			}
			continue
		}
		if _, err := n.reg.release(ctx, m); err != nil {
			return res, fmt.Errorf("cluster: release stale %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
		}
		res.stale++
	}
	for batch := range slices.Chunk(held, reassertBatch) {
		statuses, err := n.reassert(ctx, batch, settle)
		if err != nil {
			return res, fmt.Errorf("cluster: give members back: %w", err)
		}
		for i, m := range batch {
			switch statuses[i] {
			case "lost":
				res.lost++
				n.hub.Evict(m)
				continue
			case "back":
				res.back++
				n.hub.Restored(m)
			default:
				res.held++
			}
			// A session that ended while its slot was given back released
			// it before: release it again.
			if !n.hub.Holds(m) {
				if _, err := n.reg.release(ctx, m); err != nil {
					return res, fmt.Errorf("cluster: release %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
				}
			}
		}
	}
	return res, nil
}

// reassert claims the slots of batch again (settle > 0: the registry
// settles for that long first), in three round trips whatever the batch's
// size: the records into the members set, the offices' claims pipelined
// (on a Redis Cluster, to each primary at once), the outcome into the
// members and reaped sets. It returns "held", "back" or "lost" per member.
func (n *Node) reassert(ctx context.Context, batch []core.Member, settle time.Duration) ([]string, error) {
	recs := make([]any, 0, 1+len(batch))
	recs = append(recs, settle.Milliseconds())
	for _, m := range batch {
		recs = append(recs, encode(m))
	}
	if err := reassertScript.Run(ctx, n.rdb, []string{settlingKey(), membersKey(n.id)}, recs...).Err(); err != nil {
		return nil, err
	}
	claims, err := n.claimAll(ctx, batch)
	if err != nil {
		return nil, err
	}
	argv := make([]any, 0, 2*len(batch))
	for i, c := range claims {
		took := "1"
		if out, _ := c.Val().([]any); len(out) == 0 || out[0] != "" {
			took = "0"
		}
		argv = append(argv, recs[1+i], took)
	}
	return reassertedScript.Run(ctx, n.rdb, []string{membersKey(n.id), reapedKey(n.id)}, argv...).StringSlice()
}

// claimAll runs the claim script for each member in one pipeline, loading
// the script first where a Redis does not have it (a pipeline cannot fall
// back from EVALSHA to EVAL per command as Script.Run does).
func (n *Node) claimAll(ctx context.Context, batch []core.Member) ([]*redis.Cmd, error) {
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(batch))
		_, err := n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, m := range batch {
				cmds[i] = claimScript.EvalSha(ctx, p, []string{officeKey(m.OfficeID)}, args(m)...)
			}
			return nil
		})
		if err == nil {
			return cmds, nil
		}
		if attempt > 0 || !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return nil, err
		}
		// On a Redis Cluster, ScriptLoad loads it on every primary.
		if err := claimScript.Load(ctx, n.rdb).Err(); err != nil {
			return nil, err
		}
	}
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
		done, err := n.reapNode(ctx, id)
		if err != nil {
			return err
		}
		if done && n.gone != nil {
			n.gone(id)
		}
	}
	return nil
}

// reapNode removes the members of node id, presumed dead. done is false
// when it was not to be reaped now (see reapableScript); nothing was then
// removed after the first record that said so.
//
// Each record is released in three steps, its office's slot being
// another than the registry's: whether the node is to be reaped, the
// release, and its close (reapedScript), which finds out whether the node
// came back meanwhile: it may have given the record back between the
// first two, and the reaper then claims it again for that node.
func (n *Node) reapNode(ctx context.Context, id string) (done bool, err error) {
	recs, err := n.rdb.SMembers(ctx, membersKey(id)).Result()
	if err != nil {
		return false, err
	}
	reaped := 0
	defer func() {
		if reaped > 0 {
			n.log.Warn("reaped dead node", "node", id, "members", reaped)
		}
	}()
	keep := (reapedMemory * n.ttl).Milliseconds()
	for _, rec := range recs {
		m, err := decode(rec)
		if err != nil {
			n.rdb.SRem(ctx, membersKey(id), rec)
			continue
		}
		ok, err := reapableScript.Run(ctx, n.rdb, []string{aliveKey(id), settlingKey(), aliveKey(n.id)}).Int()
		if err != nil {
			return false, err
		}
		if ok != 1 {
			return false, nil
		}
		freed, err := releaseScript.Run(ctx, n.rdb, []string{officeKey(m.OfficeID)}, args(m)...).Int()
		if err != nil {
			return false, err
		}
		res, err := reapedScript.Run(ctx, n.rdb, []string{aliveKey(id), settlingKey(), membersKey(id), reapedKey(id)},
			rec, strconv.Itoa(freed), keep).Int()
		if err != nil {
			return false, err
		}
		if res != 1 {
			if freed == 1 {
				out, err := claimScript.Run(ctx, n.rdb, []string{officeKey(m.OfficeID)}, args(m)...).StringSlice()
				if err != nil {
					return false, err
				}
				if len(out) > 0 && out[0] != "" {
					// Not expected: a node giving its members back settles
					// the registry first, and claims wait while it settles.
					n.log.Warn("node came back while reaped: its member's slot was taken meanwhile", "node", id,
						"office", m.OfficeID, "role", m.Role, "name", m.Name)
				}
			}
			return false, nil
		}
		if freed == 1 {
			reaped++
			n.hub.Reap(m)
		}
	}
	if err := forgetScript.Run(ctx, n.rdb, []string{nodesKey(), aliveKey(id), membersKey(id)}, id).Err(); err != nil {
		return false, err
	}
	return true, nil
}

// Stop withdraws the node's heartbeat, and the node itself when it holds
// no members. Members it still holds (sessions that did not close in time)
// are reaped by the other nodes.
func (n *Node) Stop(ctx context.Context) error {
	if err := n.rdb.Del(ctx, aliveKey(n.id), urlKey(n.id)).Err(); err != nil {
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

// SetURL makes u (e.g. "http://10.0.0.5:8080") the URL where the other
// nodes reach this node's HTTP port: it is published beside the heartbeat,
// and withdrawn with it, from the next heartbeat on (Publish: at once).
func (n *Node) SetURL(u string) { n.url.Store(&u) }

// URL is the URL set by SetURL ("" when none is).
func (n *Node) URL() string {
	if u := n.url.Load(); u != nil {
		return *u
	}
	return ""
}

// Publish writes the node's URL now, for as long as its heartbeat, rather
// than at the next heartbeat: a session made right after the node starts
// serving may be used through another node at once.
func (n *Node) Publish(ctx context.Context) error {
	u := n.URL()
	if u == "" {
		return nil
	}
	if err := n.rdb.Set(ctx, urlKey(n.id), u, n.ttl).Err(); err != nil {
		return fmt.Errorf("cluster: publish the URL of node %s: %w", n.id, err)
	}
	return nil
}

// ID is the node's id in the cluster.
func (n *Node) ID() string { return n.id }

// PeerURL is the URL node publishes (SetURL) and whether it is alive (its
// heartbeat has not lapsed). A live node may publish none ("").
func (n *Node) PeerURL(ctx context.Context, node string) (url string, alive bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, n.ttl)
	defer cancel()
	// Both keys carry the node's hash tag: one slot, one MGET.
	vals, err := n.rdb.MGet(ctx, aliveKey(node), urlKey(node)).Result()
	if err != nil {
		return "", false, fmt.Errorf("cluster: look up node %s: %w", node, err)
	}
	if vals[0] == nil {
		return "", false, nil
	}
	url, _ = vals[1].(string)
	return url, true, nil
}
