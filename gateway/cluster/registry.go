// Package cluster makes several gateway nodes one gateway over Redis: a
// Redis-backed core.Registry (office membership, join rules applied by Lua
// scripts, so two nodes racing for one slot get one winner), a per-node
// heartbeat, a reaper that removes the members of a node whose heartbeat
// lapsed, and the healing of the registry when Redis loses its data or
// stands still (see Node). Everything else that crosses nodes goes
// through Peers: calls to a computer of another node go to that node's own
// channel and come back on the caller's; notifications go to every node on
// one channel.
//
// Keys (prefix "smcp:"), laid out for a Redis Cluster as for one Redis:
// each office's hash is its own slot (hash tag: the office id), and the
// keys of the nodes and of the registry's state share one slot (hash tag
// "registry"), so that every script touches one slot:
//
//	smcp:office:{id}                   hash: "agent" → holder name, "as" →
//	                                   sid of the agent session, "a:{sid}" →
//	                                   agent holder (session or lease),
//	                                   "l:{sid}" → Redis time (ms) at which
//	                                   that lease lapses, "c:{name}" →
//	                                   computer
//	smcp:{registry}:node:N:alive       heartbeat, PX TTL, refreshed every
//	                                   TTL/3
//	smcp:{registry}:node:N:url         where other nodes reach the node's
//	                                   HTTP port (MCP sessions' owner), same
//	                                   TTL as alive
//	smcp:{registry}:node:N:members     set of the member records the node
//	                                   holds, or is claiming (see below)
//	smcp:{registry}:node:N:reaped      records other nodes reaped from it
//	                                   (for a while), told "back" if it was
//	                                   alive after all
//	smcp:{registry}:nodes              set of node ids (alive or not yet
//	                                   reaped)
//	smcp:{registry}:epoch              set once by the first node; missing:
//	                                   Redis lost its data
//	smcp:{registry}:settling           Redis time (ms) until which the
//	                                   registry is being rebuilt: claims
//	                                   wait, nobody is reaped
//
// An office's record and its node's members set are in two slots, written
// in two steps: a claim adds the record to the members set first (with the
// check of the registry's state), then takes the office's slot, and takes
// the record out of the set again when refused; a release frees the slot
// first. So the members set always holds every record of the node in an
// office (and at times one more, which a release or reap of it removes
// harmlessly), and a node that dies between the two steps leaves nothing
// the reaper does not find.
//
// Channels: smcp:node:{node}:calls, the calls to the node's computers and
// the answers to its agents' calls; smcp:notify, the notifications of every
// node (Peers).
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
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const prefix = "smcp:"

// registryPrefix starts the keys of the registry's one slot.
const registryPrefix = prefix + "{registry}:"

