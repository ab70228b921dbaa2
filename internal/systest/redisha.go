package systest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// SentinelMaster is the master name the sentinels of RedisSentinel watch.
const SentinelMaster = "smcp"

// SentinelDownAfter is how long the sentinels of RedisSentinel wait for a
// silent primary before they agree it is down and fail over.
const SentinelDownAfter = time.Second

// Sentinel is a Redis primary, its replica and three sentinels (quorum 2),
// all on loopback, as production runs Redis with Sentinel.
type Sentinel struct {
	// URL is the failover URL of the sentinels (go-redis's form, the one
	// --redis takes).
	URL string
	// sentinels are the sentinels' addresses.
	sentinels []string
	mu        sync.Mutex
	servers   map[string]*loadtest.Child // redis-servers by address
	dir       string                     // their working folder
}

// RedisSentinel starts a primary, a replica of it and three sentinels
// watching it, and returns once the sentinels know the replica (a failover
// can promote it). Everything stops after whatever the test registers later.
// Without redis-sentinel the test is skipped (see internal/testdeps).
func RedisSentinel(t testing.TB) *Sentinel {
	t.Helper()
	testdeps.Program(t, "redis-server", "redis-server")
	bin := testdeps.Program(t, "redis-sentinel", "redis-sentinel")
	s := &Sentinel{servers: map[string]*loadtest.Child{}, dir: t.TempDir()}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.servers {
			c.Stop()
		}
	})
	primary := freeAddr(t)
	s.startServer(t, primary, "")
	s.startServer(t, freeAddr(t), primary)
	for i := range 3 {
		addr := freeAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		// A sentinel rewrites its configuration file: one each.
		conf := filepath.Join(s.dir, fmt.Sprintf("sentinel%d.conf", i))
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\n", port) +
			fmt.Sprintf("sentinel monitor %s %s 2\n", SentinelMaster, hostPort(primary)) +
			fmt.Sprintf("sentinel down-after-milliseconds %s %d\n", SentinelMaster, SentinelDownAfter.Milliseconds()) +
			fmt.Sprintf("sentinel failover-timeout %s 10000\n", SentinelMaster)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ch, err := loadtest.StartChild(exec.Command(bin, conf, "--loglevel", "warning"))
		if err != nil {
			t.Fatalf("start redis-sentinel: %v", err)
		}
		t.Cleanup(ch.Stop)
		s.sentinels = append(s.sentinels, addr)
	}
	s.URL = "redis://" + s.sentinels[0] + "?master_name=" + SentinelMaster + "&addr=" + s.sentinels[1] + "&addr=" + s.sentinels[2]
	s.waitReplica(t)
	return s
}

// hostPort is a "host:port" address as sentinel.conf takes it: "host port".
func hostPort(addr string) string {
	h, p, _ := net.SplitHostPort(addr)
	return h + " " + p
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// startServer starts a redis-server without persistence on addr, a
// replica of replicaOf unless that is empty.
func (s *Sentinel) startServer(t testing.TB, addr, replicaOf string) {
	t.Helper()
	var args []string
	if replicaOf != "" {
		h, p, _ := net.SplitHostPort(replicaOf)
		args = append(args, "--replicaof", h, p)
	}
	ch := startRedisIn(t, s.dir, addr, args...)
	s.mu.Lock()
	s.servers[addr] = ch
	s.mu.Unlock()
}

// startRedisIn starts a redis-server without persistence on addr, in the
// folder dir (a replica's sync writes dump.rdb there, a cluster node its
// nodes.conf, which a redis-server started later in the same folder would
// load), with the extra arguments given. The caller stops it.
func startRedisIn(t testing.TB, dir, addr string, extra ...string) *loadtest.Child {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning",
		"--dir", dir}, extra...)
	// The port may be held a moment by a client's dial (a TCP
	// self-connect while nothing listens): retried.
	var ch *loadtest.Child
	testwait.Within(t, 20*time.Second, "redis-server listening on "+addr, func() bool {
		if ch == nil {
			c, err := loadtest.StartChild(exec.Command("redis-server", args...))
			if err != nil {
				t.Fatalf("start redis-server: %v", err)
			}
			ch = c
		}
		select {
		case <-ch.Done():
			ch = nil
			return false
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	})
	return ch
}

// RedisClusterNode starts a redis-server with Redis Cluster on (a node of
// no cluster yet, holding no slot) and returns its URL.
func RedisClusterNode(t testing.TB) string {
	t.Helper()
	testdeps.Program(t, "redis-server", "redis-server")
	addr := freeAddr(t)
	ch := startRedisIn(t, t.TempDir(), addr, "--cluster-enabled", "yes")
	t.Cleanup(ch.Stop)
	return "redis://" + addr
}

