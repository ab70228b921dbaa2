// Package policy decides which tools and resources a caller may call: the
// rule sets of the keys file, which keys (rules:) and token claims name,
// applied as the core's Guard so that every front end obeys them.
//
//	rule_sets:
//	  echo-only:
//	    - allow: {tool: echo}
//	  safe:
//	    - deny: {computer: "prod-*", tool: "shell*"}
//	    - deny: {cel: 'tool.name == "read_file" && args.path.startsWith("/etc")'}
//	    - deny: {resource: "dpe://"}
//	keys:
//	  - {id: echo-only, key: echo-only-key, rules: [echo-only]}
//
// A rule matches a call when every field it sets matches: computer,
// office, tool (the tool as its computer names it), exposed (the name it
// is called by, 0.3+), bundle, tag (any of the tool's ToolMeta tags) are
// glob patterns (path.Match); resource is a URI prefix (window://, dpe://,
// skill://); cel is an expression (github.com/google/cel-go) that must be
// true. Deny wins. A caller with allow rules may call only the tools and
// read only the resources an allow matches. A caller without rule sets is
// bound by nothing.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/cel-go/common/types/ref"
	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Match is what a rule matches. Empty fields match anything.
type Match struct {
	Office   string `yaml:"office"`
	Computer string `yaml:"computer"`
	Tool     string `yaml:"tool"`
	Exposed  string `yaml:"exposed"`
	Bundle   string `yaml:"bundle"`
	Tag      string `yaml:"tag"`
	Resource string `yaml:"resource"`
	CEL      string `yaml:"cel"`
}

// Rule is one entry of a rule set: an allow or a deny.
type Rule struct {
	Allow *Match `yaml:"allow"`
	Deny  *Match `yaml:"deny"`
}

// File is the governance part of a keys file.
type File struct {
	RuleSets map[string][]Rule `yaml:"rule_sets"`
	Keys     []struct {
		ID    string   `yaml:"id"`
		Rules []string `yaml:"rules"`
	} `yaml:"keys"`
}

// Rules are the compiled rule sets of one keys file.
type Rules struct {
	sets map[string]*ruleSet
}

type ruleSet struct {
	name    string
	entries []entry
	allows  bool // has an allow entry
}

type entry struct {
	index int
	allow bool
	m     Match
	prg   *program // nil: no cel
	// tool: the match needs a tool (tool, exposed, bundle or tag set);
	// resource: a URI (resource set).
	tool, resource bool
}

// LoadFile reads the rule sets of a keys file and checks that every rule
// set a key names exists. A file without rule_sets has none.
func LoadFile(path string) (*Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	return Parse(path, b)
}

// Parse is LoadFile of the bytes b read from path (a reload has them).
func Parse(path string, b []byte) (*Rules, error) {
	var f File
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	r, err := Compile(f.RuleSets)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	for i, k := range f.Keys {
		if err := r.Check(k.Rules); err != nil {
			id := k.ID
			if id == "" {
				id = fmt.Sprintf("key#%d", i)
			}
			return nil, fmt.Errorf("keys file %s: key %q: %w", path, id, err)
		}
	}
	return r, nil
}

// Compile checks and compiles rule sets: a bad pattern or expression is
// refused, naming its rule set and entry.
func Compile(sets map[string][]Rule) (*Rules, error) {
	r := &Rules{sets: map[string]*ruleSet{}}
	for _, name := range slicesSorted(sets) {
		rs := &ruleSet{name: name}
		for i, rule := range sets[name] {
			e, err := compileEntry(i, rule)
			if err != nil {
				return nil, fmt.Errorf("rule set %q entry %d: %w", name, i, err)
			}
			rs.allows = rs.allows || e.allow
			rs.entries = append(rs.entries, e)
		}
		r.sets[name] = rs
	}
	return r, nil
}

func slicesSorted(m map[string][]Rule) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func compileEntry(i int, rule Rule) (entry, error) {
	e := entry{index: i}
	switch {
	case rule.Allow != nil && rule.Deny != nil:
		return e, fmt.Errorf("an entry is an allow or a deny, not both")
	case rule.Allow != nil:
		e.allow, e.m = true, *rule.Allow
	case rule.Deny != nil:
		e.m = *rule.Deny
	default:
		return e, fmt.Errorf("an entry needs allow: or deny:")
	}
	m := e.m
	if m == (Match{}) {
		return e, fmt.Errorf("an empty match would match everything: say what it matches")
	}
	for _, p := range []struct{ field, pattern string }{
		{"office", m.Office}, {"computer", m.Computer}, {"tool", m.Tool}, {"exposed", m.Exposed},
		{"bundle", m.Bundle}, {"tag", m.Tag},
	} {
		if _, err := path.Match(p.pattern, ""); err != nil {
			return e, fmt.Errorf("%s: bad pattern %q: %w", p.field, p.pattern, err)
		}
	}
	e.tool = m.Tool != "" || m.Exposed != "" || m.Bundle != "" || m.Tag != ""
	e.resource = m.Resource != ""
	if e.tool && e.resource {
		return e, fmt.Errorf("a rule matches tools or resources, not both")
	}
	if m.CEL != "" {
		prg, err := compileCEL(m.CEL)
		if err != nil {
			return e, err
		}
		e.prg = prg
	}
	return e, nil
}

