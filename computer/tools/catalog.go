// Package tools aggregates the tools of a computer's MCP servers into the
// one list agents see (aliases applied, forbidden tools hidden, name clashes
// refused) and executes tool calls: confirmation, per-call timeout,
// cancellation by the agent, and the call history that orders servers in
// Desktop and Finder.
package tools

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/smcpgw/smcp-gateway/computer/config"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/bundleid"
)

// ServerTools is what the catalog needs to know of one server.
type ServerTools struct {
	Server string
	// BundleID is the server's bundle id (BuildBundled only).
	BundleID string
	Config   *config.Resolved
	Tools    []*mcp.Tool
}

// Entry is one callable tool.
type Entry struct {
	// Name is the name agents list and call (the alias when set).
	Name   string
	Server string
	Tool   *mcp.Tool
	// Meta is the effective ToolMeta; nil when neither default_tool_meta nor
	// the tool's own entry sets anything.
	Meta *smcpv1.ToolMeta
	// ResultJQ is the server's compiled result_jq, applied to every result
	// of the tool (nil: none).
	ResultJQ *gojq.Code
	// BundleID is the owning server's bundle id (0.3 and 0.4 catalogs).
	BundleID string
	// metaJSON is the canonical a2c_tool_meta string of a 0.3/0.4 catalog
	// ("" when the tool carries none).
	metaJSON string
	bundled  bool
}

// Clash is a listed name that more than one tool would take.
type Clash struct {
	Name  string
	Tools []string // "server/tool"
}

// Error explains the clash and how to fix it.
func (c Clash) Error() string {
	return fmt.Sprintf("tool name %q is taken by %s; set tool_meta.<tool>.alias on all but one of them "+
		"(the clashing tools are not listed and cannot be called until then)", c.Name, strings.Join(c.Tools, " and "))
}

// Catalog is an immutable view of the callable tools.
type Catalog struct {
	entries map[string]*Entry
	clashes map[string]Clash
	names   []string
	bundled bool
}

// Bundled reports whether the catalog names tools by bundle id (the 0.3
// and 0.4 profiles).
func (c *Catalog) Bundled() bool { return c.bundled }

