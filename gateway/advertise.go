package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// normalizeAdvertise checks an advertise URL and gives a bare host:port
// the scheme of this node's listener.
func normalizeAdvertise(raw string, tls bool) (string, error) {
	if !strings.Contains(raw, "://") {
		scheme := "http://"
		if tls {
			scheme = "https://"
		}
		raw = scheme + raw
	}
	// The value is not repeated in errors: a mistaken one may hold a
	// password.
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("gateway: the advertise URL must be http(s)://host:port, without credentials, query or fragment")
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// advertiseURL is the URL other nodes reach a listener on addr at, when no
// advertise URL is configured: addr itself, unless it is unspecified
// (0.0.0.0, ::), where the host's private IPv4 address is taken if it has
// exactly one (as Consul and others do); several or none is an error that
// asks for the setting.
func advertiseURL(addr net.Addr, tls bool, ifaceAddrs func() ([]net.Addr, error)) (string, error) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("listener address %s is not TCP", addr)
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		addrs, err := ifaceAddrs()
		if err != nil {
			return "", fmt.Errorf("listing this host's addresses: %w", err)
		}
		var private []net.IP
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if ok && n.IP.To4() != nil && n.IP.IsPrivate() {
				private = append(private, n.IP)
			}
		}
		if len(private) != 1 {
			return "", fmt.Errorf("listening on every interface and %d private IPv4 addresses found", len(private))
		}
		ip = private[0]
	}
	return normalizeAdvertise(net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)), tls)
}

// advertise publishes where the other nodes reach this node (addr, the
// listener's, unless Config.AdvertiseURL said it), before it serves: an MCP
// session made here may be used through another node at once.
func (g *Gateway) advertise(addr net.Addr) {
	if g.node.URL() == "" {
		u, err := advertiseURL(addr, g.cfg.TLS != nil, net.InterfaceAddrs)
		if err != nil {
			g.log.Warn("no advertise URL: other nodes cannot forward this node's MCP sessions (set --advertise-url)", "err", err)
			return
		}
		g.node.SetURL(u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.node.Publish(ctx); err != nil && !errors.Is(err, context.Canceled) {
		// The heartbeat publishes it again within a TTL/3.
		g.log.Warn("publish advertise URL", "err", err)
		return
	}
	g.log.Info("cluster: other nodes reach this node at", "advertise_url", g.node.URL())
}
