package computer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// SetServer adds an MCP server or replaces its configuration while the
// computer runs; a changed server restarts. Agents are told with
// server:update_config (and server:update_tool_list once its tools change).
func (c *Computer) SetServer(s *config.Server) error {
	if err := c.setServer(s); err != nil {
		return err
	}
	c.notify(smcp.EventUpdateConfig)
	return nil
}

func (c *Computer) setServer(s *config.Server) error {
	if c.bundled {
		// A server is its bundle id (PROTOCOL-0.4.md §7 C2): setting one
		// whose id another server has replaces that one in place (the
		// name may change); two instances need two explicit ids.
		id, err := s.BundleID()
		if err != nil {
			return fmt.Errorf("computer: %w", err)
		}
		if prev, ok := c.bundleOwner(id); ok && prev.Name != s.Name {
			c.log.Info("server replaces the one with its bundle id", "server", s.Name, "replaced", prev.Name, "bundle_id", id)
			if err := c.removeServer(prev.Name); err != nil {
				return err
			}
		}
	}
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
	return nil
}

// RemoveServer stops an MCP server and removes it from the configuration.
func (c *Computer) RemoveServer(name string) error {
	if err := c.removeServer(name); err != nil {
		return err
	}
	c.notify(smcp.EventUpdateConfig)
	return nil
}

func (c *Computer) removeServer(name string) error {
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

// reloadWait bounds how long ApplyConfig waits for restarted servers
// before it announces the new configuration anyway.
const reloadWait = 30 * time.Second

// ApplyConfig is ApplyConfigContext bounded by 30 s.
func (c *Computer) ApplyConfig(cfg *config.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), reloadWait)
	defer cancel()
	return c.ApplyConfigContext(ctx, cfg)
}

// ApplyConfigContext moves the running computer to cfg: servers missing
// from cfg are removed, new and changed ones (re)started, unchanged ones
// left alone. It returns once the new configuration is serving — every
// started server connected or failed once — or ctx ends, and only then
// tells agents, with one server:update_config followed by
// server:update_tool_list when the tools changed meanwhile: an agent that
// refetches on update_config (SDK 0.1.x ignores update_tool_list) must not
// see a half-started configuration. Inputs are read once, when the
// computer is made: changed inputs need a restart (they are logged and
// otherwise ignored).
func (c *Computer) ApplyConfigContext(ctx context.Context, cfg *config.Config) error {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	c.holdToolList()
	released := false
	defer func() {
		if !released { // a panic in between must not hold the list forever
			c.releaseToolList()
		}
	}()
	c.cfgMu.Lock()
	old := c.cfg
	c.cfgMu.Unlock()
	if !reflect.DeepEqual(old.Inputs, cfg.Inputs) {
		c.log.Warn("inputs changed in the configuration; they take effect at the next start")
	}
	var errs []error
	changed := 0
	// The servers that run: all in 0.2; from 0.3 one per bundle id.
	wasServing := map[string]bool{}
	for _, n := range c.servers.Names() {
		wasServing[n] = true
	}
	names := c.serving(cfg)
	serving := map[string]bool{}
	for _, n := range names {
		serving[n] = true
	}
	for name := range old.Servers {
		if _, keep := cfg.Servers[name]; !keep || (c.bundled && !serving[name] && wasServing[name]) {
			errs = append(errs, c.removeServer(name))
			changed++
		}
	}
	var started []string
	for _, name := range names {
		s := cfg.Servers[name]
		if prev, ok := old.Servers[name]; ok && reflect.DeepEqual(prev.Raw(), s.Raw()) && (!c.bundled || wasServing[name]) {
			continue
		}
		changed++
		if err := c.setServer(s); err != nil {
			errs = append(errs, err)
			continue
		}
		started = append(started, name)
	}
	if c.bundled {
		// The configuration as written, servers left out included (they
		// are diagnostics, not removals).
		c.cfgMu.Lock()
		c.cfg = &config.Config{Servers: maps.Clone(cfg.Servers), Order: cfg.Order, Inputs: c.cfg.Inputs}
		c.cfgMu.Unlock()
	}
	if err := c.waitServing(ctx, started); err != nil {
		c.log.Warn("reload: announcing the configuration before every server is up", "err", err)
	}
	released = true
	toolsChanged := c.releaseToolList()
	if changed > 0 {
		c.notify(smcp.EventUpdateConfig)
	}
	if toolsChanged {
		c.notify(smcp.EventUpdateToolList)
	}
	return errors.Join(errs...)
}

// waitServing waits until each named server has connected or failed once
// (a disabled or removed one counts as done).
func (c *Computer) waitServing(ctx context.Context, names []string) error {
	for {
		var pending []string
		for _, n := range names {
			if s, ok := c.servers.Snapshot(n); ok && s.State == servers.StateStarting && s.Restarts == 0 {
				pending = append(pending, n)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("MCP servers %v still starting: %w", pending, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holdToolList makes server:update_tool_list wait (see
// ApplyConfigContext); releaseToolList ends the hold and reports whether
// one was held back.
func (c *Computer) holdToolList() {
	c.holdMu.Lock()
	c.holding++
	c.holdMu.Unlock()
}

func (c *Computer) releaseToolList() (held bool) {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	c.holding--
	if c.holding > 0 {
		return false
	}
	held, c.heldToolList = c.heldToolList, false
	return held
}

// notifyToolList emits server:update_tool_list, or keeps it for the end
// of a reload.
func (c *Computer) notifyToolList() {
	c.holdMu.Lock()
	if c.holding > 0 {
		c.heldToolList = true
		c.holdMu.Unlock()
		return
	}
	c.holdMu.Unlock()
	c.notify(smcp.EventUpdateToolList)
}
