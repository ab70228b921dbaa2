package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/computer/servers"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
	"github.com/smcpgw/smcp-gateway/smcp/organize"
	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

// readTimeout bounds one resources/read made by the computer itself
// (window contents, document summaries).
const readTimeout = 10 * time.Second

// readParallelism bounds concurrent reads per refresh.
const readParallelism = 8

// desktopState remembers the window:// URIs agents were last told about
// (guarded by Computer.resMu).
type desktopState struct {
	uris map[string]bool
}

func newDesktopState() *desktopState { return &desktopState{uris: map[string]bool{}} }

// finderState is the Finder cache: the level 1 summary of every listed
// dpe:// document, refreshed by notifications, so that client:get_finder
// is a filter, a sort and a page.
type finderState struct {
	mu   sync.Mutex
	docs map[string]map[string]*smcpv1.DPEDocumentSummary // server → uri → summary
	flat *organize.FinderIndex                            // all docs; nil when stale
	uris map[string]bool                                  // listed dpe:// URIs agents were last told about (Computer.resMu)
}

func newFinderState() *finderState {
	return &finderState{docs: map[string]map[string]*smcpv1.DPEDocumentSummary{}, uris: map[string]bool{}}
}

// index is the catalogue prepared for queries, rebuilt after a change:
// preparing 10,000 documents on every get_finder was most of its time.
func (f *finderState) index() *organize.FinderIndex {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flat == nil {
		servers := make([]string, 0, len(f.docs))
		for s := range f.docs {
			servers = append(servers, s)
		}
		sort.Strings(servers)
		flat := []*smcpv1.DPEDocumentSummary{}
		for _, s := range servers {
			uris := make([]string, 0, len(f.docs[s]))
			for u := range f.docs[s] {
				uris = append(uris, u)
			}
			sort.Strings(uris) // a stable input order for equal sort keys
			for _, u := range uris {
				flat = append(flat, f.docs[s][u])
			}
		}
		f.flat = organize.NewFinderIndex(flat)
	}
	return f.flat
}

// liveResources returns the listed resources of the servers that take part
// in Desktop and Finder (connected, resources.subscribe), sorted by server.
func (c *Computer) liveResources() []servers.Snapshot {
	var out []servers.Snapshot
	for _, s := range c.servers.Snapshots() {
		if s.Subscribable && s.Resources != nil {
			out = append(out, s)
		}
	}
	return out
}

// hostIndex routes reads by host: hosts are learned from each server's
// resource list. window:// and dpe:// share one host namespace (seed 001),
// so a host listed by two servers is a clash whatever the schemes.
type hostIndex struct {
	owners  map[string]map[string][]string // scheme → host → servers, sorted
	clashes string                         // description of the clashes, for change detection
}

func (c *Computer) buildHostIndex(live []servers.Snapshot) *hostIndex {
	idx := &hostIndex{owners: map[string]map[string][]string{dpeuri.Scheme: {}, windowuri.Scheme: {}}}
	all := map[string][]string{}
	for _, s := range live { // sorted by name
		seen := map[string]bool{}
		for _, r := range s.Resources {
			scheme, host := resourceHost(r.URI)
			if host == "" || seen[scheme+"://"+host] {
				continue
			}
			seen[scheme+"://"+host] = true
			idx.owners[scheme][host] = append(idx.owners[scheme][host], s.Name)
			if n := len(all[host]); n == 0 || all[host][n-1] != s.Name {
				all[host] = append(all[host], s.Name)
			}
		}
	}
	var clashes []string
	for host, names := range all {
		if len(names) > 1 {
			clashes = append(clashes, host+"="+strings.Join(names, ","))
		}
	}
	sort.Strings(clashes)
	idx.clashes = strings.Join(clashes, " ")
	return idx
}

// hostOwner finds the server that lists resources of scheme under host; a
// host listed by several servers goes to the first by name.
func (c *Computer) hostOwner(scheme, host string) (string, bool) {
	idx := c.hosts.Load()
	if idx == nil {
		return "", false
	}
	owners := idx.owners[scheme][host]
	if len(owners) == 0 {
		return "", false
	}
	return owners[0], true
}

