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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/computer/config"
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
	// the tool's own entry is configured.
	Meta *config.ToolMeta
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
			e := &Entry{Name: t.Name, Server: s.Server, Tool: t, Meta: Effective(s.Config.DefaultToolMeta, s.Config.ToolMeta[t.Name])}
			if e.Meta != nil && e.Meta.Alias != nil && *e.Meta.Alias != "" {
				e.Name = *e.Meta.Alias
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

// Effective shallow-merges a tool's own ToolMeta over the default: the
// tool's non-null fields win. Nil when both are nil.
func Effective(def *config.ToolMeta, own config.ToolMeta) *config.ToolMeta {
	zero := own.AutoApply == nil && own.Alias == nil && own.Tags == nil && own.RetObjectMapper == nil
	if def == nil && zero {
		return nil
	}
	var m config.ToolMeta
	if def != nil {
		m = *def
	}
	if own.AutoApply != nil {
		m.AutoApply = own.AutoApply
	}
	if own.Alias != nil {
		m.Alias = own.Alias
	}
	if own.Tags != nil {
		m.Tags = own.Tags
	}
	if own.RetObjectMapper != nil {
		m.RetObjectMapper = own.RetObjectMapper
	}
	return &m
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
	// The tool's own _meta first, flattened: the protocol keys below win.
	for k, v := range e.Tool.Meta {
		t.Meta[k] = flatValue(v)
	}
	if e.Tool.Annotations != nil {
		b, _ := json.Marshal(e.Tool.Annotations)
		t.Meta["MCP_TOOL_ANNOTATION"] = string(b)
	}
	if e.Meta != nil {
		t.Meta["a2c_tool_meta"] = e.MetaJSON()
	}
	return t
}

// MetaJSON is the effective ToolMeta as a JSON string ("" when none).
func (e *Entry) MetaJSON() string {
	if e.Meta == nil {
		return ""
	}
	b, _ := json.Marshal(e.Meta)
	return string(b)
}

// flatValue keeps scalars and lists of strings; anything else becomes its
// JSON text, since SMCPTool.meta is flat.
func flatValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int64, json.Number:
		return x
	case []string:
		return x
	case []any:
		strs := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				b, _ := json.Marshal(x)
				return string(b)
			}
			strs = append(strs, s)
		}
		return strs
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
