package main

import (
	"context"
	"errors"
)

// Placeholder until the docs command lands; replaced by its own file.
func runDocs(ctx context.Context, args []string) error {
	return errors.New("the docs command is not built yet")
}
