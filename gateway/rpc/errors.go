package rpc

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// codes maps SMCP error codes to Connect codes.
var codes = map[int]connect.Code{
	smcp.CodeBadRequest:       connect.CodeInvalidArgument,
	smcp.CodeUnauthenticated:  connect.CodeUnauthenticated,
	smcp.CodeForbidden:        connect.CodePermissionDenied,
	smcp.CodeNotFound:         connect.CodeNotFound,
	smcp.CodeTimeout:          connect.CodeDeadlineExceeded,
	smcp.CodeInternal:         connect.CodeInternal,
	smcp.CodeNotSupported:     connect.CodeUnimplemented,
	smcp.CodeVersionMismatch:  connect.CodeFailedPrecondition,
	smcp.CodeNotInOffice:      connect.CodeFailedPrecondition,
	smcp.CodeDocumentNotFound: connect.CodeNotFound,
	smcp.CodePageOutOfRange:   connect.CodeOutOfRange,
	smcp.CodeElementNotFound:  connect.CodeNotFound,
	smcp.CodeInvalidDPEURI:    connect.CodeInvalidArgument,
	core.CodeTooManyPending:   connect.CodeResourceExhausted,
	// The gateway cannot serve for now (a required audit that cannot
	// write): come back later.
	503: connect.CodeUnavailable,
	// 0.3/0.4 (PROTOCOL-0.4.md §6). The skill and blob codes are refined by
	// their details.reason (reasonCodes); these are for other reasons.
	smcp.CodeMCPServerNotFound:          connect.CodeNotFound,
	smcp.CodeMCPCapabilityNotSupported:  connect.CodeUnimplemented,
	smcp.CodeInvalidSkillName:           connect.CodeInvalidArgument,
	smcp.CodeSkillResourceNotAccessible: connect.CodeFailedPrecondition,
	smcp.CodeBlobNotAccessible:          connect.CodeFailedPrecondition,
	// Any failed upload chunk means a new upload from offset 0 (§5.8).
	smcp.CodeBlobWriteFailed: connect.CodeAborted,
}

// reasonCodes refine codes by details.reason, an open enumeration (§6): a
// reason not listed keeps the code's mapping. The Connect code says what the
// caller can do: NotFound ask again for the source (4018 gone: the producer),
// PermissionDenied and InvalidArgument never retry, OutOfRange fix the
// offset, ResourceExhausted back off.
var reasonCodes = map[int]map[string]connect.Code{
	smcp.CodeSkillResourceNotAccessible: {
		"traversal": connect.CodeInvalidArgument,
		"forbidden": connect.CodePermissionDenied,
		"not_found": connect.CodeNotFound,
		"too_large": connect.CodeResourceExhausted,
	},
	smcp.CodeBlobNotAccessible: {
		"invalid_handle": connect.CodeInvalidArgument,
		"forbidden":      connect.CodePermissionDenied,
		"gone":           connect.CodeNotFound,
		"range":          connect.CodeOutOfRange,
	},
	smcp.CodeBlobWriteFailed: {
		"invalid_declaration": connect.CodeInvalidArgument,
		"range":               connect.CodeOutOfRange,
		"too_large":           connect.CodeResourceExhausted,
		"busy":                connect.CodeResourceExhausted,
		"forbidden":           connect.CodePermissionDenied,
		"integrity":           connect.CodeDataLoss,
		"io_error":            connect.CodeInternal,
	},
}

// connectCode is the Connect code of a protocol error.
func connectCode(e *smcp.Error) (connect.Code, bool) {
	if byReason, ok := reasonCodes[e.Code]; ok {
		if reason, _ := e.Details["reason"].(string); reason != "" {
			if code, ok := byReason[reason]; ok {
				return code, true
			}
		}
	}
	code, ok := codes[e.Code]
	return code, ok
}

// toConnect maps an error of the core, of a computer or of this package to a
// *connect.Error carrying the SMCP error as an smcp.v1.Error detail. Context
// errors pass through: connect reports them as Canceled / DeadlineExceeded.
func toConnect(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	e, ok := smcp.AsError(err)
	if !ok {
		// Never leak an internal error's text to the caller.
		e = smcp.Errorf(smcp.CodeInternal, "internal error")
	}
	code, ok := connectCode(e)
	switch {
	case errors.Is(err, core.ErrComputerGone):
		code = connect.CodeUnavailable
	case !ok && e.Code >= 500 && e.Code < 600:
		code = connect.CodeInternal
	case !ok:
		code = connect.CodeUnknown
	}
	out := connect.NewError(code, errors.New(e.Message))
	if d, derr := connect.NewErrorDetail(e.Proto()); derr == nil {
		out.AddDetail(d)
	}
	if wait, ok := core.RetryAfter(e); ok {
		retryAfter(out, wait)
	}
	return out
}

// retryAfter tells a caller refused by a quota when to try again: a
// Retry-After header (whole seconds, rounded up; Connect answers
// ResourceExhausted with HTTP 429) and, for gRPC clients, the standard
// google.rpc.RetryInfo detail; details.retry_after_ms of the smcp.v1.Error
// detail has the exact wait.
func retryAfter(out *connect.Error, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	out.Meta().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	if d, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}); err == nil {
		out.AddDetail(d)
	}
}

// SMCPError returns the smcp.v1.Error detail of an RPC error, if it has one.
// Clients use it to read the protocol code (e.g. 4201) behind a Connect code.
func SMCPError(err error) (*smcp.Error, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if pe, ok := v.(*smcpv1.Error); ok {
				return smcp.ErrorFromProto(pe), true
			}
		}
	}
	return nil, false
}
