package computer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Protocol versions a computer speaks (Options.Protocol): the MAJOR.MINOR
// of its profile. 0.2 is PROTOCOL.md; 0.3 and 0.4 are PROTOCOL-0.4.md,
// whose computer side is the same but for client:put_blob (0.4); 0.5 is
// PROTOCOL-0.5.md, the draft whose room model changes only the join and
// leave acks on the computer side.
const (
	Protocol02 = "0.2"
	Protocol03 = "0.3"
	Protocol04 = "0.4"
	Protocol05 = "0.5"
)

// a2cVersions is what the computer sends as a2c_version for each profile
// (PROTOCOL-0.4.md §2): the full version of the profile it implements.
var a2cVersions = map[string]string{Protocol02: "0.2.0", Protocol03: "0.3.2", Protocol04: "0.4.0", Protocol05: "0.5.0"}

// A2CVersion returns the a2c_version a computer of protocol sends, and
// whether protocol is one the computer speaks.
func A2CVersion(protocol string) (string, bool) {
	v, ok := a2cVersions[protocol]
	return v, ok
}

// Protocol returns the computer's protocol version (MAJOR.MINOR).
func (c *Computer) Protocol() string { return c.protocol }

// serving decides which configured servers run. In 0.2, all of them. From
// 0.3 a server is its bundle id (PROTOCOL-0.4.md §7 C2): of servers sharing
// one, only the first in configuration order runs; a server whose explicit
// bundle_id is invalid does not run. Both are diagnostics, logged and kept
// for Diagnostics, never a protocol error. Names are returned in the order
// servers start: by name in 0.2 (as always), in configuration order from
// 0.3.
func (c *Computer) serving(cfg *config.Config) []string {
	if !c.bundled {
		names := make([]string, 0, len(cfg.Servers))
		for n := range cfg.Servers {
			names = append(names, n)
		}
		sort.Strings(names)
		return names
	}
	var names, diags []string
	owner := map[string]string{}
	for _, n := range cfg.Names() {
		id, err := cfg.Servers[n].BundleID()
		switch {
		case err != nil:
			diags = append(diags, fmt.Sprintf("MCP server %q not started: %v", n, err))
		case owner[id] != "":
			diags = append(diags, fmt.Sprintf("MCP server %q not started: bundle id %q is already %q's (first in configuration order); "+
				"give one of them another name or an explicit bundle_id", n, id, owner[id]))
		default:
			owner[id] = n
			names = append(names, n)
		}
	}
	c.setDiagnostics(diags)
	return names
}

func (c *Computer) setDiagnostics(diags []string) {
	c.diagMu.Lock()
	changed := !slices.Equal(c.diags, diags)
	c.diags = diags
	c.diagMu.Unlock()
	if changed {
		for _, d := range diags {
			c.log.Warn("configuration diagnostic", "diagnostic", d)
		}
	}
}

// Diagnostics lists what the configuration asks for that the computer does
// not do (0.3+: servers left out for a duplicate or invalid bundle id).
func (c *Computer) Diagnostics() []string {
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	return slices.Clone(c.diags)
}

// bundleOwner returns the name of the running server whose bundle id is
// id.
func (c *Computer) bundleOwner(id string) (servers.Snapshot, bool) {
	for _, s := range c.servers.Snapshots() {
		if s.BundleID == id {
			return s, true
		}
	}
	return servers.Snapshot{}, false
}

// bundleIDs maps the names of the servers the manager runs to their bundle
// ids.
func (c *Computer) bundleIDs() map[string]string {
	ids := map[string]string{}
	for _, s := range c.servers.Snapshots() {
		if s.BundleID != "" {
			ids[s.Name] = s.BundleID
		}
	}
	return ids
}

// version is the computer's profile in the protocol table.
func (c *Computer) version() smcp.Version {
	if v, ok := smcp.LookupProfile(c.protocol); ok {
		return v
	}
	return smcp.V02 // New checked the protocol
}

// profileEvents are the routed events of the computer's profile (the
// protocol table's version dimension).
func (c *Computer) profileEvents() []*smcp.EventInfo {
	return smcp.ProfileOf(c.version()).Events(smcp.Routed)
}

// getResourcesRet is the answer of client:get_resources (GetResourcesRet).
type getResourcesRet struct {
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"next_cursor,omitempty"`
	ReqID      string          `json:"req_id"`
}

// handleGetResources lists one page of a server's resources, by bundle id
// (PROTOCOL-0.4.md §4, §7 C3): MCP resources/list forwarded with the
// agent's cursor and returned unfiltered. An unknown (or disabled) bundle
// id is 4014, a server without the resources capability 4015; both carry
// mcp_server (and capability) beside code and message.
func (c *Computer) handleGetResources(ctx context.Context, req *smcpv1.GetResourcesReq) (any, error) {
	id := req.GetMcpServer()
	if id == "" {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "missing %q", "mcp_server")
	}
	s, ok := c.bundleOwner(id)
	if !ok || s.State == servers.StateDisabled {
		return nil, smcp.Errorf(smcp.CodeMCPServerNotFound, "no MCP server with bundle id %q on this computer", id).
			WithFields(map[string]any{"mcp_server": id})
	}
	if s.State != servers.StateConnected {
		return nil, smcp.Errorf(smcp.CodeInternal, "MCP server %q is %s", id, s.State).WithFields(map[string]any{"mcp_server": id})
	}
	if !s.ListsResources {
		return nil, smcp.Errorf(smcp.CodeMCPCapabilityNotSupported, "MCP server %q has no resources capability", id).
			WithFields(map[string]any{"mcp_server": id, "capability": "resources"})
	}
	res, err := c.servers.ListResources(ctx, s.Name, req.GetCursor())
	if err != nil {
		if errors.Is(err, servers.ErrNotConnected) || errors.Is(err, servers.ErrUnknownServer) {
			return nil, smcp.Errorf(smcp.CodeInternal, "MCP server %q is not connected", id).WithFields(map[string]any{"mcp_server": id})
		}
		return nil, smcp.Errorf(smcp.CodeInternal, "resources/list on MCP server %q: %v", id, err).WithFields(map[string]any{"mcp_server": id})
	}
	out := getResourcesRet{Resources: res.Resources, NextCursor: res.NextCursor, ReqID: req.GetReqId()}
	if out.Resources == nil {
		out.Resources = []*mcp.Resource{}
	}
	return out, nil
}
