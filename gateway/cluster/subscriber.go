package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriber reads the messages of one channel on a connection of its own,
// each payload as bytes of its own. It stands in for go-redis's PubSub on
// the node's inbox, where every cross-node call and answer arrives: PubSub
// turns each message into a reply of interface values (the kind, the
// channel and the payload each a string, boxed) and a Message, and checks
// for RESP3 push notifications before each read, about 0.8 µs and 9
// allocations a message (docs/BENCHMARKS.md). Here a message costs one
// allocation, its payload. The connection speaks RESP2 (no HELLO), where a
// subscribed connection receives only arrays of bulk strings and integers.
//
// The connection is dialled with the client's own dialer (its TLS and
// timeouts) and authenticated with its credentials; clients that
// authenticate otherwise (a streaming credentials provider) are not
// supported (NewCalls falls back to PubSub for them).
type subscriber struct {
	opts    *redis.Options
	channel string

	mu     sync.Mutex
	conn   net.Conn
	closed bool

	// Used by the reading goroutine only.
	rd      *bufio.Reader // of conn
	payload []byte        // of the last message read
}

// subscribeBuffer is the read buffer: a burst of frames is one read.
const subscribeBuffer = 32 << 10

// leanSubscribable tells whether subscriber supports opts.
func leanSubscribable(opts *redis.Options) bool {
	return opts.StreamingCredentialsProvider == nil && opts.OnConnect == nil && opts.Dialer != nil
}

// connect dials a new connection, authenticates it and subscribes, and
// returns once Redis confirmed the subscription.
func (s *subscriber) connect(ctx context.Context) error {
	if s.opts.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.DialTimeout)
		defer cancel()
	}
	conn, err := s.opts.Dialer(ctx, s.opts.Network, s.opts.Addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", s.opts.Addr, err)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	rd := bufio.NewReaderSize(conn, subscribeBuffer)
	if err := s.handshake(ctx, conn, rd); err != nil {
		_ = conn.Close()
		return err
	}
	_ = conn.SetDeadline(time.Time{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close()
		return net.ErrClosed
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.rd = conn, rd
	return nil
}

func (s *subscriber) handshake(ctx context.Context, conn net.Conn, rd *bufio.Reader) error {
	user, pass := s.opts.Username, s.opts.Password
	switch {
	case s.opts.CredentialsProviderContext != nil:
		var err error
		if user, pass, err = s.opts.CredentialsProviderContext(ctx); err != nil {
			return fmt.Errorf("credentials: %w", err)
		}
	case s.opts.CredentialsProvider != nil:
		user, pass = s.opts.CredentialsProvider()
	}
	var w []byte
	if pass != "" {
		if user != "" {
			w = appendCommand(w, "AUTH", user, pass)
		} else {
			w = appendCommand(w, "AUTH", pass)
		}
	}
	w = appendCommand(w, "SUBSCRIBE", s.channel)
	if _, err := conn.Write(w); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if pass != "" {
		line, err := readLine(rd)
		if err != nil {
			return fmt.Errorf("auth: %w", err)
		}
		if len(line) == 0 || line[0] != '+' {
			return fmt.Errorf("auth: %s", line)
		}
	}
	kind, err := s.read(rd)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if kind != kindSubscribe {
		return fmt.Errorf("subscribe: unexpected reply %d", kind)
	}
	return nil
}

// next returns the payload of the next message. An error ends the
// connection (connect makes a new one).
func (s *subscriber) next() ([]byte, error) {
	for {
		kind, err := s.read(s.rd)
		switch {
		case err != nil:
			return nil, err
		case kind == kindMessage:
			return s.payload, nil
		}
	}
}

// close ends the connection and every later one.
func (s *subscriber) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

const (
	kindOther = iota
	kindMessage
	kindSubscribe
)

// read reads one push of the subscribed connection: a message (its payload
// in s.payload), the subscription's confirmation, or another one (a pong,
// an unsubscribe), skipped.
func (s *subscriber) read(rd *bufio.Reader) (kind int, err error) {
	line, err := readLine(rd)
	if err != nil {
		return 0, err
	}
	if len(line) == 0 || line[0] != '*' {
		if len(line) > 0 && line[0] == '-' {
			return 0, fmt.Errorf("redis: %s", line[1:])
		}
		return 0, fmt.Errorf("unexpected reply %q", line)
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("unexpected array header %q", line)
	}
	kind = kindOther
	for i := range n {
		line, err := readLine(rd)
		if err != nil {
			return 0, err
		}
		if len(line) == 0 {
			return 0, errors.New("empty reply line")
		}
		if line[0] != '$' {
			continue // an integer (the subscription count) or a nil
		}
		size, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, fmt.Errorf("unexpected bulk header %q", line)
		}
		if size < 0 {
			continue // a nil bulk string
		}
		switch {
		case i == 0:
			b, err := rd.Peek(size)
			if err != nil {
				return 0, err
			}
			switch {
			case bytes.Equal(b, []byte("message")):
				kind = kindMessage
			case bytes.Equal(b, []byte("subscribe")):
				kind = kindSubscribe
			}
			_, err = rd.Discard(size + 2)
			if err != nil {
				return 0, err
			}
		case i == 2 && kind == kindMessage:
			p := make([]byte, size+2)
			if _, err := io.ReadFull(rd, p); err != nil {
				return 0, err
			}
			if p[size] != '\r' || p[size+1] != '\n' {
				return 0, errors.New("message not ended by CRLF")
			}
			s.payload = p[:size:size]
		default:
			if _, err := rd.Discard(size + 2); err != nil {
				return 0, err
			}
		}
	}
	return kind, nil
}

// readLine reads a line of the protocol, its "\r\n" cut off.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed line %q", line)
	}
	return line[:len(line)-2], nil
}

// appendCommand appends args as a RESP command.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}
