package fastlane

import (
	"net"
	"sync"
)

// handoffListener is what net/http accepts from: the connections the lane
// gives up.
type handoffListener struct {
	net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	stop  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// deliver gives c to net/http; false once net/http no longer accepts.
func (l *handoffListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// Close closes the underlying listener; Accept ends when the lane's accept
// loop has.
func (l *handoffListener) Close() error {
	var err error
	l.once.Do(func() { err = l.Listener.Close() })
	return err
}

func (l *handoffListener) closeDone() { l.stop.Do(func() { close(l.done) }) }

// prefixConn is a connection whose first reads return bytes the lane had
// already read.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		if len(c.prefix) == 0 {
			c.prefix = nil // the connection may live long: do not keep the array
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http half-close, as it does on a *net.TCPConn before
// closing after an error answer.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
