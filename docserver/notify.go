package docserver

import (
	"context"
	"slices"
	"sync"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// subscriptions records which sessions subscribed to which URIs. The SDK
// keeps its own per-session bookkeeping and delivers ResourceUpdated only to
// the sessions subscribed to that exact URI; this record tells the server
// which URIs to name when a document changes: its Level 1 URI, but also any
// page, element or query variant of it somebody subscribed to, and the Level
// 0 catalog. Sessions that ended are pruned at each notification, so the
// record does not grow with every client that ever connected.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]map[*mcp.ServerSession]bool
}

func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	switch {
	case uri == s.statusURI:
	case dpeuri.IsDPE(uri):
		u, err := dpeuri.Parse(uri)
		if err != nil {
			return wireError(err)
		}
		if u.Host != s.opts.Host {
			return s.otherHost(uri, u.Host)
		}
		// A document that does not exist yet may be subscribed to: it is
		// announced when its file appears.
	default:
		return mcp.ResourceNotFoundError(uri)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.uris[uri] == nil {
		s.subs.uris[uri] = map[*mcp.ServerSession]bool{}
	}
	s.subs.uris[uri][req.Session] = true
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	delete(s.subs.uris[req.Params.URI], req.Session)
	if len(s.subs.uris[req.Params.URI]) == 0 {
		delete(s.subs.uris, req.Params.URI)
	}
	return nil
}

// subscribedURIs returns the URIs live sessions are subscribed to, pruning
// the sessions that ended.
func (s *Server) subscribedURIs() []string {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.mcp.Sessions() {
		live[ss] = true
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	var uris []string
	for uri, sessions := range s.subs.uris {
		for ss := range sessions {
			if !live[ss] {
				delete(sessions, ss)
			}
		}
		if len(sessions) == 0 {
			delete(s.subs.uris, uri)
			continue
		}
		uris = append(uris, uri)
	}
	return uris
}

// notify sends notifications/resources/updated for every subscribed URI a
// change touches, and for the status window. (Added and removed documents
// also change the resource list; the SDK announces that when the resources
// are registered or removed.)
func (s *Server) notify(ctx context.Context, ch change) {
	touched := map[string]bool{}
	for _, group := range [][]string{refs(ch.added), refs(ch.removed), refs(ch.updated)} {
		for _, ref := range group {
			touched[ref] = true
		}
	}
	var uris []string
	for _, uri := range s.subscribedURIs() {
		if uri == s.statusURI {
			continue
		}
		u, err := dpeuri.Parse(uri)
		if err != nil {
			continue
		}
		if (u.DocRef == "" && len(touched) > 0) || touched[u.DocRef] {
			uris = append(uris, uri)
		}
	}
	slices.Sort(uris)
	uris = append(uris, s.statusURI)
	for _, uri := range uris {
		if err := s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			s.log.Warn("resource updated notification", "uri", uri, "error", err)
		}
	}
}
