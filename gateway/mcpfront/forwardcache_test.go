package mcpfront

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// onePeer is a cluster of one other node, "n1", at a fixed URL.
type onePeer struct{ alive bool }

func (onePeer) ID() string { return "self" }
func (p onePeer) PeerURL(context.Context, string) (string, bool, error) {
	return "http://10.0.0.1:8080", p.alive, nil
}

// The owner's URL is kept until it is older than ownerMaxAge, the node is
// reported gone (Server.NodeGone), or a request to it failed; a failed
// request drops only the entry it used.
func TestOwnerCache(t *testing.T) {
	s := New(nil, nil, Options{Peers: onePeer{alive: true}})
	defer s.Close()
	f := s.fwd
	u, _ := url.Parse("http://10.0.0.1:8080")
	f.remember("n1", u)
	if f.cached("n1") != u {
		t.Fatal("a URL just found is not kept")
	}
	s.NodeGone("n1")
	if f.cached("n1") != nil {
		t.Error("the URL of a node gone is still used")
	}
	f.remember("n1", u)
	f.forget("n1", &url.URL{Host: "an older entry"})
	if f.cached("n1") != u {
		t.Error("a failure with an older URL dropped the current one")
	}
	f.forget("n1", u)
	if f.cached("n1") != nil {
		t.Error("the URL of an owner that could not be reached is still used")
	}
	f.mu.Lock()
	f.owners["n1"] = ownerEntry{target: u, at: time.Now().Add(-ownerMaxAge)}
	f.mu.Unlock()
	if f.cached("n1") != nil {
		t.Errorf("a URL found %v ago is still used", ownerMaxAge)
	}
}
