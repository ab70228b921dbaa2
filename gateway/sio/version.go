package sio

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// versions is the handshake's version check (PROTOCOL-0.4.md §2-§3): which
// profiles the gateway serves on its one Engine.IO path, and whether a
// client that sends no a2c_version is taken as a 0.2 (tag-era) client.
type versions struct {
	enabled []smcp.Version // oldest first
	lenient bool           // a missing a2c_version means 0.2, when 0.2 is enabled
}

func newVersions(enabled []smcp.Version, requireVersion bool) versions {
	if len(enabled) == 0 {
		enabled = smcp.DefaultVersions()
	}
	enabled = slices.Clone(enabled)
	slices.SortFunc(enabled, smcp.Version.Compare)
	enabled = slices.Compact(enabled)
	return versions{enabled: enabled, lenient: !requireVersion && slices.Contains(enabled, smcp.V02)}
}

// refusal is a refused handshake: HTTP 400 with a flat body, and the
// X-A2C-Error-Code header for 4008 (H2).
type refusal struct {
	Code          int    `json:"code"`
	Message       string `json:"message"`
	ServerVersion string `json:"server_version,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
	MinSupported  string `json:"min_supported,omitempty"`
	MaxSupported  string `json:"max_supported,omitempty"`
	Details       *struct {
		Supported []string `json:"supported"`
	} `json:"details,omitempty"`
}

// pick chooses the profile of a handshake from its query (H3-H5, P4-P5).
// A compatible client gets the newest enabled profile it is compatible with
// (in v0.x there is one; from v1.0 several minors may be).
func (vs versions) pick(q url.Values) (core.Protocol, *refusal) {
	raw, present := q["a2c_version"]
	if !present || (len(raw) == 1 && raw[0] == "") {
		if vs.lenient {
			return core.Protocol{Version: smcp.V02}, nil
		}
		return core.Protocol{}, &refusal{Code: smcp.CodeBadRequest, Message: "Missing a2c_version query parameter"}
	}
	if len(raw) != 1 {
		return core.Protocol{}, &refusal{Code: smcp.CodeBadRequest, Message: "Invalid a2c_version: " + strings.Join(raw, ",")}
	}
	cv, ok := smcp.ParseClientVersion(raw[0])
	if !ok {
		return core.Protocol{}, &refusal{Code: smcp.CodeBadRequest, Message: "Invalid a2c_version: " + raw[0]}
	}
	for i := len(vs.enabled) - 1; i >= 0; i-- {
		if cv.CompatibleWith(vs.enabled[i]) {
			return core.Protocol{Version: vs.enabled[i], Announced: raw[0]}, nil
		}
	}
	lo, hi := vs.enabled[0], vs.enabled[len(vs.enabled)-1]
	r := &refusal{Code: smcp.CodeVersionMismatch, Message: "Protocol version mismatch",
		ServerVersion: hi.Full(), ClientVersion: raw[0],
		MinSupported: lo.String() + ".0", MaxSupported: hi.String() + ".999"}
	r.Details = &struct {
		Supported []string `json:"supported"`
	}{}
	for _, v := range vs.enabled {
		r.Details.Supported = append(r.Details.Supported, v.String())
	}
	return core.Protocol{}, r
}

// check wraps the Engine.IO handler: a request that opens a session (no sid:
// a polling handshake or a direct WebSocket upgrade, which is a plain GET
// until it is upgraded, so it gets the same 400 byte for byte, H6) is
// checked before Engine.IO sees it (H1, H7). A request with a sid belongs to
// a session that passed.
func (vs versions) check(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("sid") == "" {
			if _, ref := vs.pick(q); ref != nil {
				b, _ := json.Marshal(ref)
				w.Header().Set("Content-Type", "application/json")
				if ref.Code == smcp.CodeVersionMismatch {
					w.Header().Set("X-A2C-Error-Code", "4008")
				}
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write(b)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
