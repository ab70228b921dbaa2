package main

import "testing"

// The load and soak tools are separate commands (internal/cmd/bench,
// internal/cmd/soak): the product binary must not offer them.
func TestNoLoadToolsInSMCP(t *testing.T) {
	for _, c := range commands() {
		switch c.name {
		case "bench", "soak", "load":
			t.Errorf("smcp lists the load tool %q", c.name)
		}
	}
}
