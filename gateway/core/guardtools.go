package core

import (
	"encoding/json"
	"sync"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// toolCache is what this node knows of its offices' computers' tools, from
// their get_tools answers, until a computer says its list changed or
// leaves; and which of their blobs came from which tool or skill.
type toolCache struct {
	mu    sync.Mutex
	by    map[computerKey]*computerTools
	limit int // blob origins kept per computer
}

type computerKey struct{ office, computer string }

type computerTools struct {
	// tools are by exposed name; nil: not listed yet. A view is shared by
	// the calls of its tool (Call.Tool), never changed once stored.
	tools map[string]*ToolView
	// gen counts the changes of the list (forget): a listing asked for
	// before a change is not kept after it.
	gen   uint64
	blobs map[string]blobOrigin
	// order is the blobs' handles oldest first, to keep limit of them.
	order []string
}

type blobOrigin struct {
	tool *ToolView
	uri  string
}

// maxBlobOrigins bounds the blob handles remembered per computer.
const maxBlobOrigins = 4096

func (tc *toolCache) entry(office, computer string) *computerTools {
	if tc.by == nil {
		tc.by = map[computerKey]*computerTools{}
	}
	k := computerKey{office, computer}
	e := tc.by[k]
	if e == nil {
		e = &computerTools{}
		tc.by[k] = e
	}
	return e
}

// lookup finds a tool by the name it is called by; listed is false when the
// computer's tools are not known. A tool its computer does not list is
// known by that name alone.
func (tc *toolCache) lookup(office, computer, exposed string) (t *ToolView, listed bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e := tc.by[computerKey{office, computer}]
	if e == nil || e.tools == nil {
		return nil, false
	}
	if t, ok := e.tools[exposed]; ok {
		return t, true
	}
	return &ToolView{Name: exposed, Exposed: exposed}, true
}

// generation is the list's generation, to store a listing asked for now.
func (tc *toolCache) generation(office, computer string) uint64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.entry(office, computer).gen
}

// store records a listing asked for at generation gen, unless the list
// changed since.
func (tc *toolCache) store(office, computer string, gen uint64, tools []listedTool) {
	// The views are copied out: tools holds the listing's raw bytes.
	views := make([]ToolView, len(tools))
	m := make(map[string]*ToolView, len(tools))
	for i := range tools {
		views[i] = tools[i].view
		m[views[i].Exposed] = &views[i]
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if e := tc.entry(office, computer); e.gen == gen {
		e.tools = m
	}
}

// forget drops what is known of a computer's tools (its list changed);
// gone also drops its blobs (it left).
func (tc *toolCache) forget(office, computer string, gone bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e := tc.by[computerKey{office, computer}]
	if e == nil {
		return
	}
	// The entry stays, with its generation: a listing in flight to the
	// computer that left is not stored when it comes.
	e.tools, e.gen = nil, e.gen+1
	if gone {
		e.blobs, e.order = nil, nil
	}
}

// forgetOffice drops what is known of an office this node no longer
// holds: the notifications that keep it current stop coming.
func (tc *toolCache) forgetOffice(office string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k, e := range tc.by {
		if k.office == office {
			e.tools, e.blobs, e.order, e.gen = nil, nil, nil, e.gen+1
			delete(tc.by, k)
		}
	}
}

func (tc *toolCache) recordBlobs(office, computer string, raw json.RawMessage, o blobOrigin) {
	handles := blobHandles(raw)
	if len(handles) == 0 {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e := tc.entry(office, computer)
	if e.blobs == nil {
		e.blobs = map[string]blobOrigin{}
	}
	for _, h := range handles {
		if _, ok := e.blobs[h]; ok {
			continue
		}
		e.blobs[h] = o
		e.order = append(e.order, h)
		if len(e.order) > maxBlobOrigins {
			delete(e.blobs, e.order[0])
			e.order = e.order[1:]
		}
	}
}

func (tc *toolCache) blobOrigin(office, computer, handle string) (blobOrigin, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e := tc.by[computerKey{office, computer}]
	if e == nil {
		return blobOrigin{}, false
	}
	o, ok := e.blobs[handle]
	return o, ok
}

// blobHandles finds the blob handles of an answer: get_skill's top-level
// blob_handle, a tool result's items' _meta.a2c_blob_handle (§5.7).
func blobHandles(raw json.RawMessage) []string {
	var v struct {
		BlobHandle string `json:"blob_handle"`
		Content    []struct {
			Meta struct {
				Handle string `json:"a2c_blob_handle"`
			} `json:"_meta"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	if v.BlobHandle != "" {
		out = append(out, v.BlobHandle)
	}
	for _, c := range v.Content {
		if c.Meta.Handle != "" {
			out = append(out, c.Meta.Handle)
		}
	}
	return out
}

// toolsChanged drops what is known of a computer's tools when a
// notification says they changed or that it entered or left.
func (h *Hub) toolsChanged(n Notification) {
	if h.cfg.Guard == nil {
		return
	}
	switch p := n.Payload.(type) {
	case *smcpv1.UpdateComputerConfigReq:
		if n.Event == smcp.NotifyUpdateToolList || n.Event == smcp.NotifyUpdateConfig {
			h.tools.forget(n.OfficeID, p.GetComputer(), false)
		}
	case *smcpv1.LeaveOfficeNotification:
		if p.Computer != nil {
			h.tools.forget(n.OfficeID, p.GetComputer(), true)
		}
	case *smcpv1.EnterOfficeNotification:
		if p.Computer != nil {
			h.tools.forget(n.OfficeID, p.GetComputer(), true)
		}
	}
}
