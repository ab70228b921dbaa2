package policy

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// The variables of a rule's expression:
//
//	principal  {id, roles, offices, claims}: claims are a token's (empty for a key)
//	office, computer, event  strings (event: "client:tool_call", ...)
//	tool       {name, exposed, bundle, tags}: empty strings and list when the
//	           call is not a tool's
//	resource   the URI of a resource read ("" otherwise)
//	args       the tool call's arguments as JSON values ({} when none)
var celVars = []string{"principal", "office", "computer", "event", "tool", "resource", "args"}

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("principal", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("office", cel.StringType),
		cel.Variable("computer", cel.StringType),
		cel.Variable("event", cel.StringType),
		cel.Variable("tool", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("resource", cel.StringType),
		cel.Variable("args", cel.DynType),
	)
})

type program struct {
	prg cel.Program
}

func compileCEL(expr string) (*program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("cel: %w", iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("cel: the expression is a %s, not a bool", t)
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("cel: %w", err)
	}
	return &program{prg: prg}, nil
}

// eval is true when the expression is: one that fails (a missing field of
// args: write has(args.path) for an optional one) or is not a bool does
// not match.
func (p *program) eval(ev *evalCtx) bool {
	out, _, err := p.prg.Eval(activation{ev})
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	return ok && b
}

// activation resolves the variables from the call, each made when first
// read.
type activation struct{ ev *evalCtx }

func (a activation) ResolveName(name string) (any, bool) {
	c := a.ev.call
	switch name {
	case "principal":
		if a.ev.principal == nil {
			p := c.Principal
			claims := p.Claims
			if claims == nil {
				claims = map[string]any{}
			}
			a.ev.principal = map[string]any{"id": p.ID, "roles": nonNil(p.Roles), "offices": nonNil(p.Offices), "claims": claims}
		}
		return a.ev.principal, true
	case "office":
		return c.Office, true
	case "computer":
		return c.Computer, true
	case "event":
		return c.Event, true
	case "tool":
		if a.ev.tool == nil {
			a.ev.tool = toolMap(c.Tool)
		}
		return a.ev.tool, true
	case "resource":
		return c.URI, true
	case "args":
		return a.ev.argsValue(), true
	}
	return nil, false
}

func (activation) Parent() interpreter.Activation { return nil }

// toolMap is the tool variable: its fields made as they are read.
func toolMap(t *core.ToolView) *lazyMap {
	if t == nil {
		t = &core.ToolView{}
	}
	return &lazyMap{
		find: func(key string) (ref.Val, bool) {
			switch key {
			case "name":
				return types.String(t.Name), true
			case "exposed":
				return types.String(t.Exposed), true
			case "bundle":
				return types.String(t.BundleID), true
			case "tags":
				return types.NewStringList(types.DefaultTypeAdapter, nonNil(t.Tags)), true
			}
			return nil, false
		},
		whole: func() map[string]any {
			return map[string]any{"name": t.Name, "exposed": t.Exposed, "bundle": t.BundleID, "tags": nonNil(t.Tags)}
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
