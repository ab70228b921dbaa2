package gateway

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// A connection the listener accepted just before it closed, and announced
// after closeAll ran, is closed as well; one that sent a request is not.
func TestFreshConnsAfterCloseAll(t *testing.T) {
	f := newFreshConns()
	busy, busyPeer := net.Pipe()
	defer busyPeer.Close()
	f.track(busy, http.StateNew)
	f.track(busy, http.StateActive)
	f.closeAll()
	late, latePeer := net.Pipe()
	f.track(late, http.StateNew)
	_ = latePeer.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := latePeer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a connection accepted after closeAll: read %v, want EOF", err)
	}
	go func() { _, _ = busy.Write([]byte("x")) }()
	_ = busyPeer.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := busyPeer.Read(make([]byte, 1)); err != nil {
		t.Errorf("a connection that sent a request was closed: %v", err)
	}
}
