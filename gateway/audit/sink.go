package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/segmentio/encoding/json"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Sink writes batches of records. Write and Close are called from the
// Logger's one writer goroutine, never at once.
type Sink interface {
	// Write writes recs, all or (with an error) none worth keeping: a
	// failed batch is written again. ctx ends when Close gives up.
	Write(ctx context.Context, recs []Record) error
	Close(ctx context.Context) error
}

// jsonLines writes one JSON object a line, a batch in one Write.
type jsonLines struct {
	w     io.Writer
	close func() error
	buf   bytes.Buffer
}

// NewJSONLines writes JSON lines to w (e.g. os.Stdout), which Close leaves
// open.
func NewJSONLines(w io.Writer) Sink {
	return &jsonLines{w: w, close: func() error { return nil }}
}

// line is a record as a JSON line: its fields, and its duration in
// milliseconds. Record has no MarshalJSON of its own: the encoder would
// then check and compact each record's output again.
type line struct {
	Record
	DurationMS float64 `json:"duration_ms"`
}

func (s *jsonLines) Write(_ context.Context, recs []Record) error {
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	var l line // reused: Encode takes an interface, so a line per record would be a heap allocation per record
	for i := range recs {
		l = line{Record: recs[i], DurationMS: float64(recs[i].Duration) / float64(time.Millisecond)}
		if err := enc.Encode(&l); err != nil {
			return fmt.Errorf("encode audit record: %w", err)
		}
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("write audit records: %w", err)
	}
	return nil
}

func (s *jsonLines) Close(context.Context) error { return s.close() }

// FileOptions are a rotated audit file's.
type FileOptions struct {
	Path string
	// MaxSizeMB is the size at which the file is rotated (default 100).
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept (0 keeps all).
	MaxBackups int
	// MaxAgeDays removes rotated files older than this (0 keeps them).
	MaxAgeDays int
	// Compress gzips rotated files.
	Compress bool
}

// OpenFile writes JSON lines to a file rotated by size (lumberjack). The
// file is opened once here, so that a path the gateway cannot write stops
// it at start rather than at the first call.
func OpenFile(opts FileOptions) (Sink, error) {
	if opts.Path == "" {
		return nil, fmt.Errorf("audit file: no path")
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o750); err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	f, err := os.OpenFile(opts.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	if opts.MaxSizeMB <= 0 {
		opts.MaxSizeMB = 100
	}
	lj := &lumberjack.Logger{Filename: opts.Path, MaxSize: opts.MaxSizeMB,
		MaxBackups: opts.MaxBackups, MaxAge: opts.MaxAgeDays, Compress: opts.Compress}
	return &jsonLines{w: lj, close: lj.Close}, nil
}
