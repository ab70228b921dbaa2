package mcpfront

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// In a cluster, an MCP session lives on the node that made it (its agent
// lease, its office watch, the go-sdk's session state), and its id names
// that node. Any other node that receives a request of the session
// authenticates it like its own, then reverse-proxies it, credentials
// unchanged, to the owner, which authenticates it again and serves it: a
// load balancer need not pin MCP clients to a node.

// Peers locates the nodes of a cluster (cluster.Node implements it).
type Peers interface {
	// ID is this node's id.
	ID() string
	// PeerURL is the base URL where node serves HTTP, as the other nodes
	// reach it, and whether node is alive (its heartbeat has not lapsed).
	// A live node may publish no URL ("").
	PeerURL(ctx context.Context, node string) (url string, alive bool, err error)
}

// ForwardedHeader marks a request that a node forwarded to the session's
// owner, naming the forwarding node. A node never forwards such a request
// again: one that is not its own gets 404, so that nodes that disagree
// about an owner cannot bounce a request between them.
const ForwardedHeader = "Smcp-Forwarded-By"

// ownerSep separates a session id's random part from its owner's encoded
// node id; it is not in the base64url alphabet.
const ownerSep = "."

// newSessionID is a random session id that names this node when it is in a
// cluster. Node ids are free text: base64url keeps the id within the
// visible ASCII the MCP spec allows.
func (s *Server) newSessionID() string {
	id := rand.Text()
	if s.peers != nil {
		id += ownerSep + base64.RawURLEncoding.EncodeToString([]byte(s.peers.ID()))
	}
	return id
}

// ownerOf is the node named in session id sid, "" when it names none.
func ownerOf(sid string) string {
	i := strings.LastIndex(sid, ownerSep)
	if i < 0 {
		return ""
	}
	node, err := base64.RawURLEncoding.DecodeString(sid[i+len(ownerSep):])
	if err != nil {
		return ""
	}
	return string(node)
}

// ownerMaxAge is how long a node's URL is used without asking the registry
// again. The node that reaps a dead owner drops it at once (NodeGone), and
// an owner that cannot be reached is dropped on the spot; the other nodes
// learn a death from the registry, within this much of it.
const ownerMaxAge = time.Second

// forwarder is the reverse proxy to the owners of sessions.
type forwarder struct {
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	peers     Peers

	// owners caches the URL of each node forwarded to: a lookup is a
	// registry round trip, which every forwarded request used to make.
	mu     sync.Mutex
	owners map[string]ownerEntry
	// life ends at close, and with it the requests being proxied.
	life    context.Context
	endLife context.CancelFunc
	// lookups counts the registry lookups (tests).
	lookups atomic.Int64
}

// ownerEntry is where a live node was found, and when.
type ownerEntry struct {
	target *url.URL
	at     time.Time
}

// target is where a request is proxied: owner's URL.
type target struct {
	owner string
	url   *url.URL
}

type targetKey struct{}

func newForwarder(peers Peers, logger *slog.Logger) *forwarder {
	self := peers.ID()
	tr := &http.Transport{
		// Nodes reach each other directly: an HTTP proxy of the
		// environment is for the way out, not between nodes.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// No ResponseHeaderTimeout: a tools/call is answered when the
		// computer answers, and the client's deadline bounds it.
	}
	f := &forwarder{transport: tr, peers: peers, owners: map[string]ownerEntry{}}
	f.life, f.endLife = context.WithCancel(context.Background())
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(pr.In.Context().Value(targetKey{}).(target).url)
			// Authorization and the API key header pass unchanged: the
			// owner authenticates the client itself.
			pr.Out.Header.Set(ForwardedHeader, self)
		},
		Transport: tr,
		// Every write is flushed: event streams (the GET stream, a POST
		// answered as a stream) reach the client as the owner sends them.
		FlushInterval: -1,
		// The proxy's own lines (a copy cut by a client that left) are
		// routine.
		ErrorLog: log.New(debugWriter{logger}, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left, or this node is closing
			}
			// The owner may have left or moved: its URL is asked anew, now
			// and for the next requests; a node found dead is as before.
			t := r.Context().Value(targetKey{}).(target)
			f.forget(t.owner, t.url)
			if _, alive, lerr := f.lookup(r.Context(), t.owner); lerr == nil && !alive {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			// The error names the owner's URL, never the credentials.
			logger.Warn("mcp: the node owning a session does not answer", "err", err)
			httpError(w, smcp.Errorf(codeBadGateway, "the gateway node holding this MCP session does not answer"))
		},
	}
	return f
}

