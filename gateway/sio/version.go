package sio

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// versionCheck refuses a handshake whose a2c_version is not 0.2.x
// (PROTOCOL.md §1) before Engine.IO sees it.
func versionCheck(require bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, present := r.URL.Query()["a2c_version"]
		switch {
		case present && compatible(v[0]):
		case !present && !require:
		default:
			client := ""
			if present {
				client = v[0]
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-A2C-Error-Code", "4008")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"code":           smcp.CodeVersionMismatch,
				"message":        "incompatible protocol version: this server speaks " + smcp.ProtocolVersion,
				"server_version": smcp.ProtocolVersion,
				"client_version": client,
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// compatible reports whether v is MAJOR.MINOR.PATCH with the server's
// MAJOR.MINOR.
func compatible(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	want := strings.Split(smcp.ProtocolVersion, ".")
	return trimZeros(parts[0]) == want[0] && trimZeros(parts[1]) == want[1]
}

func trimZeros(s string) string {
	if t := strings.TrimLeft(s, "0"); t != "" {
		return t
	}
	return "0"
}
