// Package testlog is a log destination for tests whose loggers write from
// several goroutines (nodes of a cluster, a server's handlers) while the
// test reads what they wrote.
package testlog

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Lines are the lines written so far.
func (b *Buffer) Lines() []string {
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}
