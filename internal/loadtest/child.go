package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Child is a process the bench (or a test) started and stops.
type Child struct {
	cmd *exec.Cmd
	// URL is where the child serves, when it does.
	URL  string
	PID  int
	done chan struct{} // closed when the process has exited
}

// StartChild starts cmd as a child that must not outlive an interrupted
// bench.
func StartChild(cmd *exec.Cmd) (*Child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &Child{cmd: cmd, PID: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	return ch, nil
}

// Done is closed once the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Stop ends the child with SIGTERM (SIGKILL after 15 s) and waits for it.
func (c *Child) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// StartRedis starts a redis-server without persistence on a free loopback
// port, for the cluster rows.
func StartRedis(ctx context.Context) (*Child, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	return StartRedisOn(ctx, addr)
}

// RedisCluster is a Redis Cluster of primaries on loopback (no replicas).
type RedisCluster struct {
	// URL names its seeds in go-redis's cluster form (--redis with
	// --redis-cluster).
	URL   string
	Nodes []*Child
	dirs  []string
}

// Stop stops every node and removes their folders.
func (r *RedisCluster) Stop() {
	for _, n := range r.Nodes {
		n.Stop()
	}
	for _, d := range r.dirs {
		_ = os.RemoveAll(d)
	}
}

// StartRedisCluster starts n redis-servers with Redis Cluster on, spreads
// the slots over them (redis-cli --cluster create) and returns once every
// node reports the cluster ok.
func StartRedisCluster(ctx context.Context, n int) (rc *RedisCluster, err error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, errors.New("--redis-shape cluster needs redis-cli (redis-tools)")
	}
	rc = &RedisCluster{}
	defer func() {
		if err != nil {
			rc.Stop()
		}
	}()
	var addrs []string
	for range n {
		// A node's cluster bus is its port + 10000: both must be free.
		addr, err := freeClusterAddr()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "bench-redis-cluster-")
		if err != nil {
			return nil, err
		}
		rc.dirs = append(rc.dirs, dir)
		ch, err := startRedis(ctx, addr, "--cluster-enabled", "yes", "--dir", dir)
		if err != nil {
			return nil, err
		}
		rc.Nodes = append(rc.Nodes, ch)
		addrs = append(addrs, addr.String())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	if out, err := exec.CommandContext(ctx, cli, append(args, "--cluster-yes")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, bytes.TrimSpace(out))
	}
	for _, a := range addrs {
		for {
			out, err := exec.CommandContext(ctx, cli, "-u", "redis://"+a, "cluster", "info").Output()
			if err == nil && bytes.Contains(out, []byte("cluster_state:ok")) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	rc.URL = "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		rc.URL += sep + "addr=" + a
	}
	return rc, nil
}

// freeClusterAddr is a free loopback address whose port + 10000 is free
// too.
func freeClusterAddr() (*net.TCPAddr, error) {
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := ln.Addr().(*net.TCPAddr)
		if addr.Port+10000 > 65535 {
			_ = ln.Close()
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", addr.Port+10000))
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return addr, nil
	}
	return nil, errors.New("no free port pair for a Redis Cluster node")
}

// StartRedisOn starts a redis-server without persistence on addr (a test
// restarting Redis empty where its clients expect it).
func StartRedisOn(ctx context.Context, addr *net.TCPAddr) (*Child, error) {
	return startRedis(ctx, addr)
}

func startRedis(ctx context.Context, addr *net.TCPAddr, extra ...string) (*Child, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("--compare cluster needs Redis: redis-server is not installed (install it, or pass --redis URL)")
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(addr.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning"}, extra...)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	ch, err := StartChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	ch.URL = "redis://" + addr.String() + "/0"
	// Ready once it accepts connections.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr.String(), time.Second)
		if err == nil {
			_ = conn.Close()
			return ch, nil
		}
		select {
		case <-ch.done:
			return nil, fmt.Errorf("redis-server on port %d exited: %s", addr.Port, bytes.TrimSpace(log.Bytes()))
		case <-ctx.Done():
			ch.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ch.Stop()
			return nil, fmt.Errorf("redis-server on port %d: not accepting connections after 10 s", addr.Port)
		}
	}
}
