// Command testmcp serves the testmcp fixture over stdio, for the computer's
// child-process tests. Flags add windows and documents.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
)

func main() {
	name := flag.String("name", "stdio-fixture", "server name")
	window := flag.String("window", "", "a window:// URI to serve (text: the server name)")
	started := flag.String("started", "", "create this file when a slow call starts")
	flag.Parse()
	f := testmcp.New(*name, testmcp.Options{})
	if *started != "" {
		go func() {
			for range f.SlowStarted {
				if err := os.WriteFile(*started, nil, 0o600); err != nil {
					log.Print(err)
				}
			}
		}()
	}
	if *window != "" {
		f.SetWindow(testmcp.Window{URI: *window, Text: "window of " + *name})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f.Server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
