package transports

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// countingConn counts the writes that reach the connection.
type countingConn struct {
	net.Conn
	mu        sync.Mutex
	writes    int
	deadlines int // SetWriteDeadline calls
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadlines++
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *countingConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// A corked CorkConn gathers writes and writes them at once, in order, when
// uncorked; uncorked it writes through; what would gather more than
// maxCorked is written through after what was gathered.
func TestCorkConn(t *testing.T) {
	a, b := net.Pipe()
	defer func() { _ = a.Close() }()
	counted := &countingConn{Conn: a}
	c := &CorkConn{Conn: counted}
	got := make(chan []byte, 16)
	go func() { // ends when a is closed
		buf := make([]byte, 2*maxCorked)
		for {
			n, err := b.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- bytes.Clone(buf[:n])
		}
	}()

	c.Cork()
	var want []byte
	for i := range 8 {
		frame := []byte("frame " + strconv.Itoa(i) + ";")
		want = append(want, frame...)
		if n, err := c.Write(frame); n != len(frame) || err != nil {
			t.Fatalf("corked write: %d, %v", n, err)
		}
	}
	if n := counted.count(); n != 0 {
		t.Fatalf("%d writes while corked", n)
	}
	if err := c.Uncork(); err != nil {
		t.Fatal(err)
	}
	if n := counted.count(); n != 1 {
		t.Fatalf("8 frames uncorked in %d writes, want 1", n)
	}
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("read %q, want %q", g, want)
	}

	if _, err := c.Write([]byte("through")); err != nil {
		t.Fatal(err)
	}
	if g := <-got; string(g) != "through" || counted.count() != 2 {
		t.Fatalf("uncorked write: %q, %d writes", g, counted.count())
	}

	c.Cork()
	_, _ = c.Write([]byte("small"))
	large := bytes.Repeat([]byte("x"), maxCorked)
	go func() { _, _ = c.Write(large) }() // net.Pipe: the write waits for the reads below
	if g := <-got; string(g) != "small" {
		t.Fatalf("gathered before a large frame: %q", g)
	}
	var read []byte
	for len(read) < len(large) {
		read = append(read, <-got...)
	}
	if !bytes.Equal(read, large) {
		t.Fatal("large frame not written through")
	}
	if err := c.Uncork(); err != nil {
		t.Fatal(err)
	}
}

// A write deadline equal to the one set is not set again: gorilla sets it
// before every frame, nearly always to no deadline.
func TestCorkConnWriteDeadline(t *testing.T) {
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	counted := &countingConn{Conn: a}
	c := &CorkConn{Conn: counted}
	for range 3 {
		if err := c.SetWriteDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	d := time.Now().Add(time.Hour)
	_ = c.SetWriteDeadline(d)
	_ = c.SetWriteDeadline(d)
	_ = c.SetWriteDeadline(time.Time{})
	if counted.deadlines != 3 {
		t.Fatalf("%d deadlines set on the connection, want 3 (none, the hour, none)", counted.deadlines)
	}
	// SetDeadline sets the write deadline too.
	_ = c.SetDeadline(d)
	_ = c.SetWriteDeadline(d)
	if counted.deadlines != 3 {
		t.Fatalf("write deadline set again after SetDeadline set it: %d", counted.deadlines)
	}
	_ = c.SetWriteDeadline(time.Time{})
	if counted.deadlines != 4 {
		t.Fatalf("%d deadlines set, want 4", counted.deadlines)
	}
}
