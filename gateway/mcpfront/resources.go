package mcpfront

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// finderPage is the largest page client:get_finder allows.
const finderPage = 100

// hostPattern is what a dpe:// host must look like to get resource
// templates (the go-sdk refuses an invalid template by panicking).
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// The dpe:// templates of one host, by level (PROTOCOL.md §6).
func dpeTemplates(host string) []*mcp.ResourceTemplate {
	base := "dpe://" + host
	return []*mcp.ResourceTemplate{
		{URITemplate: base + "/{doc_ref}{?depth,format,offset,limit}", Name: host + " document",
			Description: "Level 1: a document's metadata; depth=pages adds its page index (offset, limit).", MIMEType: "application/json"},
		{URITemplate: base + "/{doc_ref}/pages/{page_index}{?format,categories}", Name: host + " page",
			Description: "Level 2: one page's elements (categories filters them).", MIMEType: "application/json"},
		{URITemplate: base + "/{doc_ref}/elements/{element_id}{?format}", Name: host + " element",
			Description: "Level 3: one element with all of its content.", MIMEType: "application/json"},
	}
}

// wireDocument is a DPEDocumentSummary (the fields a resource shows).
type wireDocument struct {
	DocRef       string   `json:"doc_ref"`
	URI          string   `json:"uri"`
	FileType     string   `json:"file_type"`
	Title        string   `json:"title"`
	PageCount    int      `json:"page_count"`
	Keywords     []string `json:"keywords"`
	Summary      string   `json:"summary"`
	Server       string   `json:"server"`
	LastModified string   `json:"last_modified"`
}

