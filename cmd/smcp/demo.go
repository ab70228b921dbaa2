package main

import (
	"context"
	"errors"
)

// Placeholder until the demo command lands; replaced by its own file.
func runDemo(ctx context.Context, args []string) error {
	return errors.New("the demo command is not built yet")
}
