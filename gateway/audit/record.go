// Package audit writes the gateway's audit trail: one Record per routed
// request and per security event, never holding an argument or result value
// (at most their SHA-256), to JSON lines (a file rotated by size, or stdout)
// and OTLP logs.
//
// Writing never holds a call: records wait in a bounded queue for one
// writer goroutine; when the queue is full they are dropped and counted
// (smcp_audit_dropped_total), with one WARN a minute while it lasts. A
// gateway whose audit is required refuses calls instead while its sinks
// cannot write (Logger.Ready). Close drains the queue.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Outcomes other than an SMCP error code (written as its number, e.g.
// "403").
const (
	OutcomeOK        = "ok"
	OutcomeTimeout   = "timeout"
	OutcomeCancelled = "cancelled"
)

// Record is one line of the audit trail. Empty fields are left out.
type Record struct {
	Time  time.Time `json:"time"`
	Node  string    `json:"node,omitempty"`
	Front string    `json:"front,omitempty"`
	Event string    `json:"event"`
	// Principal is the key's id, or a token's issuer and subject (also
	// given apart in Issuer and Subject).
	Principal string `json:"principal,omitempty"`
	Issuer    string `json:"issuer,omitempty"`
	Subject   string `json:"subject,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Office    string `json:"office,omitempty"`
	Computer  string `json:"computer,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Resource is what a request reads: a resource's URI, a window, a
	// skill (skill://name), "dpe://" for the finder.
	Resource string `json:"resource,omitempty"`
	// Outcome is OutcomeOK, OutcomeTimeout, OutcomeCancelled or the SMCP
	// error code; see OutcomeOf.
	Outcome string `json:"outcome"`
	// Reason names what refused a call (a rule, a quota bound), never
	// another principal's rule.
	Reason string `json:"reason,omitempty"`
	// Duration is written as duration_ms, a number of milliseconds.
	Duration  time.Duration `json:"-"`
	BytesIn   int64         `json:"bytes_in"`
	BytesOut  int64         `json:"bytes_out"`
	RequestID string        `json:"request_id,omitempty"`
	TraceID   string        `json:"trace_id,omitempty"`
	// ArgsSHA256 and ResultSHA256 are the hex SHA-256 of the arguments
	// and result, when the operator asked for them (Hash); the values
	// themselves are never recorded.
	ArgsSHA256   string `json:"args_sha256,omitempty"`
	ResultSHA256 string `json:"result_sha256,omitempty"`
}

// OutcomeOf names err's outcome: OutcomeOK for nil, OutcomeTimeout for a
// deadline (or the SMCP 408), OutcomeCancelled for a caller that went
// away, the code of an *smcp.Error, else "500".
func OutcomeOf(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	}
	if e, ok := smcp.AsError(err); ok {
		if e.Code == smcp.CodeTimeout {
			return OutcomeTimeout
		}
		return strconv.Itoa(e.Code)
	}
	return strconv.Itoa(smcp.CodeInternal)
}

// Hash is the hex SHA-256 of an argument or result, for a record of an
// operator who asked for them.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
