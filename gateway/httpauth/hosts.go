package httpauth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Rebound reports a request that reached a loopback address under a host
// name that is neither loopback nor one of allowed: a web page using DNS
// rebinding (its own name, resolved to 127.0.0.1) to reach a gateway on
// this machine, which the browser then treats as the page's own origin, so
// that no Origin check stops it. Every front end refuses it (MCP's
// transport rules ask it of MCP servers; the same page would reach
// Socket.IO, the Connect API and the console alike). allowed are host
// names (port aside, case aside) a loopback gateway is reached by on
// purpose: a name in /etc/hosts, a reverse proxy on the same machine that
// keeps the client's Host. A request on any other address is not
// concerned: rebinding needs the victim's browser to reach the address.
func Rebound(r *http.Request, allowed []string) bool {
	if isLoopback(r.Host) {
		return false
	}
	switch local := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		// Asked of the address itself, not of its text made anew per request.
		if local == nil || !local.IP.IsLoopback() {
			return false
		}
	case net.Addr:
		if local == nil || !isLoopback(local.String()) {
			return false
		}
	default:
		return false
	}
	host := hostOf(r.Host)
	for _, a := range allowed {
		if strings.EqualFold(host, a) {
			return false
		}
	}
	return true
}

// ReboundError is the refusal of a Rebound request, for the front end to
// answer in its own form (a 403).
func ReboundError(r *http.Request) *smcp.Error {
	return smcp.Errorf(smcp.CodeForbidden, "host %q refused: a gateway on a loopback address answers only loopback host names and --allowed-hosts (DNS rebinding)", hostOf(r.Host))
}

func isLoopback(hostport string) bool { return isLoopbackHost(hostOf(hostport)) }

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	// netip: no allocation per request (net.ParseIP made one). A zone is
	// refused as net.ParseIP refused it. Only what may be an address is
	// parsed (IPv4 begins with a digit, IPv6 has colons): ParseAddr's error
	// for a name is an allocation.
	host = strings.Trim(host, "[]")
	if host == "" || (host[0] < '0' || host[0] > '9') && strings.IndexByte(host, ':') < 0 {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// hostOf is the host of hostport, or hostport itself when it has no port
// ("example.com", "::1", "[::1]"): net.SplitHostPort's host, or its input
// when SplitHostPort fails (the same rules), without the error
// SplitHostPort allocates for a Host header without a port, on every
// request.
func hostOf(hostport string) string {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return hostport
	}
	host, j, k := hostport[:i], 0, 0
	if hostport[0] == '[' {
		// The first ']' just before the last ':'.
		if end := strings.IndexByte(hostport, ']'); end+1 != i {
			return hostport
		}
		host, j, k = hostport[1:i-1], 1, i
	} else if strings.IndexByte(host, ':') >= 0 {
		return hostport
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 || strings.IndexByte(hostport[k:], ']') >= 0 {
		return hostport
	}
	return host
}