// Check reports a rule set name that the rules do not define.
func (r *Rules) Check(names []string) error {
	for _, n := range names {
		if r == nil || r.sets[n] == nil {
			return fmt.Errorf("rule set %q is not defined (rule_sets)", n)
		}
	}
	return nil
}

// Empty reports rules without any rule set: nothing to apply.
func (r *Rules) Empty() bool { return r == nil || len(r.sets) == 0 }

// Names are the rule sets' names, sorted.
func (r *Rules) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.sets))
	for n := range r.sets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Engine is the core.Guard of the rules; Set replaces them (a reload of
// the keys file) atomically.
type Engine struct {
	rules atomic.Pointer[Rules]
}

// NewEngine makes an Engine of r.
func NewEngine(r *Rules) *Engine {
	e := &Engine{}
	e.Set(r)
	return e
}

// Set replaces the rules; calls admitted from now on are judged by r.
func (e *Engine) Set(r *Rules) {
	if r == nil {
		r = &Rules{}
	}
	e.rules.Store(r)
}

// Admit refuses (403) a call its caller's rule sets deny or, when they
// allow only some tools or resources, do not allow. The refusal names the
// rule set and entry, or the rule sets, of the caller only.
func (e *Engine) Admit(_ context.Context, c *core.Call) (func(core.Outcome), error) {
	if len(c.Principal.RuleSets) == 0 {
		return nil, nil
	}
	return nil, e.rules.Load().decide(c, false)
}

// Visible reports whether c's tool may be called, on the rules alone.
func (e *Engine) Visible(c *core.Call) bool {
	if len(c.Principal.RuleSets) == 0 {
		return true
	}
	return e.rules.Load().decide(c, true) == nil
}

// subject is what kind of thing a call touches.
type subject int

const (
	other subject = iota
	tool
	resource
)

func subjectOf(c *core.Call) subject {
	switch {
	case c.Tool != nil:
		return tool
	case c.URI != "":
		return resource
	}
	return other
}

func (r *Rules) decide(c *core.Call, listing bool) error {
	subj := subjectOf(c)
	var ev *evalCtx // made by the first expression evaluated: most calls need none
	var allows bool
	for _, name := range c.Principal.RuleSets {
		rs := r.sets[name]
		if rs == nil {
			// A reload removed a rule set a token still maps to: deny
			// rather than let the caller through unbound.
			return smcp.Errorf(smcp.CodeForbidden, "rule set %q is not defined", name)
		}
		allows = allows || rs.allows
		for i := range rs.entries {
			en := &rs.entries[i]
			if !en.allow && en.matches(c, subj, &ev, listing) {
				return smcp.Errorf(smcp.CodeForbidden, "%s: denied by rule set %q entry %d", what(c, subj), rs.name, en.index)
			}
		}
	}
	if !allows || subj == other {
		return nil
	}
	for _, name := range c.Principal.RuleSets {
		rs := r.sets[name]
		for i := range rs.entries {
			en := &rs.entries[i]
			if en.allow && en.matches(c, subj, &ev, listing) {
				return nil
			}
		}
	}
	return smcp.Errorf(smcp.CodeForbidden, "%s: not allowed by rule sets %s", what(c, subj), strings.Join(quoted(c.Principal.RuleSets), ", "))
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func what(c *core.Call, subj subject) string {
	switch subj {
	case tool:
		return fmt.Sprintf("tool %q of computer %q", c.Tool.Exposed, c.Computer)
	case resource:
		return fmt.Sprintf("resource %q of computer %q", c.URI, c.Computer)
	}
	return fmt.Sprintf("%s to computer %q", c.Event, c.Computer)
}

func (en *entry) matches(c *core.Call, subj subject, ev **evalCtx, listing bool) bool {
	m := &en.m
	switch {
	case en.tool && subj != tool, en.resource && subj != resource:
		return false
	case !glob(m.Office, c.Office), !glob(m.Computer, c.Computer):
		return false
	}
	if en.tool {
		t := c.Tool
		if !glob(m.Tool, t.Name) || !glob(m.Exposed, t.Exposed) || !glob(m.Bundle, t.BundleID) {
			return false
		}
		if m.Tag != "" && !slices.ContainsFunc(t.Tags, func(tag string) bool { return glob(m.Tag, tag) }) {
			return false
		}
	}
	if en.resource && !strings.HasPrefix(c.URI, m.Resource) {
		return false
	}
	if en.prg != nil {
		if *ev == nil {
			*ev = &evalCtx{call: c, listing: listing}
		}
		return en.prg.eval(*ev)
	}
	return true
}

// glob matches a pattern checked at load; "" matches anything.
func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	if !strings.ContainsAny(pattern, `*?[\`) {
		return pattern == s // path.Match's answer, without its scan
	}
	ok, _ := path.Match(pattern, s)
	return ok
}

// evalCtx is one call's variables for the expressions, made once per call
// and only as far as an expression reads them.
type evalCtx struct {
	call      *core.Call
	listing   bool
	principal map[string]any
	tool      *lazyMap
	args      ref.Val
}

// argsValue is the call's arguments; {} in a listing, where a rule on
// arguments does not hide the tool.
func (ev *evalCtx) argsValue() ref.Val {
	if ev.args == nil {
		a := ev.call.Args
		if len(a) == 0 || ev.listing || string(a) == "null" {
			a = json.RawMessage("{}")
		}
		ev.args = jsonValue(a)
	}
	return ev.args
}
