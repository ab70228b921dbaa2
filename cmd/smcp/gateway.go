package main

import (
	"context"
	"errors"
)

// Placeholder until the gateway command lands; replaced by its own file.
func runGateway(ctx context.Context, args []string) error {
	return errors.New("the gateway command is not built yet")
}
