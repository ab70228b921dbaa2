package computer

import (
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

// readTimeout bounds one resources/read made by the computer itself
// (window contents, document summaries).
const readTimeout = 10 * time.Second

// readParallelism bounds concurrent reads per refresh.
const readParallelism = 8

// liveResources returns the listed resources of the servers that take part
// in Desktop and Finder (connected, with the resources capability), sorted
// by server.
func (c *Computer) liveResources() []servers.Snapshot {
	var out []servers.Snapshot
	for _, s := range c.servers.Snapshots() {
		if s.ListsResources && s.Resources != nil {
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
			sum, err := c.readSummary(server, uri)
			switch {
			case err == nil:
				c.finder.mu.Lock()
				if m := c.finder.docs[server]; m != nil {
					m[uri] = sum
					c.finder.flat = nil
				}
				c.finder.mu.Unlock()
			case documentGone(uri, err):
				// The file was removed: the resource list change that
				// announces it comes later, and the agents told now must
				// not find the document any more.
				c.finder.mu.Lock()
				delete(c.finder.docs[server], uri)
				c.finder.flat = nil
				c.finder.mu.Unlock()
			default:
				c.log.Warn("re-read document summary", "server", server, "uri", uri, "err", err)
			}
		}
		c.notify(smcp.EventUpdateFinder)
	default:
		c.log.Debug("resource update ignored (neither window:// nor dpe://)", "server", server, "uri", uri)
	}
}
