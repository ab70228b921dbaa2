package computer

import (
	"fmt"
	"maps"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// SetServer adds an MCP server or replaces its configuration while the
// computer runs; a changed server restarts. Agents are told with
// server:update_config (and server:update_tool_list once its tools change).
func (c *Computer) SetServer(s *config.Server) error {
	c.cfgMu.Lock()
	next := &config.Config{Servers: maps.Clone(c.cfg.Servers), Inputs: c.cfg.Inputs}
	next.Servers[s.Name] = s
	c.cfg = next
	err := c.servers.Set(s)
	c.cfgMu.Unlock()
	if err != nil {
		return err
	}
	c.log.Info("server configuration set", "server", s.Name, "disabled", s.Disabled())
	c.notify(smcp.EventUpdateConfig)
	return nil
}

// RemoveServer stops an MCP server and removes it from the configuration.
func (c *Computer) RemoveServer(name string) error {
	c.cfgMu.Lock()
	if _, ok := c.cfg.Servers[name]; !ok {
		c.cfgMu.Unlock()
		return fmt.Errorf("computer: no MCP server %q", name)
	}
	next := &config.Config{Servers: maps.Clone(c.cfg.Servers), Inputs: c.cfg.Inputs}
	delete(next.Servers, name)
	c.cfg = next
	c.cfgMu.Unlock()
	c.servers.Remove(name)
	c.log.Info("server removed", "server", name)
	c.notify(smcp.EventUpdateConfig)
	return nil
}

// EnableServer starts a disabled MCP server; DisableServer stops one.
func (c *Computer) EnableServer(name string) error { return c.setDisabled(name, false) }

// DisableServer stops an MCP server and keeps it in the configuration.
func (c *Computer) DisableServer(name string) error { return c.setDisabled(name, true) }

func (c *Computer) setDisabled(name string, disabled bool) error {
	c.cfgMu.Lock()
	s, ok := c.cfg.Servers[name]
	c.cfgMu.Unlock()
	if !ok {
		return fmt.Errorf("computer: no MCP server %q", name)
	}
	return c.SetServer(s.WithDisabled(disabled))
}