func resourceHost(uri string) (scheme, host string) {
	switch {
	case dpeuri.IsDPE(uri):
		if u, err := dpeuri.Parse(uri); err == nil {
			return dpeuri.Scheme, u.Host
		}
	case windowuri.IsWindow(uri):
		if u, _, err := windowuri.Parse(uri); err == nil {
			return windowuri.Scheme, u.Host
		}
	}
	return "", ""
}

// resourcesChanged handles a server's resource list changing (or the
// server connecting, disconnecting, being removed): set comparison for
// window:// and dpe:// URIs, Finder cache refresh.
func (c *Computer) resourcesChanged(server string, kind servers.EventKind) {
	// Servers report concurrently: each comparison reads the snapshots and
	// swaps the remembered set in one critical section, so that an older
	// view never replaces a newer one.
	c.resMu.Lock()
	live := c.liveResources()
	windows := uriSet(live, windowuri.IsWindow)
	idx := c.buildHostIndex(live)
	if prev := c.hosts.Swap(idx); idx.clashes != "" && (prev == nil || prev.clashes != idx.clashes) {
		c.log.Warn("host clash: several MCP servers list resources under one host (window:// and dpe:// share hosts); "+
			"reads go to the first server by name", "clashes", idx.clashes)
	}
	desktopChanged := !maps.Equal(c.desktop.uris, windows)
	c.desktop.uris = windows
	c.resMu.Unlock()
	if desktopChanged {
		c.notify(smcp.EventUpdateDesktop)
	}

	c.syncFinder(server, kind == servers.Connected)
	c.resMu.Lock()
	docs := uriSet(c.liveResources(), dpeuri.IsDPE)
	finderChanged := !maps.Equal(c.finder.uris, docs)
	c.finder.uris = docs
	c.resMu.Unlock()
	if finderChanged {
		c.notify(smcp.EventUpdateFinder)
	}
}

func uriSet(live []servers.Snapshot, match func(string) bool) map[string]bool {
	set := map[string]bool{}
	for _, s := range live {
		for _, r := range s.Resources {
			if match(r.URI) {
				set[r.URI] = true
			}
		}
	}
	return set
}

// resourceUpdated handles notifications/resources/updated: a window update
// is passed on at once; a document's summary is re-read first so that the
// agent's next client:get_finder sees it.
func (c *Computer) resourceUpdated(server, uri string) {
	switch {
	case windowuri.IsWindow(uri):
		c.notify(smcp.EventUpdateDesktop)
	case dpeuri.IsDPE(uri):
		c.finder.mu.Lock()
		_, known := c.finder.docs[server][uri]
		c.finder.mu.Unlock()
		if known {
			if sum, err := c.readSummary(server, uri); err == nil {
				c.finder.mu.Lock()
				if m := c.finder.docs[server]; m != nil {
					m[uri] = sum
					c.finder.flat = nil
				}
				c.finder.mu.Unlock()
			} else {
				c.log.Warn("re-read document summary", "server", server, "uri", uri, "err", err)
			}
		}
		c.notify(smcp.EventUpdateFinder)
	default:
		c.log.Debug("resource update ignored (neither window:// nor dpe://)", "server", server, "uri", uri)
	}
}

// syncFinder brings the cache of one server in line with its resource
// list: new documents are read (all of them when full), gone ones dropped.
func (c *Computer) syncFinder(server string, full bool) {
	snap, ok := c.servers.Snapshot(server)
	var listed []string
	if ok && snap.Subscribable && snap.Resources != nil {
		for _, r := range snap.Resources {
			if u, err := dpeuri.Parse(r.URI); err == nil && u.Level() == dpeuri.LevelDocument {
				listed = append(listed, r.URI)
			} else if dpeuri.IsDPE(r.URI) {
				c.log.Warn("dpe resource is not a level 1 document URI; not in the Finder", "server", server, "uri", r.URI, "err", err)
			}
		}
	}
	c.finder.mu.Lock()
	old := c.finder.docs[server]
	c.finder.mu.Unlock()
	var toRead []string
	for _, u := range listed {
		if _, have := old[u]; full || !have {
			toRead = append(toRead, u)
		}
	}
	read := c.readSummaries(server, toRead)
	next := make(map[string]*smcpv1.DPEDocumentSummary, len(listed))
	for _, u := range listed {
		if s, ok := read[u]; ok {
			next[u] = s
		} else if s, ok := old[u]; ok && !full {
			next[u] = s
		}
	}
	c.finder.mu.Lock()
	if len(next) == 0 {
		delete(c.finder.docs, server)
	} else {
		c.finder.docs[server] = next
	}
	c.finder.flat = nil
	c.finder.mu.Unlock()
	if len(toRead) > 0 {
		c.log.Info("finder cache refreshed", "server", server, "documents", len(next), "read", len(toRead))
	}
}