// Build aggregates the servers' tools as the 0.2 profile lists them: by
// MCP name or alias. Clashing names are logged as errors and left out.
func Build(servers []ServerTools, log *slog.Logger) *Catalog {
	byName := map[string][]*Entry{}
	for _, s := range servers {
		if s.Config == nil {
			continue
		}
		for _, t := range s.Tools {
			if slices.Contains(s.Config.ForbiddenTools, t.Name) {
				continue
			}
			own := s.Config.ToolMeta[t.Name]
			e := &Entry{Name: t.Name, Server: s.Server, Tool: t, Meta: smcp.EffectiveToolMeta(toProto(s.Config.DefaultToolMeta), toProto(&own)),
				ResultJQ: s.Config.ResultJQCode}
			if alias := e.Meta.GetAlias(); alias != "" {
				e.Name = alias
			}
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	return assemble(byName, false, log)
}

// BuildBundled aggregates the servers' tools as the 0.3 and 0.4 profiles
// list them (PROTOCOL-0.4.md §5.1-§5.4): each under its exposed name,
// bundle id + "__" + (alias ?? MCP name), one mapping that get_tools lists
// and tool_call looks up. forbidden_tools matches the MCP name or the
// exposed name. ToolMeta has three layers: the tool's own entry, the
// server's default_tool_meta, and the tags the MCP server declares in the
// tool's _meta (a malformed declaration is discarded with a warning; the
// tool stays listed). Two tools of one bundle aliased to one name clash:
// both are left out and reported, as in 0.2.
func BuildBundled(servers []ServerTools, log *slog.Logger) *Catalog {
	byName := map[string][]*Entry{}
	for _, s := range servers {
		if s.Config == nil || s.BundleID == "" {
			continue
		}
		for _, t := range s.Tools {
			if slices.Contains(s.Config.ForbiddenTools, t.Name) || slices.Contains(s.Config.ForbiddenTools, bundleid.ExposedName(s.BundleID, t.Name)) {
				continue
			}
			var own *config.ToolMeta
			if m, ok := s.Config.ToolMeta[t.Name]; ok {
				own = &m
			}
			tags, declared, err := smcp.DeclaredToolMetaTags(t.Meta)
			if err != nil {
				if log != nil {
					log.Warn("tool's declared a2c_tool_meta ignored", "server", s.Server, "tool", t.Name, "err", err)
				}
				declared = false
			}
			e := &Entry{Name: bundleid.ExposedName(s.BundleID, t.Name), Server: s.Server, BundleID: s.BundleID, Tool: t,
				ResultJQ: s.Config.ResultJQCode, bundled: true}
			if tm, ok := smcp.LayeredToolMeta(own, s.Config.DefaultToolMeta, tags, declared); ok {
				if e.metaJSON, err = smcp.CanonicalToolMetaJSON(tm); err != nil && log != nil {
					log.Warn("tool meta not encodable; left out", "server", s.Server, "tool", t.Name, "err", err)
				}
				if e.Meta, err = tm.Proto(); err != nil {
					e.Meta = nil
				}
				if tm.Alias != nil && *tm.Alias != "" {
					e.Name = bundleid.ExposedName(s.BundleID, *tm.Alias)
				}
			}
			if e.Name != bundleid.ExposedName(s.BundleID, t.Name) && slices.Contains(s.Config.ForbiddenTools, e.Name) {
				continue
			}
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	return assemble(byName, true, log)
}

func assemble(byName map[string][]*Entry, bundled bool, log *slog.Logger) *Catalog {
	c := &Catalog{entries: map[string]*Entry{}, clashes: map[string]Clash{}, bundled: bundled}
	for name, es := range byName {
		if len(es) == 1 {
			c.entries[name] = es[0]
			c.names = append(c.names, name)
			continue
		}
		cl := Clash{Name: name}
		for _, e := range es {
			cl.Tools = append(cl.Tools, e.Server+"/"+e.Tool.Name)
		}
		sort.Strings(cl.Tools)
		c.clashes[name] = cl
		if log != nil {
			log.Error("tool name clash", "err", cl.Error())
		}
	}
	sort.Strings(c.names)
	return c
}

// toProto converts a configured ToolMeta to the protocol type the smcp
// helpers merge and render. The config decoder already checked its shape.
func toProto(m *config.ToolMeta) *smcpv1.ToolMeta {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	out := &smcpv1.ToolMeta{}
	if err := smcp.Unmarshal(b, out); err != nil {
		return nil
	}
	return out
}

// Lookup finds a tool by its listed name. A clashing name returns the
// Clash as the error.
func (c *Catalog) Lookup(name string) (*Entry, error) {
	if e, ok := c.entries[name]; ok {
		return e, nil
	}
	if cl, ok := c.clashes[name]; ok {
		return nil, cl
	}
	return nil, fmt.Errorf("tool %q not found", name)
}

// Clashes lists the clashing names.
func (c *Catalog) Clashes() []Clash {
	out := make([]Clash, 0, len(c.clashes))
	for _, cl := range c.clashes {
		out = append(out, cl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Entries lists the callable tools sorted by listed name.
func (c *Catalog) Entries() []*Entry {
	out := make([]*Entry, len(c.names))
	for i, n := range c.names {
		out[i] = c.entries[n]
	}
	return out
}

// SMCPTool is the wire form of a listed tool (PROTOCOL.md §5).
type SMCPTool struct {
	Name string `json:"name"`
	// BundleID is set in the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §5.1).
	BundleID     string         `json:"bundle_id,omitempty"`
	Description  string         `json:"description"`
	ParamsSchema any            `json:"params_schema"`
	ReturnSchema any            `json:"return_schema"`
	Meta         map[string]any `json:"meta"`
}

// Wire returns the tools as client:get_tools lists them.
func (c *Catalog) Wire() []SMCPTool {
	out := make([]SMCPTool, 0, len(c.names))
	for _, e := range c.Entries() {
		out = append(out, e.Wire())
	}
	return out
}

// Wire returns the SMCPTool of one entry.
func (e *Entry) Wire() SMCPTool {
	t := SMCPTool{
		Name:         e.Name,
		Description:  e.Tool.Description,
		ParamsSchema: e.Tool.InputSchema,
		ReturnSchema: e.Tool.OutputSchema,
		Meta:         map[string]any{},
	}
	if t.ParamsSchema == nil {
		t.ParamsSchema = map[string]any{"type": "object"}
	}
	var annotations any
	if e.Tool.Annotations != nil {
		annotations = e.Tool.Annotations
	}
	if e.bundled {
		// The computer's reconciled ToolMeta replaces the server's own
		// declaration, or removes it (§5.4); other _meta keys pass.
		t.BundleID = e.BundleID
		own := maps.Clone(e.Tool.Meta)
		delete(own, smcp.MetaToolMeta)
		if meta, err := smcp.BuildToolMeta(nil, annotations, own); err == nil {
			t.Meta = meta.AsMap()
		}
		if e.metaJSON != "" {
			t.Meta[smcp.MetaToolMeta] = e.metaJSON
		}
		return t
	}
	if meta, err := smcp.BuildToolMeta(e.Meta, annotations, e.Tool.Meta); err == nil {
		t.Meta = meta.AsMap()
	}
	return t
}

// MetaJSON is the effective ToolMeta as a JSON string ("" when none).
func (e *Entry) MetaJSON() string {
	if e.bundled {
		return e.metaJSON
	}
	if e.Meta == nil {
		return ""
	}
	s, _ := smcp.ToolMetaJSON(e.Meta)
	return s
}
