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
	"slices"
	"sort"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/computer/config"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// ServerTools is what the catalog needs to know of one server.
type ServerTools struct {
	Server string
	Config *config.Resolved
	Tools  []*mcp.Tool
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
}

// Build aggregates the servers' tools. Clashing names are logged as errors
// and left out.
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
	c := &Catalog{entries: map[string]*Entry{}, clashes: map[string]Clash{}}
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
	Name         string         `json:"name"`
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
	if meta, err := smcp.BuildToolMeta(e.Meta, annotations, e.Tool.Meta); err == nil {
		t.Meta = meta.AsMap()
	}
	return t
}

// MetaJSON is the effective ToolMeta as a JSON string ("" when none).
func (e *Entry) MetaJSON() string {
	if e.Meta == nil {
		return ""
	}
	s, _ := smcp.ToolMetaJSON(e.Meta)
	return s
}