func officeKey(id string) string    { return prefix + "office:{" + id + "}" }
func aliveKey(node string) string   { return registryPrefix + "node:" + node + ":alive" }
func membersKey(node string) string { return registryPrefix + "node:" + node + ":members" }
func urlKey(node string) string     { return registryPrefix + "node:" + node + ":url" }
func nodesKey() string              { return registryPrefix + "nodes" }
func reapedKey(node string) string  { return registryPrefix + "node:" + node + ":reaped" }
func epochKey() string              { return registryPrefix + "epoch" }
func settlingKey() string           { return registryPrefix + "settling" }
func computerField(n string) string { return "c:" + n }
func isAgentField(f string) bool    { return strings.HasPrefix(f, "a:") }
func isComputerField(f string) bool { return strings.HasPrefix(f, "c:") }
func encode(m core.Member) string   { b, _ := json.Marshal(m); return string(b) }
func decode(s string) (core.Member, error) {
	var m core.Member
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

// luaSlots holds the join rules, shared by the scripts below. claim takes
// m's slot or returns {reason, holder record}; taking the record that holds
// the slot already is a success. release removes m's record only. Both
// touch the office's hash alone: the node's members set is kept by the
// caller (see the package comment).
const luaSlots = `
-- Redis's clock: every node's leases lapse by the same one.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function has_agents(k)
  for _, f in ipairs(redis.call('HKEYS', k)) do
    if string.sub(f, 1, 2) == 'a:' then return true end
  end
  return false
end

-- lapse removes the leases of office k whose "l:{sid}" time has passed. A
-- lapsed record stays in its node's members set until that node releases
-- it (or reaps it), which removes nothing else.
local function lapse(k)
  local now = nil
  for _, f in ipairs(redis.call('HKEYS', k)) do
    if string.sub(f, 1, 2) == 'l:' then
      now = now or now_ms()
      if tonumber(redis.call('HGET', k, f) or '0') <= now then
        redis.call('HDEL', k, f, 'a:' .. string.sub(f, 3))
      end
    end
  end
  if now and not has_agents(k) then redis.call('HDEL', k, 'agent') end
end

-- holder is the record a refusal of the agent slot names, and when it
-- lapses ('' for never): the agent session, else the lease that lapses
-- last.
local function holder(k)
  local as = redis.call('HGET', k, 'as')
  if as then return redis.call('HGET', k, 'a:' .. as) or '', '' end
  local best, best_at, best_sid = '', nil, nil
  for _, f in ipairs(redis.call('HKEYS', k)) do
    if string.sub(f, 1, 2) == 'a:' then
      local sid = string.sub(f, 3)
      local at = tonumber(redis.call('HGET', k, 'l:' .. sid) or '1e18')
      if not best_at or at > best_at or (at == best_at and sid < best_sid) then
        best, best_at, best_sid = redis.call('HGET', k, f), at, sid
      end
    end
  end
  if best_at and best_at < 1e18 then return best, string.format('%d', best_at) end
  return best, ''
end

-- seat_per_role: a record of profile 0.5 on holds the office's only
-- computer seat (smcp.Version.SeatPerRole, core.RoomFull).
local function seat_per_role(ver)
  local maj, min = string.match(ver, '^(%d+)%.(%d+)$')
  if not maj then return false end
  return tonumber(maj) > 0 or tonumber(min) >= 5
end

local function claim(k, role, name, sid, lease, rec)
  -- The office's version is its "v" field while a non-lease member holds a
  -- slot; a record's own is its "v" key (core.Member, as encoding/json
  -- writes it: in a value a quote is escaped, so the pattern is the key).
  local ver = string.match(rec, '"v":"([^"]*)"') or ''
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
    lapse(k)
    local lm = tonumber(string.match(rec, '"lm":(%d+)') or '0')
    if redis.call('HGET', k, 'a:' .. sid) == rec then
      -- Claimed already: a renewal, or a claim repeated when its answer
      -- was lost.
      if lm > 0 then redis.call('HSET', k, 'l:' .. sid, string.format('%d', now_ms() + lm)) end
      return nil
    end
    local cur = redis.call('HGET', k, 'agent')
    local as = redis.call('HGET', k, 'as')
    if (as and (lease == '0' or cur ~= name)) or (cur and cur ~= name) then
      local h, at = holder(k)
      return {'agent', h, at}
    end
    redis.call('HSET', k, 'agent', name, 'a:' .. sid, rec)
    if lm > 0 then redis.call('HSET', k, 'l:' .. sid, string.format('%d', now_ms() + lm)) end
    if lease == '0' then redis.call('HSET', k, 'as', sid) end
  else
    local cur = redis.call('HGET', k, 'c:' .. name)
    if cur and cur ~= rec then return {'computer', cur} end
    if not cur and seat_per_role(ver) then
      for _, f in ipairs(redis.call('HKEYS', k)) do
        if string.sub(f, 1, 2) == 'c:' then return {'computer', redis.call('HGET', k, f)} end
      end
    end
    redis.call('HSET', k, 'c:' .. name, rec)
  end
  if ver ~= '' then redis.call('HSET', k, 'v', ver) end
  return nil
end

-- settling: the key holds the Redis time (ms) until which the registry
-- settles. A deadline in the value, not a key TTL, so that the test Redis
-- (miniredis, whose TTLs pass only when told) keeps the same clock.

local function settling_left(key)
  local left = tonumber(redis.call('GET', key) or '0') - now_ms()
  if left > 0 then return left end
  return 0
end

local function settle(key, ms)
  local till = now_ms() + ms
  if till > tonumber(redis.call('GET', key) or '0') then
    redis.call('SET', key, till, 'PX', ms)
  end
end

local function release(k, role, name, sid, rec)
  local removed = 0
  if role == 'agent' then
    if redis.call('HGET', k, 'a:' .. sid) == rec then
      redis.call('HDEL', k, 'a:' .. sid, 'l:' .. sid)
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
  return removed
end
`

// admitScript opens a claim in the registry's slot. KEYS epoch, settling,
// the node's members; ARGV record, guarded ("1": a node's registry, which
// waits while the registry recovers). Returns {""} once the record is in
// the members set, {"reset"} (the registry lost its data: no epoch) or
// {"settling", ms left}.
var admitScript = redis.NewScript(luaSlots + `
if ARGV[2] == '1' then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {'reset'} end
  local left = settling_left(KEYS[2])
  if left > 0 then return {'settling', tostring(left)} end
end
redis.call('SADD', KEYS[3], ARGV[1])
return {''}
`)

// claimScript: KEYS office; ARGV role, name, sid, lease ("1"/"0"), record.
// Returns {""} or {refusal reason, holder record[, lapses at]}.
var claimScript = redis.NewScript(luaSlots + `
local r = claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
if r then return r end
return {''}
`)

// releaseScript: KEYS office; ARGV role, name, sid, lease, record. Returns
// 1 when the record was removed.
var releaseScript = redis.NewScript(luaSlots + `
return release(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[5])
`)

// evictScript frees an office's agent seat. KEYS office. Returns the
// records removed (their nodes' members sets are the caller's).
var evictScript = redis.NewScript(luaSlots + `
local k = KEYS[1]
lapse(k)
local out = {}
for _, f in ipairs(redis.call('HKEYS', k)) do
  if string.sub(f, 1, 2) == 'a:' then
    out[#out+1] = redis.call('HGET', k, f)
    redis.call('HDEL', k, f, 'l:' .. string.sub(f, 3))
  end
end
redis.call('HDEL', k, 'agent', 'as')
local held = false
for _, f in ipairs(redis.call('HKEYS', k)) do
  if string.sub(f, 1, 2) == 'c:' then held = true break end
end
if not held then redis.call('HDEL', k, 'v') end
return out
`)

// stateScript: KEYS epoch, settling. Returns {epoch exists (1/0), ms left
// settling}.
var stateScript = redis.NewScript(luaSlots + `
return {redis.call('EXISTS', KEYS[1]), settling_left(KEYS[2])}
`)

// reapableScript tells whether a node presumed dead is to be reaped now:
// not when it beats again, the registry is settling, or the reaping
// node's own heartbeat lapsed (then Redis, not the other node, may have
// been the one that stopped). KEYS its node's heartbeat, settling, the
// reaper's heartbeat. Returns 1 (reap) or -1 (not now).
var reapableScript = redis.NewScript(luaSlots + `
if redis.call('EXISTS', KEYS[1]) == 1 or settling_left(KEYS[2]) > 0 or redis.call('EXISTS', KEYS[3]) == 0 then
  return -1
end
return 1
`)

// reapedScript closes the reap of one record, whose office slot was freed
// (ARGV[2] "1") or found not held by it ("0"). If its node beats again or
// the registry settles meanwhile, the node may have given the record back
// between the check and the release: -1, nothing done (the reaper claims
// it again). Else the record leaves the node's members, and a record freed
// is remembered, so that its node, if alive after all, tells the office it
// is back: 1. KEYS its node's heartbeat, settling, its node's members, its
// node's reaped set; ARGV record, freed, ms to remember.
var reapedScript = redis.NewScript(luaSlots + `
if redis.call('EXISTS', KEYS[1]) == 1 or settling_left(KEYS[2]) > 0 then
  return -1
end
redis.call('SREM', KEYS[3], ARGV[1])
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[4], ARGV[1])
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
end
return 1
`)

// reassertScript opens the giving back of a node's members: the registry
// settles (ARGV[1] ms, 0: left alone) and every record (ARGV[2...]) is in
// the members set before its office is claimed. KEYS settling, node
// members.
var reassertScript = redis.NewScript(luaSlots + `
if tonumber(ARGV[1]) > 0 then settle(KEYS[1], tonumber(ARGV[1])) end
for i = 2, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
return 0
`)

// reassertedScript closes it: ARGV pairs of a record and "1" (its office
// slot taken back) or "0" (held by another). KEYS node members, node's
// reaped set. Returns, per record, "held", "back" (it had been reaped) or
// "lost" (and it leaves the members set).
var reassertedScript = redis.NewScript(`
local out = {}
for i = 1, #ARGV, 2 do
  if ARGV[i+1] == '0' then
    redis.call('SREM', KEYS[1], ARGV[i])
    out[#out+1] = 'lost'
  elseif redis.call('SREM', KEYS[2], ARGV[i]) == 1 then
    out[#out+1] = 'back'
  else
    out[#out+1] = 'held'
  end
end
return out
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
	// node is the node this registry serves (NewNode sets it); nil: a bare
	// registry (the conformance suite), which neither waits for a
	// recovering registry nor reaps.
	node         *Node
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
	return &Registry{rdb: rdb, timeout: opts.Timeout, claimTimeout: opts.ClaimTimeout}
}

var _ core.Registry = (*Registry)(nil)

func args(m core.Member) []any {
	lease := "0"
	if m.Lease {
		lease = "1"
	}
	return []any{m.Role, m.Name, m.SID, lease, encode(m)}
}

// release frees m's slot, then takes m out of its node's members set.
func (r *Registry) release(ctx context.Context, m core.Member) (bool, error) {
	n, err := releaseScript.Run(ctx, r.rdb, []string{officeKey(m.OfficeID)}, args(m)...).Int()
	if err != nil {
		return false, err
	}
	if err := r.rdb.SRem(ctx, membersKey(m.Node), encode(m)).Err(); err != nil {
		return false, err
	}
	return n == 1, nil
}

// failed reports a failed Redis call to the node's health (one log line
// per outage), unless the caller gave up (parent ended): that is no
// failure of Redis. It returns err marked core.ErrRegistryUnavailable, so
// that the hub does not log it again per call.
func (r *Registry) failed(parent context.Context, what string, err error) error {
	if parent.Err() != nil {
		return err
	}
	if r.node != nil {
		r.node.health.Failed(what, err)
	}
	return fmt.Errorf("%w: %w", core.ErrRegistryUnavailable, err)
}

// errRecovering refuses a join that could not be decided while the
// registry was being rebuilt after Redis lost its data or paused.
func errRecovering(m core.Member) error {
	return smcp.Errorf(smcp.CodeInternal, "cluster registry recovering after a Redis outage: join of office %q not decided, try again", m.OfficeID)
}

// Claim implements core.Registry. A slot held by a member of another node
// is not refused at once: when that node has just died, its sessions are
// still registered until its heartbeat lapses, and a computer or agent that
// reconnected to a survivor (a Python SDK client does not retry a refused
// re-join) would be shut out. The claim watches that node's heartbeat (see
// waitLapse), reaps the node if it lapsed, and tries again; a live holder
// is refused after half a TTL.
//
// While the registry recovers (Redis lost its data, or paused long enough
// for heartbeats to lapse: see Node) the claim waits until every live node
// has had the time to give its members back: a slot that looks free then
// may be held on a node that has not yet said so.
//
// The whole claim, waiting included, is bounded by the ClaimTimeout.
func (r *Registry) Claim(ctx context.Context, m core.Member) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.claimTimeout)
	defer cancel()
	for {
		var gen uint64
		if r.node != nil {
			gen = r.node.recoveries.Load()
		}
		reason, holder, lapses, wait, err := r.claim(ctx, m)
		if err != nil {
			return r.failed(parent, "claim", err)
		}
		switch reason {
		case "":
			if r.node != nil && r.node.recoveries.Load() != gen {
				// A recovery began while the claim was in flight: it
				// may have been granted by the registry as it was before,
				// and the recovery did not give it back (it was not held
				// yet). Claim again in the registry as it is now: taking
				// the slot m holds already is a success.
				continue
			}
			return nil
		case "reset":
			if err := r.node.recover(ctx, ""); err != nil {
				return r.failed(parent, "recover", fmt.Errorf("cluster: claim %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err))
			}
			continue
		case "settling":
			if !sleep(ctx, wait) {
				return errRecovering(m)
			}
			continue
		case "version":
			return core.VersionRefusal(m, holder.Version)
		}
		if r.node != nil && holder.Node != "" && holder.Node != m.Node {
			lapsed, err := r.waitLapse(ctx, holder.Node)
			if err != nil {
				return r.failed(parent, "claim", err)
			}
			if lapsed {
				done, err := r.node.reapNode(ctx, holder.Node)
				if err != nil {
					return r.failed(parent, "reap", fmt.Errorf("cluster: reap node %s: %w", holder.Node, err))
				}
				if !done {
					// Not to be reaped now: the registry settles, or this
					// node's own heartbeat lapsed (Redis, not the other node,
					// stopped). The next claim waits for the settling.
					if err := r.node.recover(ctx, ""); err != nil {
						return r.failed(parent, "recover", fmt.Errorf("cluster: claim %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err))
					}
				}
				if ctx.Err() != nil {
					return errRecovering(m)
				}
				continue
			}
		}
		if m.SeatPerRole() {
			return core.RoomFull(m.OfficeID, m.Role)
		}
		if reason == "agent" {
			return core.SeatRefusal(m.OfficeID, holder, lapses)
		}
		return smcp.Errorf(smcp.CodeForbidden, "a computer named %q is already in office %q", m.Name, m.OfficeID)
	}
}

// claim runs the claim script once: the refusal reason ("" when m got its
// slot; "reset" or "settling", with the time to wait, while the registry
// recovers) and the holder that refused it, if known, with when its lease
// lapses (zero: never).
func (r *Registry) claim(ctx context.Context, m core.Member) (string, core.Member, time.Time, time.Duration, error) {
	guarded := "0"
	if r.node != nil {
		guarded = "1"
	}
	// The registry's state is read, and the record put in the members
	// set, one round trip before the office's slot is taken (two slots):
	// a Redis that loses its data within that round trip may grant the
	// claim in the emptied registry before it settles. The seat still has
	// one holder: the node that held it finds it lost when it gives its
	// members back, and evicts its own.
	rec := encode(m)
	res, err := admitScript.Run(ctx, r.rdb, []string{epochKey(), settlingKey(), membersKey(m.Node)}, rec, guarded).Result()
	if err == nil {
		if out, _ := res.([]any); len(out) > 0 && out[0] == "" {
			res, err = claimScript.Run(ctx, r.rdb, []string{officeKey(m.OfficeID)}, args(m)...).Result()
			if out, _ := res.([]any); err == nil && (len(out) == 0 || out[0] != "") {
				// Refused: m holds no slot, its record leaves the set.
				err = r.rdb.SRem(ctx, membersKey(m.Node), rec).Err()
			}
		}
	}
	if err != nil {
		return "", core.Member{}, time.Time{}, 0, fmt.Errorf("cluster: claim %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err)
	}
	out, _ := res.([]any)
	if len(out) == 0 {
		return "", core.Member{}, time.Time{}, 0, fmt.Errorf("cluster: claim: unexpected reply %v", res)
	}
	reason, _ := out[0].(string)
	var holder core.Member
	var wait time.Duration
	var lapses time.Time
	if len(out) > 1 {
		if rec, _ := out[1].(string); reason == "version" {
			holder.Version = rec
		} else if reason == "settling" {
			ms, _ := strconv.Atoi(rec)
			wait = max(time.Duration(ms)*time.Millisecond, 10*time.Millisecond)
		} else if rec != "" {
			holder, _ = decode(rec) // unreadable: refused without waiting
		}
	}
	if len(out) > 2 {
		if at, _ := out[2].(string); at != "" {
			if ms, err := strconv.ParseInt(at, 10, 64); err == nil {
				lapses = time.UnixMilli(ms)
			}
		}
	}
	return reason, holder, lapses, wait, nil
}

// EvictAgent implements core.Registry.
func (r *Registry) EvictAgent(ctx context.Context, officeID string) ([]core.Member, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	recs, err := evictScript.Run(ctx, r.rdb, []string{officeKey(officeID)}).StringSlice()
	if err != nil {
		return nil, r.failed(parent, "evict", fmt.Errorf("cluster: evict the agent of %q: %w", officeID, err))
	}
	out := make([]core.Member, 0, len(recs))
	for _, rec := range recs {
		m, err := decode(rec)
		if err != nil {
			return out, fmt.Errorf("cluster: evict the agent of %q: record %q: %w", officeID, rec, err)
		}
		out = append(out, m)
	}
	if len(out) > 0 {
		// The members sets share the registry's slot: one round trip.
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, m := range out {
				p.SRem(ctx, membersKey(m.Node), recs[i])
			}
			return nil
		})
		if err != nil {
			return nil, r.failed(parent, "evict", fmt.Errorf("cluster: evict the agent of %q: members of its nodes: %w", officeID, err))
		}
	}
	slices.SortFunc(out, func(a, b core.Member) int { return strings.Compare(a.SID, b.SID) })
	return out, nil
}

// settled waits until the registry is not recovering, recovering this
// node first when Redis lost its data. waited reports whether it was.
func (r *Registry) settled(ctx context.Context) (waited bool, err error) {
	if r.node == nil {
		return false, nil
	}
	for {
		st, err := stateScript.Run(ctx, r.rdb, []string{epochKey(), settlingKey()}).Int64Slice()
		if err != nil || len(st) != 2 {
			return waited, fmt.Errorf("cluster: registry state: %v, %w", st, err)
		}
		switch {
		case st[0] == 0:
			if err := r.node.recover(ctx, ""); err != nil {
				return waited, err
			}
		case st[1] > 0:
			if !sleep(ctx, time.Duration(st[1])*time.Millisecond) {
				return waited, fmt.Errorf("cluster: registry still recovering: %w", ctx.Err())
			}
		default:
			return waited, nil
		}
		waited = true
	}
}

// waitLapse finds out whether node is dead: alive nodes beat every TTL/3,
// so a node whose heartbeat does not change for half a TTL has missed a
// beat; its key is then left to expire. A live holder is known in half a
// TTL; a dead one in at most a TTL. When ctx ends first, node counts as
// alive (the claim is refused).
func (r *Registry) waitLapse(ctx context.Context, node string) (bool, error) {
	ttl := r.node.ttl
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
	if !sleep(ctx, ttl/2) {
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

// Release implements core.Registry. It is never held back by a
// recovering registry: giving a slot back cannot break a rule.
func (r *Registry) Release(ctx context.Context, m core.Member) (bool, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	removed, err := r.release(ctx, m)
	if err != nil {
		return false, r.failed(parent, "release", fmt.Errorf("cluster: release %s %q in %q: %w", m.Role, m.Name, m.OfficeID, err))
	}
	return removed, nil
}

// Members implements core.Registry: the agent session first, then the
// computers by name. While the registry recovers it waits (within its
// bound) until the nodes have given their members back.
func (r *Registry) Members(ctx context.Context, officeID string) ([]core.Member, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ms, err := r.members(ctx, officeID)
	if err == nil && r.node != nil {
		var waited bool
		if waited, err = r.settled(ctx); waited && err == nil {
			ms, err = r.members(ctx, officeID)
		}
	}
	if err != nil {
		return nil, r.failed(parent, "members", err)
	}
	return ms, nil
}

func (r *Registry) members(ctx context.Context, officeID string) ([]core.Member, error) {
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

// Computer implements core.Registry. A computer not found while the
// registry recovers is looked for again once it has (within the bound): its
// node may not have given it back yet.
func (r *Registry) Computer(ctx context.Context, officeID, name string) (core.Member, bool, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	m, ok, err := r.computer(ctx, officeID, name)
	if err == nil && !ok && r.node != nil {
		var waited bool
		if waited, err = r.settled(ctx); waited && err == nil {
			m, ok, err = r.computer(ctx, officeID, name)
		}
	}
	if err != nil {
		return core.Member{}, false, r.failed(parent, "computer lookup", err)
	}
	return m, ok, nil
}

func (r *Registry) computer(ctx context.Context, officeID, name string) (core.Member, bool, error) {
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
