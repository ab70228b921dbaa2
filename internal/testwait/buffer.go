package testwait

import (
	"strings"
	"sync"
)

// Buffer is an output sink (a log, a child's stderr) that goroutines write
// while the test polls what has been written so far.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Lines are the lines written so far.
func (b *Buffer) Lines() []string {
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}
