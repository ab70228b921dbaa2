package smcp

import (
	"errors"
	"fmt"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Protocol error codes (PROTOCOL.md §4).
const (
	CodeBadRequest      = 400
	CodeUnauthenticated = 401
	CodeForbidden       = 403
	CodeNotFound        = 404
	CodeTimeout         = 408
	CodeInternal        = 500
	// CodeNotSupported: the computer answered a request with nothing (an
	// empty ack, null) or with a bare value that is no answer at all —
	// how a computer without a handler for the event (an SDK 0.1.x
	// computer asked for its Finder) replies. A gateway extension: the
	// request is valid, this computer does not serve it.
	CodeNotSupported    = 501
	CodeVersionMismatch = 4008
	CodeNotInOffice     = 4103
	// Room codes of 0.5 (PROTOCOL-0.5.md): the office's seat of the role
	// is taken (4101), a request names an office other than the caller's
	// (4104), an agent joins while in another office (4106).
	CodeRoomFull        = 4101
	CodeCrossOffice     = 4104
	CodeAlreadyInOffice = 4106
	// Codes of the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §6).
	CodeToolNotFound               = 4001
	CodeToolExecutionFailed        = 4003
	CodeToolAuthorizationRequired  = 4006
	CodeToolAuthorizationFailed    = 4007
	CodeMCPServerNotFound          = 4014
	CodeMCPCapabilityNotSupported  = 4015
	CodeInvalidSkillName           = 4016
	CodeSkillResourceNotAccessible = 4017
	CodeBlobNotAccessible          = 4018
	CodeBlobWriteFailed            = 4019
	CodeDocumentNotFound           = 4201
	CodePageOutOfRange             = 4202
	CodeElementNotFound            = 4203
	CodeInvalidDPEURI              = 4204
)

// Error is the flat protocol error: {"code": int, "message": string, "details"?: object}.
type Error struct {
	Code    int
	Message string
	Details map[string]any
	// Fields are the code-specific top-level fields of PROTOCOL-0.4.md §6
	// (mcp_server and capability of 4014/4015; server_version,
	// min_supported and max_supported of 4008), written beside code and
	// message. Keys of the flat error itself are never overwritten.
	Fields map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("smcp error %d: %s", e.Code, e.Message) }

// Errorf makes an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(details map[string]any) *Error {
	c := *e
	c.Details = details
	return &c
}

// AsError finds an *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Proto converts e to its protobuf form. Details that cannot be represented
// as a Struct are dropped rather than failing the error path.
func (e *Error) Proto() *smcpv1.Error {
	p := &smcpv1.Error{Code: int32(e.Code), Message: e.Message}
	if len(e.Details) > 0 {
		if s, err := structpb.NewStruct(e.Details); err == nil {
			p.Details = s
		}
	}
	return p
}

// ErrorFromProto converts the protobuf form to an *Error.
func ErrorFromProto(p *smcpv1.Error) *Error {
	e := &Error{Code: int(p.GetCode()), Message: p.GetMessage()}
	if p.GetDetails() != nil {
		e.Details = p.GetDetails().AsMap()
	}
	return e
}

// WithFields returns a copy of e carrying code-specific top-level fields.
func (e *Error) WithFields(fields map[string]any) *Error {
	c := *e
	c.Fields = fields
	return &c
}

// Wire returns the flat JSON object form of e, ready to be sent as an ack.
func (e *Error) Wire() map[string]any {
	m := make(map[string]any, 3+len(e.Fields))
	for k, v := range e.Fields {
		m[k] = v
	}
	m["code"], m["message"] = e.Code, e.Message
	if len(e.Details) > 0 {
		m["details"] = e.Details
	} else {
		delete(m, "details")
	}
	return m
}