// sentinel is a client of the i-th sentinel.
func (s *Sentinel) sentinel(t testing.TB, i int) *redis.SentinelClient {
	t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: s.sentinels[i]})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Primary is the address of the primary as the sentinels name it now.
func (s *Sentinel) Primary(t testing.TB) string {
	t.Helper()
	return s.primaryOf(t, s.sentinel(t, 0))
}

func (s *Sentinel) primaryOf(t testing.TB, sc *redis.SentinelClient) string {
	t.Helper()
	addr, err := primaryOf(sc)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func primaryOf(sc *redis.SentinelClient) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil || len(addr) != 2 {
		return "", fmt.Errorf("sentinel: primary of %s: %v %v", SentinelMaster, addr, err)
	}
	return net.JoinHostPort(addr[0], addr[1]), nil
}

// waitReplica waits until every sentinel knows a replica in sync with the
// primary (one a failover can promote).
func (s *Sentinel) waitReplica(t testing.TB) {
	t.Helper()
	for i := range s.sentinels {
		sc := s.sentinel(t, i)
		testwait.Within(t, time.Minute, "a replica in sync, known to sentinel "+strconv.Itoa(i), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			replicas, err := sc.Replicas(ctx, SentinelMaster).Result()
			if err != nil {
				return false
			}
			for _, r := range replicas {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" {
					return true
				}
			}
			return false
		})
	}
}

// Failover kills the primary (SIGKILL: what it had not sent its replica is
// lost), waits until the sentinels have promoted the replica, and starts
// the former primary again, empty: the sentinels make it the new replica.
// It returns once that replica is in sync (so that Failover may be called
// again): when the primary was killed, and how long after that the
// sentinels named the new one.
func (s *Sentinel) Failover(t testing.TB) (killed time.Time, promoted time.Duration) {
	t.Helper()
	old := s.Primary(t)
	s.mu.Lock()
	ch := s.servers[old]
	delete(s.servers, old)
	s.mu.Unlock()
	if ch == nil {
		t.Fatalf("sentinel names %s the primary, which this test did not start", old)
	}
	killed = time.Now()
	if err := syscall.Kill(ch.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the primary: %v", err)
	}
	<-ch.Done()
	sc := s.sentinel(t, 0)
	testwait.Within(t, time.Minute, "the sentinels promoting the replica", func() bool {
		if addr, err := primaryOf(sc); err != nil || addr == old {
			return false
		}
		promoted = time.Since(killed)
		return true
	})
	s.startServer(t, old, "")
	s.waitReplica(t)
	return killed, promoted
}

// Switchover asks the sentinels to make the replica the primary (SENTINEL
// FAILOVER, as an operator does before maintenance): the former primary
// stays up and becomes a replica. It returns once the new replica is in
// sync, with when it was asked and how long after that the sentinels named
// the new primary.
func (s *Sentinel) Switchover(t testing.TB) (asked time.Time, promoted time.Duration) {
	t.Helper()
	old := s.Primary(t)
	sc := s.sentinel(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asked = time.Now()
	if err := sc.Failover(ctx, SentinelMaster).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	testwait.Within(t, time.Minute, "the sentinels switching to the replica", func() bool {
		if addr, err := primaryOf(sc); err != nil || addr == old {
			return false
		}
		promoted = time.Since(asked)
		return true
	})
	s.waitReplica(t)
	return asked, promoted
}

// RedisCluster starts a Redis Cluster of three primaries (no replicas) on
// loopback, its slots spread by redis-cli --cluster create, and returns its
// URL in go-redis's cluster form (redis://SEED1?addr=SEED2&addr=SEED3,
// redis.ParseClusterURL, what --redis takes with --redis-cluster) once
// every node reports the cluster ok.
func RedisCluster(t testing.TB) string {
	t.Helper()
	return startRedisCluster(t, 0).URL
}

// ReplicatedCluster is a Redis Cluster of three primaries, each with a
// replica, on loopback.
type ReplicatedCluster struct {
	// URL is the cluster's seeds in go-redis's cluster form.
	URL     string
	mu      sync.Mutex
	servers map[string]*clusterServer // by address
}

type clusterServer struct {
	ch  *loadtest.Child
	dir string // its folder, with its nodes.conf
}

// RedisClusterReplicated starts a Redis Cluster of three primaries, each
// with a replica, and returns once every replica is in sync (a primary's
// failure can be survived).
func RedisClusterReplicated(t testing.TB) *ReplicatedCluster {
	t.Helper()
	return startRedisCluster(t, 1)
}

// clusterNodeArgs are the arguments of every node of a test Redis Cluster:
// a node missing for two seconds is failed over.
var clusterNodeArgs = []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "2000"}