// codeBadGateway: the owner of a session is alive but did not answer.
const codeBadGateway = 502

// debugWriter is a log.Logger's output at slog debug level.
type debugWriter struct{ log *slog.Logger }

func (d debugWriter) Write(p []byte) (int, error) {
	d.log.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}

// forward serves a request of session sid, which node owner made: it is
// proxied to the owner while that node is alive, and a session whose owner
// is dead is not found (404: the client initializes anew).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, owner string) {
	if by := r.Header.Get(ForwardedHeader); by != "" {
		// Debug: the header may be the client's own.
		s.log.Debug("mcp: refused a forwarded request for a session of another node", "from", by, "owner", owner)
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	to := s.fwd.cached(owner)
	if to == nil {
		base, alive, err := s.fwd.lookup(r.Context(), owner)
		switch {
		case err != nil:
			s.log.Warn("mcp: cannot look up the node owning a session", "owner", owner, "err", err)
			httpError(w, smcp.Errorf(codeUnavailable, "the cluster registry does not answer"))
			return
		case !alive:
			http.Error(w, "session not found", http.StatusNotFound)
			return
		case base == "":
			s.log.Warn("mcp: the node owning a session publishes no URL (set its --advertise-url)", "owner", owner)
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if to, err = url.Parse(base); err != nil {
			s.log.Warn("mcp: the node owning a session publishes a bad URL", "owner", owner, "err", err)
			httpError(w, smcp.Errorf(codeBadGateway, "the gateway node holding this MCP session cannot be reached"))
			return
		}
		s.fwd.remember(owner, to)
	}
	if r.Method == http.MethodPost {
		// Counted as the owner counts its own: the drain waits for the
		// answer to be relayed.
		if !s.calls.Begin() {
			httpError(w, smcp.Errorf(codeUnavailable, "the gateway is shutting down"))
			return
		}
		defer s.calls.End()
	}
	// Close ends proxied streams as it ends the node's own.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.fwd.life, cancel)()
	s.fwd.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, targetKey{}, target{owner: owner, url: to})))
}

// close ends the requests being proxied, and every later one.
func (f *forwarder) close() {
	f.endLife()
	f.transport.CloseIdleConnections()
}

// NodeGone drops what the front end knows of node, a node of the cluster
// found dead (cluster.Node.OnNodeGone): its sessions' requests are answered
// 404 from now on, without trying its URL.
func (s *Server) NodeGone(node string) {
	if s.fwd != nil {
		s.fwd.forget(node, nil)
	}
}

// lookup asks the registry for node's URL and whether it is alive.
func (f *forwarder) lookup(ctx context.Context, node string) (string, bool, error) {
	f.lookups.Add(1)
	return f.peers.PeerURL(ctx, node)
}

// cached is node's URL when it was found alive less than ownerMaxAge ago.
func (f *forwarder) cached(node string) *url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.owners[node]
	if !ok || time.Since(e.at) >= ownerMaxAge {
		return nil
	}
	return e.target
}

func (f *forwarder) remember(node string, u *url.URL) {
	f.mu.Lock()
	f.owners[node] = ownerEntry{target: u, at: time.Now()}
	f.mu.Unlock()
}

// forget drops node's URL: any, or only u (a request that failed must not
// drop a newer entry).
func (f *forwarder) forget(node string, u *url.URL) {
	f.mu.Lock()
	if e, ok := f.owners[node]; ok && (u == nil || e.target == u) {
		delete(f.owners, node)
	}
	f.mu.Unlock()
}
