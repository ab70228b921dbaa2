package main

import (
	"context"
	"errors"
)

// Placeholder until the computer command lands; replaced by its own file.
func runComputer(ctx context.Context, args []string) error {
	return errors.New("the computer command is not built yet")
}
