package main

import (
	"context"
	"fmt"
	"io"
)

// runLock is filled in by the lock-overlay work.
func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "assistant lock: not implemented yet")
	return 1
}
