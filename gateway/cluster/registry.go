// Package cluster makes several gateway nodes one gateway over Redis: a
// Redis-backed core.Registry (office membership, join rules applied by Lua
// scripts, so two nodes racing for one slot get one winner), a per-node
// heartbeat, and a reaper that removes the members of a node whose
// heartbeat lapsed. Cross-node emits and acks go through the socket.io Redis
// adapter (gateway/sio); this package holds the shared state.
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
// ("1"/"0"), record, node. Returns {"" or the refusal reason, replaced
// record or ""}. A computer name held by a node whose heartbeat has lapsed
// is taken over (the computer reconnected to another node before the
// reaper ran); the old record is returned so its office can be told.
var claimScript = redis.NewScript(`
local k, idx = KEYS[1], KEYS[2]
local role, name, sid, lease, rec, node = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local replaced = ''
if role == 'agent' then
  local cur = redis.call('HGET', k, 'agent')
  if cur and cur ~= name then return {'agent', ''} end
  if lease == '0' and redis.call('HEXISTS', k, 'as') == 1 then return {'agent', ''} end
  redis.call('HSET', k, 'agent', name, 'a:' .. sid, rec)
  if lease == '0' then redis.call('HSET', k, 'as', sid) end
else
  local f = 'c:' .. name
  local old = redis.call('HGET', k, f)
  if old then
    local oldNode = redis.call('HGET', k, 'cn:' .. name)
    if not oldNode or redis.call('EXISTS', '` + prefix + `node:{' .. oldNode .. '}:alive') == 1 then
      return {'computer', ''}
    end
    redis.call('SREM', '` + prefix + `node:{' .. oldNode .. '}:members', old)
    replaced = old
  end
  redis.call('HSET', k, f, rec, 'cn:' .. name, node)
end
redis.call('SADD', idx, rec)
return {'', replaced}
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
    redis.call('HDEL', k, 'c:' .. name, 'cn:' .. name)
    removed = 1
  end
end
redis.call('SREM', idx, rec)
return removed
`)

// Registry is a core.Registry in Redis.
type Registry struct {
	rdb redis.UniversalClient
}

// NewRegistry uses rdb for the registry.
func NewRegistry(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb} }

var _ core.Registry = (*Registry)(nil)

func (r *Registry) run(ctx context.Context, s *redis.Script, m core.Member) (any, error) {
	lease := "0"
	if m.Lease {
		lease = "1"
	}
	return s.Run(ctx, r.rdb, []string{officeKey(m.OfficeID), membersKey(m.Node)},
		m.Role, m.Name, m.SID, lease, encode(m), m.Node).Result()
}

// Claim implements core.Registry.
func (r *Registry) Claim(ctx context.Context, m core.Member) (*core.Member, error) {
	res, err := r.run(ctx, claimScript, m)
	if err != nil {
		return nil, fmt.Errorf("cluster: claim %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
	}
	out, _ := res.([]any)
	if len(out) != 2 {
		return nil, fmt.Errorf("cluster: claim: unexpected reply %v", res)
	}
	switch out[0] {
	case "agent":
		return nil, smcp.Errorf(smcp.CodeForbidden, "office %q already has an agent", m.OfficeID)
	case "computer":
		return nil, smcp.Errorf(smcp.CodeForbidden, "a computer named %q is already in office %q", m.Name, m.OfficeID)
	}
	if old, _ := out[1].(string); old != "" {
		replaced, err := decode(old)
		if err != nil {
			return nil, fmt.Errorf("cluster: claim: replaced record: %w", err)
		}
		return &replaced, nil
	}
	return nil, nil
}

// Release implements core.Registry.
func (r *Registry) Release(ctx context.Context, m core.Member) (bool, error) {
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
