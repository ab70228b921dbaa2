package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/terminal"
	"github.com/smcpgw/smcp-gateway/computer/tools"
)

// runComputer runs a computer: it hosts the MCP servers of a configuration
// file and serves them to the agents of one office through a gateway.
func runComputer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("smcp computer", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "MCP configuration: JSON or YAML, SDK shape ({servers, inputs}) or mcpServers shape (required)")
	gatewayURL := fs.String("gateway", "http://127.0.0.1:8080", "gateway base URL")
	sioPath := fs.String("path", "/socket.io/", "Engine.IO path of the gateway")
	office := fs.String("office", "", "office to join (required)")
	hostname, _ := os.Hostname()
	name := fs.String("name", hostname, "computer name in the office")
	apiKey := fs.String("api-key", "", "API key for the gateway (default $SMCP_API_KEY)")
	confirm := fs.String("confirm", tools.ConfirmDeny,
		"tools that are not auto_apply, when no terminal can ask: auto (run them) or deny (refuse them)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: smcp computer --config FILE --office ID [flags]\n\n"+
			"Inputs (${input:id}) come from $A2C_SMCP_<ID>, command inputs, a terminal prompt when\n"+
			"stdin is a terminal, or their default. Tool calls that are not auto_apply are confirmed\n"+
			"at the terminal when there is one, else decided by --confirm.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *cfgPath == "" || *office == "" {
		fs.Usage()
		return errors.New("--config and --office are required")
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("SMCP_API_KEY")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	opts := computer.Options{Name: *name, Config: cfg, Logger: log, Confirm: *confirm}
	if terminal.Interactive() {
		t := terminal.Stdio()
		opts.InputAsker, opts.ConfirmAsker = t, t
	}
	c, err := computer.New(opts)
	if err != nil {
		return err
	}
	log.Info("computer starting", "name", *name, "servers", len(cfg.Servers), "gateway", *gatewayURL, "office", *office)
	return c.Run(ctx, computer.Gateway{URL: *gatewayURL, Path: *sioPath, Office: *office, APIKey: *apiKey})
}
