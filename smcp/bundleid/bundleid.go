// Package bundleid derives the bundle id of an MCP server configuration and
// the exposed tool names built on it (PROTOCOL-0.4.md §5.1-§5.2, 0.3+).
//
// A bundle id is the server's identity on the wire: SMCPTool.bundle_id, the
// keys of get_config, get_resources' mcp_server, the mcp_server of 4006,
// 4007, 4014 and 4015. Every SDK must derive the same id from the same
// configuration, byte for byte, so the rules here are the specification's
// and nothing more: normalise the name; when nothing is left, hash the
// connection identity of the raw (unrendered) configuration.
package bundleid

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Separator joins a bundle id and a tool name into an exposed name.
const Separator = "__"

// Identity is what the fallback hashes: the connection identity of a
// server, as written in its raw configuration (placeholders literal).
type Identity struct {
	// Type is the transport as on the wire: "stdio", "streamable" or "sse".
	Type string
	// Command, Args and Env identify a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers identify a streamable or SSE server.
	URL     string
	Headers map[string]string
}

// Normalize applies steps 1-3 of §5.2 to a server name: every code point
// outside ASCII [A-Za-z0-9_-] becomes "_", runs of "_" collapse to one, and
// "_" and "-" are trimmed from both ends. It may return "".
func Normalize(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	lastUnderscore := false
	// range over a string walks code points; an invalid UTF-8 byte is one
	// U+FFFD, so it becomes one "_" like any other foreign code point.
	for _, r := range name {
		if !allowed(r) {
			r = '_'
		}
		if r == '_' {
			if lastUnderscore {
				continue
			}
			lastUnderscore = true
		} else {
			lastUnderscore = false
		}
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "_-")
}

// allowed is the explicit ASCII class [A-Za-z0-9_-] (never a Unicode \w).
func allowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// Fallback is step 4 of §5.2: "bundle_" and the first 8 bytes, in lowercase
// hex, of the SHA-256 of the identity's length-prefixed framing.
func Fallback(id Identity) string {
	sum := sha256.Sum256(id.Frame())
	return "bundle_" + hex.EncodeToString(sum[:8])
}

// Frame is the byte string Fallback hashes (never JSON): strings as a
// big-endian u32 byte length and the UTF-8 bytes; lists as a u32 count and
// their strings in order; maps as a u32 count and key, value pairs with
// keys ascending by bytes. stdio: type, command, args, env; streamable and
// sse: type, url, headers.
func (id Identity) Frame() []byte {
	var b []byte
	b = appendString(b, id.Type)
	if id.Type == "stdio" {
		b = appendString(b, id.Command)
		b = appendList(b, id.Args)
		return appendMap(b, id.Env)
	}
	b = appendString(b, id.URL)
	return appendMap(b, id.Headers)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendList(b []byte, l []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

func appendMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // Go compares strings bytewise: UTF-8 byte order = code point order
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	return b
}

// Derive is the bundle id of a server without an explicit one: its
// normalised name, or the fallback when that is empty.
func Derive(name string, id Identity) string {
	if n := Normalize(name); n != "" {
		return n
	}
	return Fallback(id)
}

// Resolve is the server's bundle id: explicit when set (and valid), else
// derived. An invalid explicit id is an error: the server must not start
// (§5.2 Decision).
func Resolve(name string, explicit *string, id Identity) (string, error) {
	if explicit == nil {
		return Derive(name, id), nil
	}
	if err := Check(*explicit); err != nil {
		return "", err
	}
	return *explicit, nil
}

// Check reports whether s may be used as an explicit bundle id: non-empty,
// [A-Za-z0-9_-] only, no "__".
func Check(s string) error {
	if s == "" {
		return errors.New("bundle_id is empty")
	}
	for i, r := range s {
		if !allowed(r) {
			return fmt.Errorf("bundle_id %q: character %q at byte %d is not in [A-Za-z0-9_-]", s, r, i)
		}
	}
	if strings.Contains(s, Separator) {
		return fmt.Errorf("bundle_id %q contains %q, the exposed-name separator", s, Separator)
	}
	return nil
}

// ExposedName is the name agents list and call (§5.1): the bundle id, "__"
// and the tool's alias when it has one, else its MCP name.
func ExposedName(bundleID, tool string) string { return bundleID + Separator + tool }

// IdentityOf reads the connection identity of a raw server configuration:
// a decoded JSON object in the SDK shape (transport keys under
// "server_parameters") or the flat shape the vectors use (transport keys at
// the top). Values are taken as written: a "${input:x}" placeholder is
// hashed literally. A number or boolean where a string belongs (YAML reads
// "args: [-p, 8080]" with a number) is its JSON spelling; null is "".
func IdentityOf(cfg map[string]any) Identity {
	typ, _ := cfg["type"].(string)
	params, ok := cfg["server_parameters"].(map[string]any)
	if !ok {
		params = cfg
	}
	id := Identity{Type: typ}
	if typ == "stdio" {
		id.Command = scalar(params["command"])
		if args, ok := params["args"].([]any); ok {
			id.Args = make([]string, len(args))
			for i, a := range args {
				id.Args[i] = scalar(a)
			}
		}
		id.Env = stringMap(params["env"])
		return id
	}
	id.URL = scalar(params["url"])
	id.Headers = stringMap(params["headers"])
	return id
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		out[k] = scalar(e)
	}
	return out
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}
