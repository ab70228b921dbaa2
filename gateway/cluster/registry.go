// Package cluster makes several gateway nodes one gateway over Redis: a
// Redis-backed core.Registry (office membership, join rules applied by Lua
// scripts, so two nodes racing for one slot get one winner), a per-node
// heartbeat, and a reaper that removes the members of a node whose
// heartbeat lapsed. Cross-node emits and acks go through the socket.io Redis
// adapter (gateway/sio); this package holds the shared state and the
// adapter's encoding (Wire), which carries payloads as their bytes.
//
// Keys (prefix "smcp:"):
//
//	smcp:office:{id}          hash: "agent" → holder name, "as" → sid of the
//	                          agent session, "a:{sid}" → agent holder (session
//	                          or one-call lease), "c:{name}" → computer
//	smcp:node:{node}:alive    heartbeat, PX TTL, refreshed every TTL/3
//	smcp:node:{node}:members  set of the member records the node holds
//	smcp:nodes                set of node ids (alive or not yet reaped)
//
// Member records are JSON (core.Member); a release only removes the record
// it was given, so a reaper and a late release cannot remove a newer holder.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const prefix = "smcp:"

func officeKey(id string) string    { return prefix + "office:{" + id + "}" }
func aliveKey(node string) string   { return prefix + "node:{" + node + "}:alive" }
func membersKey(node string) string { return prefix + "node:{" + node + "}:members" }
func nodesKey() string              { return prefix + "nodes" }
func computerField(n string) string { return "c:" + n }
func isAgentField(f string) bool    { return strings.HasPrefix(f, "a:") }
func isComputerField(f string) bool { return strings.HasPrefix(f, "c:") }
func encode(m core.Member) string   { b, _ := json.Marshal(m); return string(b) }
func decode(s string) (core.Member, error) {
	var m core.Member
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

// claimScript: KEYS office, node members; ARGV role, name, sid, lease
// ("1"/"0"), record, version ("" for a lease). Returns {""} or {refusal
// reason, holder record}; for "version", the office's version instead of a
// record. The office's version is its "v" field while it has a non-lease
// member (releaseScript clears it with the last).
var claimScript = redis.NewScript(`
local k, idx = KEYS[1], KEYS[2]
local role, name, sid, lease, rec, ver = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if ver ~= '' then
  local cur = redis.call('HGET', k, 'v')
  if cur and cur ~= ver then
    local held = redis.call('HEXISTS', k, 'as') == 1
    if not held then
      for _, f in ipairs(redis.call('HKEYS', k)) do
        if string.sub(f, 1, 2) == 'c:' then held = true break end
      end
    end
    if held then return {'version', cur} end
  end
end
if role == 'agent' then
  local cur = redis.call('HGET', k, 'agent')
  local as = redis.call('HGET', k, 'as')
  if as and (lease == '0' or cur ~= name) then
    return {'agent', redis.call('HGET', k, 'a:' .. as) or ''}
  end
  if cur and cur ~= name then
    for _, f in ipairs(redis.call('HKEYS', k)) do
      if string.sub(f, 1, 2) == 'a:' then return {'agent', redis.call('HGET', k, f)} end
    end
    return {'agent', ''}
  end
  redis.call('HSET', k, 'agent', name, 'a:' .. sid, rec)
  if lease == '0' then redis.call('HSET', k, 'as', sid) end
else
  local cur = redis.call('HGET', k, 'c:' .. name)
  if cur then return {'computer', cur} end
  redis.call('HSET', k, 'c:' .. name, rec)
end
if ver ~= '' then redis.call('HSET', k, 'v', ver) end
redis.call('SADD', idx, rec)
return {''}
`)

// releaseScript: same KEYS and ARGV. Returns 1 when the record was removed.
var releaseScript = redis.NewScript(`
local k, idx = KEYS[1], KEYS[2]
local role, name, sid, lease, rec = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local removed = 0
if role == 'agent' then
  if redis.call('HGET', k, 'a:' .. sid) == rec then
    redis.call('HDEL', k, 'a:' .. sid)
    removed = 1
    if redis.call('HGET', k, 'as') == sid then redis.call('HDEL', k, 'as') end
    local holders = false
    for _, f in ipairs(redis.call('HKEYS', k)) do
      if string.sub(f, 1, 2) == 'a:' then holders = true break end
    end
    if not holders then redis.call('HDEL', k, 'agent') end
  end
else
  if redis.call('HGET', k, 'c:' .. name) == rec then
    redis.call('HDEL', k, 'c:' .. name)
    removed = 1
  end
end
if removed == 1 and redis.call('HEXISTS', k, 'as') == 0 then
  local held = false
  for _, f in ipairs(redis.call('HKEYS', k)) do
    if string.sub(f, 1, 2) == 'c:' then held = true break end
  end
  if not held then redis.call('HDEL', k, 'v') end
end
redis.call('SREM', idx, rec)
return removed
`)

// The registry's own bounds when RegistryOptions leaves them zero.
const (
	// DefaultTimeout bounds a Release, Members or Computer call.
	DefaultTimeout = 5 * time.Second
	// DefaultClaimTimeout bounds a Claim, which may wait out the heartbeat
	// of a dead node (see Registry.Claim).
	DefaultClaimTimeout = 15 * time.Second
)

// RegistryOptions bound the registry's calls. The hub passes its caller's
// context, which may have no deadline (a release has no caller at all):
// these are what keeps a Redis that stops answering from holding a join, a
// listing or a closing session forever.
type RegistryOptions struct {
	// Timeout bounds Release, Members and Computer (DefaultTimeout if 0).
	Timeout time.Duration
	// ClaimTimeout bounds Claim (DefaultClaimTimeout if 0). A claim that
	// meets a holder of another node waits up to a heartbeat TTL to learn
	// whether that node is dead; keep it above the TTL.
	ClaimTimeout time.Duration
}

// Registry is a core.Registry in Redis.
type Registry struct {
	rdb redis.UniversalClient
	// reap removes the members of a dead node (Node.reapNode); nil: a
	// claim refused by a member of another node is simply refused.
	reap         func(ctx context.Context, node string) error
	ttl          time.Duration // the nodes' heartbeat TTL
	timeout      time.Duration
	claimTimeout time.Duration
}

// NewRegistry uses rdb for the registry, its calls bounded as opts says.
// The bounds end a call between round trips; they cut a read in progress
// short only when rdb has ContextTimeoutEnabled (without it go-redis keeps
// to its own ReadTimeout and ignores the context's deadline).
func NewRegistry(rdb redis.UniversalClient, opts RegistryOptions) *Registry {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ClaimTimeout <= 0 {
		opts.ClaimTimeout = DefaultClaimTimeout
	}
	return &Registry{rdb: rdb, ttl: DefaultHeartbeatTTL, timeout: opts.Timeout, claimTimeout: opts.ClaimTimeout}
}

var _ core.Registry = (*Registry)(nil)

func (r *Registry) run(ctx context.Context, s *redis.Script, m core.Member) (any, error) {
	lease := "0"
	if m.Lease {
		lease = "1"
	}
	return s.Run(ctx, r.rdb, []string{officeKey(m.OfficeID), membersKey(m.Node)},
		m.Role, m.Name, m.SID, lease, encode(m), m.Version).Result()
}

// Claim implements core.Registry. A slot held by a member of another node
// is not refused at once: when that node has just died, its sessions are
// still registered until its heartbeat lapses, and a computer or agent that
// reconnected to a survivor (a Python SDK client does not retry a refused
// re-join) would be shut out. The claim watches that node's heartbeat (see
// waitLapse), reaps the node if it lapsed, and tries again; a live holder
// is refused after half a TTL.
//
// The whole claim, waiting included, is bounded by the ClaimTimeout.
func (r *Registry) Claim(ctx context.Context, m core.Member) error {
	ctx, cancel := context.WithTimeout(ctx, r.claimTimeout)
	defer cancel()
	reason, holder, err := r.claim(ctx, m)
	if err != nil {
		return err
	}
	if reason != "" && reason != "version" && r.reap != nil && holder.Node != "" && holder.Node != m.Node {
		lapsed, err := r.waitLapse(ctx, holder.Node)
		if err != nil {
			return err
		}
		if lapsed {
			if err := r.reap(ctx, holder.Node); err != nil {
				return fmt.Errorf("cluster: reap node %s: %w", holder.Node, err)
			}
			if reason, _, err = r.claim(ctx, m); err != nil {
				return err
			}
		}
	}
	switch reason {
	case "":
		return nil
	case "agent":
		return smcp.Errorf(smcp.CodeForbidden, "office %q already has an agent", m.OfficeID)
	case "version":
		return core.VersionRefusal(m, holder.Version)
	default:
		return smcp.Errorf(smcp.CodeForbidden, "a computer named %q is already in office %q", m.Name, m.OfficeID)
	}
}

// claim runs the claim script once: the refusal reason ("" when m got its
// slot) and the holder that refused it, if known.
func (r *Registry) claim(ctx context.Context, m core.Member) (string, core.Member, error) {
	res, err := r.run(ctx, claimScript, m)
	if err != nil {
		return "", core.Member{}, fmt.Errorf("cluster: claim %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
	}
	out, _ := res.([]any)
	if len(out) == 0 {
		return "", core.Member{}, fmt.Errorf("cluster: claim: unexpected reply %v", res)
	}
	reason, _ := out[0].(string)
	var holder core.Member
	if reason == "version" && len(out) > 1 {
		holder.Version, _ = out[1].(string)
		return reason, holder, nil
	}
	if len(out) > 1 {
		if rec, _ := out[1].(string); rec != "" {
			holder, _ = decode(rec) // unreadable: refused without waiting
		}
	}
	return reason, holder, nil
}

// waitLapse finds out whether node is dead: alive nodes beat every TTL/3,
// so a node whose heartbeat does not change for half a TTL has missed a
// beat; its key is then left to expire. A live holder is known in half a
// TTL; a dead one in at most a TTL. When ctx ends first, node counts as
// alive (the claim is refused).
func (r *Registry) waitLapse(ctx context.Context, node string) (bool, error) {
	beat := func() (string, bool, error) {
		v, err := r.rdb.Get(ctx, aliveKey(node)).Result()
		if errors.Is(err, redis.Nil) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("cluster: heartbeat of %s: %w", node, err)
		}
		return v, true, nil
	}
	first, ok, err := beat()
	if err != nil || !ok {
		return !ok, err
	}
	if !sleep(ctx, r.ttl/2) {
		return false, nil
	}
	if now, ok, err := beat(); err != nil || !ok || now != first {
		return !ok, err
	}
	left, err := r.rdb.PTTL(ctx, aliveKey(node)).Result()
	if err != nil {
		return false, fmt.Errorf("cluster: heartbeat of %s: %w", node, err)
	}
	if left > 0 && !sleep(ctx, left+20*time.Millisecond) {
		return false, nil
	}
	_, ok, err = beat()
	return !ok, err
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Release implements core.Registry.
func (r *Registry) Release(ctx context.Context, m core.Member) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := r.run(ctx, releaseScript, m)
	if err != nil {
		return false, fmt.Errorf("cluster: release %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
	}
	n, _ := res.(int64)
	return n == 1, nil
}

// Members implements core.Registry: the agent session first, then the
// computers by name.
func (r *Registry) Members(ctx context.Context, officeID string) ([]core.Member, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	all, err := r.rdb.HGetAll(ctx, officeKey(officeID)).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster: members of %q: %w", officeID, err)
	}
	var agents, computers []core.Member
	for f, v := range all {
		if !isAgentField(f) && !isComputerField(f) {
			continue
		}
		m, err := decode(v)
		if err != nil {
			return nil, fmt.Errorf("cluster: office %q field %q: %w", officeID, f, err)
		}
		switch {
		case isAgentField(f) && !m.Lease:
			agents = append(agents, m)
		case isComputerField(f):
			computers = append(computers, m)
		}
	}
	slices.SortFunc(computers, func(a, b core.Member) int { return strings.Compare(a.Name, b.Name) })
	return append(agents, computers...), nil
}

// Computer implements core.Registry.
func (r *Registry) Computer(ctx context.Context, officeID, name string) (core.Member, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := r.rdb.HGet(ctx, officeKey(officeID), computerField(name)).Result()
	if errors.Is(err, redis.Nil) {
		return core.Member{}, false, nil
	}
	if err != nil {
		return core.Member{}, false, fmt.Errorf("cluster: computer %q of %q: %w", name, officeID, err)
	}
	m, err := decode(v)
	if err != nil {
		return core.Member{}, false, fmt.Errorf("cluster: computer %q of %q: %w", name, officeID, err)
	}
	return m, true, nil
}
