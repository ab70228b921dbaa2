// Command smcp is the single entry point of smcp-gateway: the gateway, the
// computer, the document MCP server, the demo that runs all three, and an agent
// for the terminal. The load and soak tools are separate commands
// (internal/cmd/bench, internal/cmd/soak).
//
// Every subcommand follows the same conventions: -h/--help prints its usage
// on stdout and exits 0; --log-level and --log-json set its logging (to
// stderr); every flag is also read from $SMCP_<FLAG> (upper case, dashes as
// underscores; the command line wins); the exit status is 0 when done, 1
// when the command failed, 2 for a wrong command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/smcpgw/smcp-gateway/buildinfo"
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
		{"agent", "act as an agent from the terminal: list the office, call tools, read documents, watch", runAgent},
		{"docs", "run the document MCP server over a folder (dpe:// documents)", runDocs},
		{"demo", "run gateway + computer + document server over examples/docs", runDemo},
		{"healthcheck", "exit 0 when a gateway's /healthz answers 200 (for container HEALTHCHECKs)", runHealthcheck},
		{"version", "print the version, Go version and VCS revision of this binary", nil},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: smcp <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help        print this, or 'smcp help <command>' for the flags of a command")
	fmt.Fprintf(w, "\nEvery flag is also read from $%s<FLAG> (--call-timeout from $%s), the command\n"+
		"line winning. Exit status: 0 done, 1 failed, 2 wrong command line.\n"+
		"Run 'smcp <command> -h' for the flags of a command.\n", envPrefix, envName("call-timeout"))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			// `smcp help gateway` is `smcp gateway -h`.
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	case "version", "-version", "--version":
		writeVersion(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != name || c.run == nil {
			continue
		}
		err := c.run(ctx, args[1:])
		var help *helpShown
		var bad *usageError
		switch {
		case err == nil:
			return exitOK
		case errors.As(err, &help):
			fmt.Fprint(stdout, help.text)
			return exitOK
		case errors.Is(err, flag.ErrHelp): // commands with a flag set of their own (bench, soak)
			return exitOK
		case errors.As(err, &bad):
			fmt.Fprintf(stderr, "smcp %s: %v\nRun 'smcp %s -h' for usage.\n", name, bad, name)
			return exitUsage
		default:
			fmt.Fprintf(stderr, "smcp %s: %v\n", name, err)
			return exitFailure
		}
	}
	fmt.Fprintf(stderr, "smcp: unknown command %q\nRun 'smcp help' for the commands.\n", name)
	return exitUsage
}

func writeVersion(w io.Writer) {
	bi := buildinfo.Read()
	fmt.Fprintf(w, "smcp %s\ngo: %s\nrevision: %s\n", bi.Version, bi.GoVersion, bi.Revision)
	if bi.Time != "" {
		fmt.Fprintf(w, "commit time: %s\n", bi.Time)
	}
}
