package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/itchyny/gojq"
)

// maxJQOutputs bounds the values a result_jq program may emit: a program
// like `range(1e9)` must end in an error, not in the computer's memory.
const maxJQOutputs = 10000

// applyJQ runs a server's result_jq program on one CallToolResult (its JSON
// as the MCP server sent it, "_meta" included). The program's single output
// becomes the result: an object with a "content" list is taken as a
// CallToolResult; any other value is returned as one text content (a
// string as is, anything else as JSON; an object also as
// structuredContent), keeping the original isError. Several outputs are
// taken as one list.
func applyJQ(ctx context.Context, code *gojq.Code, result map[string]any, server, tool string) (map[string]any, error) {
	var outs []any
	iter := code.RunWithContext(ctx, result, server, tool)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break // `halt`: stop without an error
			}
			return nil, err
		}
		if len(outs) == maxJQOutputs {
			return nil, fmt.Errorf("more than %d outputs", maxJQOutputs)
		}
		outs = append(outs, v)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var v any
	switch len(outs) {
	case 0:
		return nil, errors.New("the program produced no value")
	case 1:
		v = outs[0]
	default:
		v = outs
	}
	// Back through JSON: gojq may produce ints and big ints, the wire
	// form wants plain JSON values.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("output is not JSON: %w", err)
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return nil, fmt.Errorf("output is not JSON: %w", err)
	}
	if obj, ok := plain.(map[string]any); ok {
		if content, ok := obj["content"].([]any); ok {
			for i, c := range content {
				if m, ok := c.(map[string]any); !ok || m["type"] == nil {
					return nil, fmt.Errorf("output content[%d] is not an MCP content object with a type", i)
				}
			}
			if isErr, ok := obj["isError"]; ok {
				if _, isBool := isErr.(bool); !isBool {
					return nil, errors.New("output isError is not a boolean")
				}
			} else {
				obj["isError"] = false
			}
			return obj, nil
		}
	}
	text, ok := plain.(string)
	if !ok {
		text = string(b)
	}
	out := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": result["isError"] == true,
	}
	if obj, ok := plain.(map[string]any); ok {
		out["structuredContent"] = obj
	}
	return out, nil
}
