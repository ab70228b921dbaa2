package computer

import (
	"context"
	"sync"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp/organize"
	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

// desktopState remembers the window:// URIs agents were last told about
// (guarded by Computer.resMu).
type desktopState struct {
	uris map[string]bool
}

func newDesktopState() *desktopState { return &desktopState{uris: map[string]bool{}} }

func (c *Computer) handleGetDesktop(ctx context.Context, req *smcpv1.GetDeskTopReq) (any, error) {
	reqID := req.GetReqId()
	var size *int
	if req.DesktopSize != nil {
		n := int(req.GetDesktopSize())
		size = &n
	}
	only := req.GetWindow()
	type ref struct {
		server string
		group  string // what the organizer groups and orders by: the name (0.2) or the bundle id (0.3+)
		res    *mcp.Resource
		index  int
		shown  string // the URI without the 0.1-era query
	}
	var refs []ref
	history := c.exec.History()
	live := c.liveResources()
	if c.bundled {
		// Grouped, de-duplicated and ordered by bundle id (PROTOCOL-0.4.md
		// §7 C4): the history of server names becomes one of bundle ids.
		ids := map[string]string{}
		for _, s := range c.servers.Snapshots() {
			ids[s.Name] = s.BundleID
		}
		mapped := history[:0:0]
		for _, n := range history {
			if id := ids[n]; id != "" {
				mapped = append(mapped, id)
			}
		}
		history = mapped
	}
	for _, s := range live {
		group := s.Name
		if c.bundled {
			group = s.BundleID
		}
		idx := 0
		for _, r := range s.Resources {
			if !windowuri.IsWindow(r.URI) {
				continue
			}
			shown := r.URI
			if _, dropped, err := windowuri.Parse(r.URI); err == nil {
				shown = r.URI[:len(r.URI)-len(dropped)]
			}
			if only == "" || shown == only || r.URI == only {
				refs = append(refs, ref{s.Name, group, r, idx, shown})
			}
			idx++
		}
	}
	windows := make([]organize.Window, len(refs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallelism)
	for i, r := range refs {
		w := &windows[i]
		w.Server, w.URI, w.Index = r.group, r.shown, r.index
		readURI := r.res.URI
		var legacy windowuri.Legacy
		if query := r.res.URI[len(r.shown):]; c.bundled {
			// The 0.1-era ?priority= form belongs to the 0.2 profile only.
			if query != "" {
				c.log.Info("window URI query dropped (read only in the 0.2 profile)", "server", r.server, "uri", r.res.URI)
			}
		} else {
			var problems []string
			legacy, problems = windowuri.ParseLegacy(query)
			for _, p := range problems {
				c.log.Warn("window URI query ignored", "server", r.server, "uri", r.res.URI, "problem", p)
			}
		}
		// annotations.priority and _meta.fullscreen first; the query form
		// of SDK 0.1.x when they do not say (PROTOCOL.md §6). A priority
		// of 0 is what an absent one decodes to.
		if a := r.res.Annotations; a != nil {
			w.Priority = a.Priority
			if len(a.Audience) > 0 && !audienceHasAssistant(a.Audience) {
				c.log.Warn("window audience does not include assistant; shown anyway", "server", r.server, "uri", r.res.URI)
			}
		}
		if w.Priority == 0 && legacy.HasPriority {
			w.Priority = legacy.Priority
		}
		if _, has := r.res.Meta["fullscreen"]; has || !legacy.HasFullscreen {
			fs, ok := organize.FullscreenFromMeta(r.res.Meta)
			if !ok {
				c.log.Warn("window _meta.fullscreen is not a bool; treated as false", "server", r.server, "uri", r.res.URI)
			}
			w.Fullscreen = fs
		} else {
			w.Fullscreen = legacy.Fullscreen
		}
		server := r.server
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			res, err := c.servers.ReadResource(rctx, server, readURI)
			if err != nil {
				c.log.Warn("window unreadable; not on the desktop", "server", server, "uri", w.URI, "err", err)
				return
			}
			for _, rc := range res.Contents {
				if rc.Blob != nil {
					w.Blobs++
				} else {
					w.Texts = append(w.Texts, rc.Text)
				}
			}
		}()
	}
	wg.Wait()
	entries, warnings := organize.Desktop(windows, size, history)
	for _, w := range warnings {
		c.log.Warn("desktop", "warning", w.String())
	}
	return getDesktopRet{Desktops: entries, ReqID: reqID}, nil
}

func audienceHasAssistant(a []mcp.Role) bool {
	for _, r := range a {
		if r == "assistant" {
			return true
		}
	}
	return false
}

// getDesktopRet is the answer of client:get_desktop (GetDeskTopRet), its
// keys in the order agents have always received them.
type getDesktopRet struct {
	Desktops []string `json:"desktops"`
	ReqID    string   `json:"req_id"`
}