// syncResources lists a computer's desktop windows and/or finder documents
// and makes the session's server hold exactly them (resources/list_changed
// follows a change).
func (x *session) syncResources(ctx context.Context, computer string, desktop, finder bool) {
	next := map[string]*mcp.Resource{}
	var hosts map[string]bool
	pages := map[string]int{}
	if desktop {
		raw, err := x.syncRequest(ctx, smcp.EventGetDesktop, map[string]any{"computer": computer})
		var ret struct {
			Desktops []string `json:"desktops"`
		}
		if err == nil {
			err = json.Unmarshal(raw, &ret)
		}
		if err != nil {
			x.listFailed("list desktop", computer, err)
			desktop = false
		}
		for _, entry := range ret.Desktops {
			uri, text, _ := strings.Cut(entry, "\n")
			if u, err := url.Parse(uri); err != nil || u.Scheme != "window" {
				continue
			}
			r := &mcp.Resource{URI: uri, Name: windowName(uri), MIMEType: "text/plain",
				Meta: mcp.Meta{"a2c_computer": computer}}
			if t := strings.TrimSpace(text); t != "" {
				r.Description = firstLine(t)
			}
			next[uri] = r
		}
	}
	if finder {
		hosts = map[string]bool{}
		docs, err := x.finder(ctx, computer)
		if err != nil {
			x.listFailed("list finder", computer, err)
			finder = false
		}
		for _, d := range docs {
			u, err := url.Parse(d.URI)
			if err != nil || u.Scheme != "dpe" || u.Host == "" {
				continue
			}
			if !hosts[u.Host] {
				hosts[u.Host] = true
				cat := "dpe://" + u.Host
				next[cat] = &mcp.Resource{URI: cat, Name: u.Host, Title: u.Host + " catalog",
					Description: "Level 0: every document of " + u.Host + " (format=markdown for a readable list).",
					MIMEType:    "application/json", Meta: mcp.Meta{"a2c_computer": computer}}
			}
			pages[u.Host+"/"+d.DocRef] = d.PageCount
			meta := mcp.Meta{"a2c_computer": computer, "file_type": d.FileType, "page_count": d.PageCount}
			if d.LastModified != "" {
				meta["last_modified"] = d.LastModified
			}
			if len(d.Keywords) > 0 {
				meta["keywords"] = d.Keywords
			}
			next[d.URI] = &mcp.Resource{URI: d.URI, Name: d.DocRef, Title: d.Title, Description: d.Summary,
				MIMEType: "application/json", Meta: meta}
		}
	}
	if !desktop && !finder {
		return
	}
	encoded := make(map[string][]byte, len(next))
	for uri, r := range next {
		encoded[uri], _ = json.Marshal(r)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.viewLocked(computer)
	if c == nil {
		return
	}
	if finder {
		c.pages = pages
	}
	x.applyResourcesLocked(computer, c, encoded, func(uri string) *mcp.Resource { return next[uri] }, desktop, finder)
	if finder {
		x.setHostsLocked(c, hosts)
	}
}

// finder reads every page of a computer's finder, up to MaxDocuments.
func (x *session) finder(ctx context.Context, computer string) ([]wireDocument, error) {
	var all []wireDocument
	for offset := 0; len(all) < x.front.opts.MaxDocuments; {
		limit := min(finderPage, x.front.opts.MaxDocuments-len(all))
		raw, err := x.syncRequest(ctx, smcp.EventGetFinder, map[string]any{"computer": computer, "offset": offset, "limit": limit})
		if err != nil {
			return nil, err
		}
		var ret struct {
			Documents  []wireDocument `json:"documents"`
			TotalCount int            `json:"total_count"`
		}
		if err := json.Unmarshal(raw, &ret); err != nil {
			return nil, wrapf(err, "malformed finder answer")
		}
		all = append(all, ret.Documents...)
		offset += len(ret.Documents)
		if len(ret.Documents) == 0 || offset >= ret.TotalCount {
			break
		}
	}
	return all, nil
}

// applyResourcesLocked makes c's windows (when desktop) and documents (when
// finder) exactly next, adding and removing them on the server. A URI that
// another computer listed first stays that computer's.
func (x *session) applyResourcesLocked(computer string, c *computerView, next map[string][]byte,
	resource func(string) *mcp.Resource, desktop, finder bool) {
	var gone []string
	sweep := func(set map[string][]byte) {
		for uri := range set {
			if _, ok := next[uri]; !ok {
				delete(set, uri)
				if x.owners[uri] == computer {
					delete(x.owners, uri)
					gone = append(gone, uri)
				}
			}
		}
	}
	if desktop {
		sweep(c.windows)
	}
	if finder {
		sweep(c.documents)
	}
	if len(gone) > 0 {
		x.server.RemoveResources(gone...)
	}
	for _, uri := range slices.Sorted(maps.Keys(next)) {
		b := next[uri]
		set := c.documents
		if strings.HasPrefix(uri, "window:") {
			if !desktop {
				continue
			}
			set = c.windows
		} else if !finder {
			continue
		}
		if old, ok := set[uri]; ok && bytes.Equal(old, b) {
			continue
		}
		set[uri] = b
		if owner, taken := x.owners[uri]; taken && owner != computer {
			continue
		}
		x.owners[uri] = computer
		x.server.AddResource(resource(uri), x.readHandler)
	}
	if desktop && finder && len(next) == 0 {
		x.setHostsLocked(c, map[string]bool{})
	}
}

// setHostsLocked records the dpe:// hosts c serves and keeps one set of
// templates per host served by any computer.
func (x *session) setHostsLocked(c *computerView, hosts map[string]bool) {
	for h := range c.hosts {
		if !hosts[h] {
			x.templates[h]--
			if x.templates[h] <= 0 {
				delete(x.templates, h)
				var uris []string
				for _, t := range dpeTemplates(h) {
					uris = append(uris, t.URITemplate)
				}
				x.server.RemoveResourceTemplates(uris...)
			}
		}
	}
	for h := range hosts {
		if c.hosts[h] {
			continue
		}
		x.templates[h]++
		if x.templates[h] == 1 && hostPattern.MatchString(h) {
			for _, t := range dpeTemplates(h) {
				x.server.AddResourceTemplate(t, x.readHandler)
			}
		}
	}
	c.hosts = hosts
}

// readHandler is registered with every resource and template; the
// middleware answers every resources/read before the go-sdk's lookup, so it
// is only reached if that ever changes.
func (x *session) readHandler(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return x.read(ctx, req.Params.URI)
}

// read reads a window:// or dpe:// URI (any level, any query) through the
// computer serving it (client:read_resource).
func (x *session) read(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	if strings.HasPrefix(uri, skillPrefix) {
		return x.readSkill(ctx, uri)
	}
	computer, err := x.owner(uri)
	if err != nil {
		return nil, mcpError(err, true)
	}
	raw, err := x.request(ctx, smcp.EventReadResource, map[string]any{"computer": computer, "uri": uri})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, mcpError(err, true)
	}
	var ret struct {
		Contents []struct {
			URI      string         `json:"uri"`
			MIMEType string         `json:"mimeType"`
			Text     *string        `json:"text"`
			Blob     *string        `json:"blob"`
			Meta     map[string]any `json:"_meta"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &ret); err != nil {
		return nil, mcpError(smcp.Errorf(smcp.CodeInternal, "malformed read answer: %v", err), true)
	}
	res := &mcp.ReadResourceResult{Contents: make([]*mcp.ResourceContents, 0, len(ret.Contents))}
	for _, c := range ret.Contents {
		rc := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Meta: c.Meta}
		if rc.URI == "" {
			rc.URI = uri
		}
		if c.Text != nil {
			rc.Text = *c.Text
		}
		if c.Blob != nil {
			b, err := base64.StdEncoding.DecodeString(*c.Blob)
			if err != nil {
				return nil, mcpError(smcp.Errorf(smcp.CodeInternal, "malformed blob in read answer: %v", err), true)
			}
			rc.Blob = b
		}
		res.Contents = append(res.Contents, rc)
	}
	return res, nil
}

// owner finds the computer serving uri: the one that listed it; else, for
// dpe://, a computer serving its host (the one listing its document first);
// for window://, one with a window on the same host.
func (x *session) owner(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", smcp.Errorf(smcp.CodeBadRequest, "invalid URI: %v", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, ok := x.owners[uri]; ok {
		return c, nil
	}
	names := slices.Sorted(maps.Keys(x.computers))
	switch u.Scheme {
	case "dpe":
		docRef, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		var first string
		for _, n := range names {
			c := x.computers[n]
			if !c.hosts[u.Host] {
				continue
			}
			if _, ok := c.pages[u.Host+"/"+docRef]; ok {
				return n, nil
			}
			if first == "" {
				first = n
			}
		}
		if first != "" {
			return first, nil
		}
	case "window":
		for _, n := range names {
			for w := range x.computers[n].windows {
				if wu, err := url.Parse(w); err == nil && wu.Host == u.Host {
					return n, nil
				}
			}
		}
	default:
		return "", smcp.Errorf(smcp.CodeNotFound, "only window:// and dpe:// resources are served here")
	}
	return "", smcp.Errorf(smcp.CodeNotFound, "no computer of this office serves %s", uri)
}

// subscribe accepts a subscription to a URI some computer serves; the
// go-sdk keeps the subscription, the session remembers the URI to send
// resources/updated when its computer reports a change.
func (x *session) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if _, err := x.owner(req.Params.URI); err != nil {
		return mcpError(err, true)
	}
	x.mu.Lock()
	if x.shared {
		x.subs[req.Params.URI]++
	} else {
		x.subs[req.Params.URI] = 1 // a session's subscription is one, however often made
	}
	x.mu.Unlock()
	return nil
}

func (x *session) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	x.mu.Lock()
	if x.subs[req.Params.URI]--; x.subs[req.Params.URI] <= 0 {
		delete(x.subs, req.Params.URI)
	}
	x.mu.Unlock()
	return nil
}

// subscribedOf returns the subscribed URIs of one scheme that computer
// serves: SMCP's update_desktop / update_finder name the computer, not the
// URI, so each of them may have changed.
func (x *session) subscribedOf(computer, scheme string) []string {
	x.mu.Lock()
	subs := slices.Sorted(maps.Keys(x.subs))
	x.mu.Unlock()
	var out []string
	for _, uri := range subs {
		if !strings.HasPrefix(uri, scheme+":") {
			continue
		}
		if c, err := x.owner(uri); err == nil && c == computer {
			out = append(out, uri)
		}
	}
	return out
}

func (x *session) notifyUpdated(ctx context.Context, uris []string) {
	for _, uri := range uris {
		if err := x.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			x.log.Warn("resources/updated", "uri", uri, "err", err)
		}
	}
}

// maxCompletions bounds a completion answer (MCP's own limit).
const maxCompletions = 100

// complete completes the dpe:// templates' doc_ref (the documents of the
// template's host) and page_index (given doc_ref) from the finder the
// session holds. The computers' own MCP completion is not reachable: SMCP
// has no completion event.
func (x *session) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil || ref.Type != "ref/resource" || !strings.HasPrefix(ref.URI, "dpe://") {
		return res, nil
	}
	host := strings.TrimPrefix(ref.URI, "dpe://")
	if i := strings.IndexAny(host, "/{"); i >= 0 {
		host = host[:i]
	}
	prefix := req.Params.Argument.Value
	var values []string
	x.mu.Lock()
	switch req.Params.Argument.Name {
	case "doc_ref":
		for _, c := range x.computers {
			for key := range c.pages {
				if h, ref, _ := strings.Cut(key, "/"); h == host && strings.HasPrefix(ref, prefix) {
					values = append(values, ref)
				}
			}
		}
	case "page_index":
		var doc string
		if req.Params.Context != nil {
			doc = req.Params.Context.Arguments["doc_ref"]
		}
		for _, c := range x.computers {
			if n, ok := c.pages[host+"/"+doc]; ok {
				for i := range n {
					if s := strconv.Itoa(i); strings.HasPrefix(s, prefix) {
						values = append(values, s)
					}
				}
				break
			}
		}
	}
	x.mu.Unlock()
	slices.Sort(values)
	values = slices.Compact(values)
	res.Completion.Total = len(values)
	if len(values) > maxCompletions {
		values, res.Completion.HasMore = values[:maxCompletions], true
	}
	res.Completion.Values = values
	return res, nil
}

// windowName is a window URI's host and path, shorter than the URI.
func windowName(uri string) string {
	return strings.TrimPrefix(uri, "window://")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}
