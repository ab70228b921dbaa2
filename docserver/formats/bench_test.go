package formats

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse parses each example document.
func BenchmarkParse(b *testing.B) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "docs", "*.*"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no example documents: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Ext(f)[1:], func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(f, data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