func (c *Computer) readSummaries(server string, uris []string) map[string]*smcpv1.DPEDocumentSummary {
	out := make(map[string]*smcpv1.DPEDocumentSummary, len(uris))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallelism)
	for _, u := range uris {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s, err := c.readSummary(server, u)
			if err != nil {
				c.log.Warn("document summary unreadable; not in the Finder", "server", server, "uri", u, "err", err)
				return
			}
			mu.Lock()
			out[u] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// readSummary reads a document at level 1 (depth=metadata) and decodes its
// JSON text as a DPEDocumentSummary.
func (c *Computer) readSummary(server, uri string) (*smcpv1.DPEDocumentSummary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	res, err := c.servers.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, err
	}
	for _, rc := range res.Contents {
		if rc.Blob != nil || rc.Text == "" {
			continue
		}
		s := &smcpv1.DPEDocumentSummary{}
		if err := smcp.Unmarshal([]byte(rc.Text), s); err != nil {
			return nil, fmt.Errorf("level 1 read is not a document summary: %w", err)
		}
		s.Server = server
		if s.Uri == "" {
			s.Uri = uri
		}
		return s, nil
	}
	return nil, errors.New("level 1 read has no JSON text")
}

func (c *Computer) handleGetFinder(req map[string]any) (any, error) {
	reqID, err := str(req, "req_id", false)
	if err != nil {
		return nil, err
	}
	var keywords []string
	switch kw := req["keywords"].(type) {
	case nil:
	case []any:
		for _, k := range kw {
			s, ok := k.(string)
			if !ok {
				return nil, smcp.Errorf(smcp.CodeBadRequest, "\"keywords\" must be a list of strings")
			}
			keywords = append(keywords, s)
		}
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "\"keywords\" must be a list of strings")
	}
	fileType, err := str(req, "file_type", false)
	if err != nil {
		return nil, err
	}
	var offset, limit *int32
	for key, dst := range map[string]**int32{"offset": &offset, "limit": &limit} {
		n, ok, err := optInt(req, key)
		if err != nil {
			return nil, err
		}
		if ok {
			v := int32(max(min(n, 1<<30), -1<<30))
			*dst = &v
		}
	}
	off, lim, err := organize.FinderPaging(offset, limit)
	if err != nil {
		return nil, err
	}
	page, total, warnings := c.finder.index().Find(keywords, fileType, c.exec.History(), off, lim)
	for _, w := range warnings {
		c.log.Debug("finder", "warning", w.String())
	}
	docs := make([]json.RawMessage, 0, len(page))
	for _, d := range page {
		b, err := smcp.Marshal(d)
		if err != nil {
			return nil, err
		}
		docs = append(docs, b)
	}
	return map[string]any{"documents": docs, "total_count": total, "req_id": reqID}, nil
}

