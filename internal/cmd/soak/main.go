// Command soak drives steady traffic through an in-process gateway and
// reports goroutines, heap and RSS over time: go run ./internal/cmd/soak -h.
// It is not part of the smcp binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runSoak(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
}

// runSoak drives steady traffic through an in-process gateway and prints the
// process's goroutines, heap and RSS at each interval, then the growth
// between the halves of the run and what is left once everything is closed.
func runSoak(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./internal/cmd/soak [--duration 10m] [--interval 10s] [--offices 4] [--churn 1s]\n\n"+
			"Runs a gateway on loopback with one agent and one computer per office calling tools\n"+
			"back to back, and a computer that reconnects every --churn. Prints a sample line per\n"+
			"interval. Exits non-zero if calls failed or goroutines or heap grew between the halves.\n\nflags:")
		fs.PrintDefaults()
	}
	var o soak.Options
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "length of the traffic")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "time between samples")
	fs.IntVar(&o.Offices, "offices", 4, "offices, one agent and one computer each")
	fs.DurationVar(&o.Churn, "churn", time.Second, "a computer reconnects this often")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	o.Progress = os.Stdout
	rep, err := soak.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	last := rep.Samples[len(rep.Samples)-1]
	g, h := rep.Growth()
	fmt.Printf("calls %d, errors %d; growth second half vs first: goroutines %+d, heap %+.1f MiB; "+
		"goroutines before %d, after close %d\n",
		last.Calls, rep.Errors, g, float64(h)/(1<<20), rep.Baseline.Goroutines, rep.After.Goroutines)
	if rep.Errors > 0 || g > 20 || h > 8<<20 {
		return fmt.Errorf("soak failed: %d errors, goroutines %+d, heap %+d bytes", rep.Errors, g, h)
	}
	return nil
}
