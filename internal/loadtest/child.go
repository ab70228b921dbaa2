package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
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

// StartRedisOn starts a redis-server without persistence on addr (a test
// restarting Redis empty where its clients expect it).
func StartRedisOn(ctx context.Context, addr *net.TCPAddr) (*Child, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("--compare cluster needs Redis: redis-server is not installed (install it, or pass --redis URL)")
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "--port", strconv.Itoa(addr.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
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
