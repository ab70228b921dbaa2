package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
	"github.com/smcpgw/smcp-gateway/smcp/organize"
)

// finderState is the Finder cache: the level 1 summary of every listed
// dpe:// document, refreshed by notifications, so that client:get_finder
// is a filter, a sort and a page.
type finderState struct {
	mu   sync.Mutex
	docs map[string]map[string]*smcpv1.DPEDocumentSummary // server → uri → summary
	flat *organize.FinderIndex                            // all docs, prepared for queries; nil when stale
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

// syncFinder brings the cache of one server in line with its resource
// list: new documents are read (all of them when full), gone ones dropped.
func (c *Computer) syncFinder(server string, full bool) {
	snap, ok := c.servers.Snapshot(server)
	var listed []string
	if ok && snap.ListsResources && snap.Resources != nil {
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

func (c *Computer) handleGetFinder(_ context.Context, req *smcpv1.GetFinderReq) (any, error) {
	reqID, keywords, fileType := req.GetReqId(), req.GetKeywords(), req.GetFileType()
	offset, limit := req.Offset, req.Limit
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
	return getFinderRet{Documents: docs, ReqID: reqID, TotalCount: total}, nil
}

// getFinderRet is the answer of client:get_finder (GetFinderRet), its keys
// in the order agents have always received them.
type getFinderRet struct {
	Documents  []json.RawMessage `json:"documents"`
	ReqID      string            `json:"req_id"`
	TotalCount int               `json:"total_count"`
}
