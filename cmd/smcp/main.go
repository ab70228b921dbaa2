// Command smcp is the single entry point of smcp-gateway: the gateway, the
// computer, the document MCP server and the demo that runs all three. The
// load and soak tools are separate commands (internal/cmd/bench, internal/cmd/soak).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

func commands() []command {
	return []command{
		{"gateway", "run the SMCP gateway (Socket.IO /smcp + Connect API on one port)", runGateway},
		{"computer", "run a computer: host MCP servers and serve them through a gateway", runComputer},
		{"docs", "run the document MCP server over a folder (dpe:// documents)", runDocs},
		{"demo", "run gateway + computer + document server over examples/docs", runDemo},
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: smcp <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'smcp <command> -h' for the flags of a command.")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands() {
		if c.name != os.Args[1] {
			continue
		}
		err := c.run(ctx, os.Args[2:])
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "smcp %s: %v\n", c.name, err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "smcp: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}