func (c *Computer) handleGetDesktop(ctx context.Context, req map[string]any) (any, error) {
	reqID, err := str(req, "req_id", false)
	if err != nil {
		return nil, err
	}
	var size *int
	if n, ok, err := optInt(req, "desktop_size"); err != nil {
		return nil, err
	} else if ok {
		size = &n
	}
	only, err := str(req, "window", false)
	if err != nil {
		return nil, err
	}
	type ref struct {
		server string
		res    *mcp.Resource
		index  int
	}
	var refs []ref
	for _, s := range c.liveResources() {
		idx := 0
		for _, r := range s.Resources {
			if !windowuri.IsWindow(r.URI) {
				continue
			}
			if only == "" || r.URI == only {
				refs = append(refs, ref{s.Name, r, idx})
			}
			idx++
		}
	}
	windows := make([]organize.Window, len(refs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallelism)
	for i, r := range refs {
		w := &windows[i]
		w.Server, w.URI, w.Index = r.server, r.res.URI, r.index
		if a := r.res.Annotations; a != nil {
			w.Priority = a.Priority
			if len(a.Audience) > 0 && !audienceHasAssistant(a.Audience) {
				c.log.Warn("window audience does not include assistant; shown anyway", "server", r.server, "uri", r.res.URI)
			}
		}
		fs, ok := organize.FullscreenFromMeta(r.res.Meta)
		if !ok {
			c.log.Warn("window _meta.fullscreen is not a bool; treated as false", "server", r.server, "uri", r.res.URI)
		}
		w.Fullscreen = fs
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			res, err := c.servers.ReadResource(rctx, w.Server, w.URI)
			if err != nil {
				c.log.Warn("window unreadable; not on the desktop", "server", w.Server, "uri", w.URI, "err", err)
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
	entries, warnings := organize.Desktop(windows, size, c.exec.History())
	for _, w := range warnings {
		c.log.Warn("desktop", "warning", w.String())
	}
	return map[string]any{"desktops": entries, "req_id": reqID}, nil
}

func audienceHasAssistant(a []mcp.Role) bool {
	for _, r := range a {
		if r == "assistant" {
			return true
		}
	}
	return false
}

func (c *Computer) handleReadResource(ctx context.Context, req map[string]any) (any, error) {
	reqID, err := str(req, "req_id", false)
	if err != nil {
		return nil, err
	}
	uri, err := str(req, "uri", true)
	if err != nil {
		return nil, err
	}
	var server string
	switch {
	case dpeuri.IsDPE(uri):
		u, err := dpeuri.Parse(uri)
		if err != nil {
			return nil, err // 4204 with the failed rule
		}
		owner, ok := c.hostOwner(dpeuri.Scheme, u.Host)
		if !ok {
			return nil, smcp.Errorf(smcp.CodeDocumentNotFound, "no MCP server serves dpe host %q", u.Host).WithDetails(map[string]any{"host": u.Host})
		}
		server = owner
	case windowuri.IsWindow(uri):
		u, _, err := windowuri.Parse(uri)
		if err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		owner, ok := c.hostOwner(windowuri.Scheme, u.Host)
		if !ok {
			return nil, smcp.Errorf(smcp.CodeNotFound, "no MCP server serves window host %q", u.Host)
		}
		server = owner
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "client:read_resource reads dpe:// and window:// URIs only")
	}
	res, err := c.servers.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, mcpReadError(server, uri, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if out["contents"] == nil {
		out["contents"] = []any{}
	}
	out["req_id"] = reqID
	return out, nil
}

// mcpReadError maps an MCP server's resources/read failure to a flat
// error, passing the DPE codes through (see the package comment).
func mcpReadError(server, uri string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		code := int(werr.Code)
		switch {
		case code >= smcp.CodeDocumentNotFound && code <= smcp.CodeInvalidDPEURI:
		case code == int(mcp.CodeResourceNotFound) && dpeuri.IsDPE(uri):
			code = smcp.CodeDocumentNotFound
		case code == int(mcp.CodeResourceNotFound):
			code = smcp.CodeNotFound
		default:
			return smcp.Errorf(smcp.CodeInternal, "MCP server %q could not read %s: %s", server, uri, werr.Message)
		}
		e := smcp.Errorf(code, "%s", werr.Message)
		var details map[string]any
		if len(werr.Data) > 0 && json.Unmarshal(werr.Data, &details) == nil && len(details) > 0 {
			e.Details = details
		}
		return e
	}
	switch {
	case errors.Is(err, servers.ErrNotConnected):
		return smcp.Errorf(smcp.CodeInternal, "MCP server %q is not connected", server)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return smcp.Errorf(smcp.CodeTimeout, "MCP server %q did not answer in time", server)
	}
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	return smcp.Errorf(smcp.CodeInternal, "MCP server %q could not read %s: %s", server, uri, msg)
}