func startRedisCluster(t testing.TB, replicas int) *ReplicatedCluster {
	testdeps.Program(t, "redis-server", "redis-server")
	cli := testdeps.Program(t, "redis-cli", "redis-tools")
	c := &ReplicatedCluster{servers: map[string]*clusterServer{}}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.servers {
			s.ch.Stop()
		}
	})
	addrs := make([]string, 3*(1+replicas))
	for i := range addrs {
		addrs[i] = freeAddr(t)
		// Each its own folder: a node writes its nodes.conf there.
		c.start(t, addrs[i], t.TempDir())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	for _, a := range addrs {
		waitClusterOK(t, a)
	}
	if replicas > 0 {
		for _, a := range addrs {
			waitInSync(t, a)
		}
	}
	c.URL = "redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	return c
}

func (c *ReplicatedCluster) start(t testing.TB, addr, dir string) {
	ch := startRedisIn(t, dir, addr, clusterNodeArgs...)
	c.mu.Lock()
	c.servers[addr] = &clusterServer{ch: ch, dir: dir}
	c.mu.Unlock()
}

func waitClusterOK(t testing.TB, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	testwait.Within(t, time.Minute, "cluster_state:ok on "+addr, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := c.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
}

// waitInSync waits until the node at addr, if a replica, is in sync with
// its primary.
func waitInSync(t testing.TB, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	testwait.Within(t, time.Minute, "replica "+addr+" in sync", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up"))
	})
}

// primaryOfSlot is the address of the primary serving slot, as the node at
// via sees it.
func primaryOfSlot(ctx context.Context, via string, slot int) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: via})
	defer func() { _ = c.Close() }()
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr, nil
		}
	}
	return "", fmt.Errorf("no node serves slot %d", slot)
}

// Failover kills (SIGKILL: what it had not sent its replica is lost) the
// primary of key's slot, waits until the cluster has promoted its replica
// and is ok again, and starts the former primary again (empty, with its
// nodes.conf): it becomes the new primary's replica. It returns once that
// replica is in sync (Failover may be called again): when the primary was
// killed, and how long after that every other node served the slot from
// the replica.
func (c *ReplicatedCluster) Failover(t testing.TB, key string) (killed time.Time, promoted time.Duration) {
	t.Helper()
	c.mu.Lock()
	var via string
	for a := range c.servers {
		via = a
		break
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vc := redis.NewClient(&redis.Options{Addr: via})
	slot, err := vc.ClusterKeySlot(ctx, key).Result()
	_ = vc.Close()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	old, err := primaryOfSlot(ctx, via, int(slot))
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	s := c.servers[old]
	delete(c.servers, old)
	others := make([]string, 0, len(c.servers))
	for a := range c.servers {
		others = append(others, a)
	}
	c.mu.Unlock()
	if s == nil {
		t.Fatalf("%s serves slot %d, a node this test did not start", old, slot)
	}
	killed = time.Now()
	if err := syscall.Kill(s.ch.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the primary: %v", err)
	}
	<-s.ch.Done()
	for _, a := range others {
		testwait.Within(t, time.Minute, a+" serving slot "+strconv.Itoa(int(slot))+" from the promoted replica", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := primaryOfSlot(ctx, a, int(slot))
			return err == nil && p != old
		})
		waitClusterOK(t, a)
	}
	promoted = time.Since(killed)
	c.start(t, old, s.dir)
	waitClusterOK(t, old)
	testwait.Within(t, time.Minute, "the former primary "+old+" a replica in sync", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		vc := redis.NewClient(&redis.Options{Addr: old})
		defer func() { _ = vc.Close() }()
		info, err := vc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
	return killed, promoted
}

// Switchover asks the replica of key's slot's primary to take over (CLUSTER
// FAILOVER, as an operator does before maintenance): the former primary
// stays up and becomes its replica. It returns once every node serves the
// slot from the new primary: when it was asked, and how long that took.
func (c *ReplicatedCluster) Switchover(t testing.TB, key string) (asked time.Time, promoted time.Duration) {
	t.Helper()
	c.mu.Lock()
	var all []string
	for a := range c.servers {
		all = append(all, a)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vc := redis.NewClient(&redis.Options{Addr: all[0]})
	defer func() { _ = vc.Close() }()
	slot, err := vc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	slots, err := vc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var old, replica string
	for _, s := range slots {
		if s.Start <= int(slot) && int(slot) <= s.End && len(s.Nodes) > 1 {
			old, replica = s.Nodes[0].Addr, s.Nodes[1].Addr
		}
	}
	if replica == "" {
		t.Fatalf("slot %d has no replica", slot)
	}
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer func() { _ = rc.Close() }()
	asked = time.Now()
	if err := rc.ClusterFailover(ctx).Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
	}
	for _, a := range all {
		testwait.Within(t, time.Minute, a+" serving slot "+strconv.Itoa(int(slot))+" from "+replica, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := primaryOfSlot(ctx, a, int(slot))
			return err == nil && p != old
		})
	}
	promoted = time.Since(asked)
	waitInSync(t, old)
	return asked, promoted
}
