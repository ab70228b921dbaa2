package dpeuri

import (
	"fmt"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Rule names the validation rule a URI failed; it is the "rule" detail of
// the 4204 error.
type Rule string

// The eight rules of seed 000, in its order.
const (
	RuleScheme     Rule = "scheme"     // 1. scheme is dpe
	RuleHost       Rule = "host"       // 2. host is not empty
	RuleSubPath    Rule = "sub_path"   // 3. pages/{non-negative int} or elements/{non-empty}
	RuleFormat     Rule = "format"     // 4. json | markdown | text
	RuleDepth      Rule = "depth"      // 5. metadata | pages
	RuleOffset     Rule = "offset"     // 6. non-negative integer
	RuleLimit      Rule = "limit"      // 7. integer in [1, 100]
	RuleCategories Rule = "categories" // 8. comma list of element categories
)

// Well-formedness the seed takes for granted, reported with the same code.
const (
	RuleDocRef   Rule = "doc_ref"  // non-empty before a sub-path, valid percent-encoding
	RuleQuery    Rule = "query"    // a query url.ParseQuery accepts
	RuleFragment Rule = "fragment" // no '#' fragment
)

// maxDetailURI bounds the URI echoed in error details: a caller may send
// anything, and the error travels back over the wire.
const maxDetailURI = 2048

func invalid(raw string, rule Rule, format string, args ...any) *smcp.Error {
	shown := raw
	if len(shown) > maxDetailURI {
		shown = shown[:maxDetailURI] + "..."
	}
	// Details go through structpb, which refuses invalid UTF-8.
	shown = strings.ToValidUTF8(shown, "\uFFFD")
	return &smcp.Error{
		Code:    smcp.CodeInvalidDPEURI,
		Message: fmt.Sprintf("invalid dpe URI (rule %s): %s", rule, fmt.Sprintf(format, args...)),
		Details: map[string]any{"uri": shown, "rule": string(rule)},
	}
}

// RuleOf returns the rule of a 4204 error made by this package.
func RuleOf(err error) (Rule, bool) {
	e, ok := smcp.AsError(err)
	if !ok || e.Code != smcp.CodeInvalidDPEURI {
		return "", false
	}
	r, ok := e.Details["rule"].(string)
	return Rule(r), ok
}
