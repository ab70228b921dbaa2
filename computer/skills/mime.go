package skills

import (
	"path"
	"strings"
)

// mimeByExt is the fixed extension table of §5.6: deterministic, never the
// host's MIME registry, so every computer answers the same type for the
// same file. Unknown extensions are application/octet-stream.
var mimeByExt = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".rst":      "text/x-rst",
	".json":     "application/json",
	".xml":      "application/xml",
	".toml":     "application/toml",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".csv":      "text/csv",
	".tsv":      "text/tab-separated-values",
	".html":     "text/html",
	".htm":      "text/html",
	".css":      "text/css",
	".js":       "application/javascript",
	".mjs":      "application/javascript",
	".py":       "text/x-python",
	".sh":       "text/x-shellscript",
	".svg":      "image/svg+xml",
	".png":      "image/png",
	".jpg":      "image/jpeg",
	".jpeg":     "image/jpeg",
	".gif":      "image/gif",
	".webp":     "image/webp",
	".pdf":      "application/pdf",
	".zip":      "application/zip",
	".gz":       "application/gzip",
	".tar":      "application/x-tar",
	".wasm":     "application/wasm",
	".mp3":      "audio/mpeg",
	".wav":      "audio/wav",
}

// OctetStream is the type of an unknown extension.
const OctetStream = "application/octet-stream"

// MIMEType returns the type of a file by its extension (case-insensitive).
func MIMEType(name string) string {
	if t, ok := mimeByExt[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return OctetStream
}

// IsText is §5.6's text rule: text/*, a +json/+xml/+yaml suffix, or one of
// application/{json,xml,yaml,toml,javascript}. Parameters are ignored.
func IsText(mime string) bool {
	essence, _, _ := strings.Cut(strings.ToLower(mime), ";")
	essence = strings.TrimSpace(essence)
	switch {
	case strings.HasPrefix(essence, "text/"):
		return true
	case strings.HasSuffix(essence, "+json"), strings.HasSuffix(essence, "+xml"), strings.HasSuffix(essence, "+yaml"):
		return true
	}
	switch essence {
	case "application/json", "application/xml", "application/yaml", "application/toml", "application/javascript":
		return true
	}
	return false
}
