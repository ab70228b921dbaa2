package mcpfront

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Separator joins a computer's name and its tool's name into a readable
// MCP tool name: "{computer}__{tool}".
const Separator = "__"

// MaxToolName is the longest MCP tool name made (MCP's tool-name rule:
// 1-128 characters of [A-Za-z0-9_.-]).
const MaxToolName = 128

// ToolName names a computer's tool for MCP clients. The map is one to one,
// so that no computer can take another's tool (computer "a__b" with tool
// "c" and computer "a" with tool "b__c" get two names):
//
//   - readable, "{computer}__{tool}", when both are of [A-Za-z0-9_-], the
//     computer's name has no "__" and does not end with "_" (so the first
//     "__" of the name is the separator), and the whole fits in 128
//     characters;
//   - otherwise "{computer'}__{tool'}.{digest}": the names with every other
//     character made "_" and shortened to fit, then a dot, which no
//     readable name has, and 16 hex digits of SHA-256 over computer, NUL
//     and tool, which tell such names apart.
//
// The tool is the name the computer lists (from 0.3 an opaque exposed name,
// never split); the gateway calls it by that name, kept beside the MCP one.
func ToolName(computer, tool string) string {
	if computer != "" && tool != "" && safe(computer) && safe(tool) && !strings.Contains(computer, Separator) &&
		!strings.HasSuffix(computer, "_") && len(computer)+len(Separator)+len(tool) <= MaxToolName {
		return computer + Separator + tool
	}
	sum := sha256.Sum256([]byte(computer + "\x00" + tool))
	digest := hex.EncodeToString(sum[:8])
	room := MaxToolName - len(Separator) - 1 - len(digest)
	c := sanitize(computer, min(32, room/2))
	t := sanitize(tool, room-len(c))
	return c + Separator + t + "." + digest
}

// BareToolName names a tool in an office of one computer (protocol 0.5):
// the name the computer lists, when it is a valid MCP tool name (of
// [A-Za-z0-9_-], at most 128 characters), so that it stays the same when
// another computer takes the office's seat; otherwise the name made safe,
// a dot and 16 hex digits of SHA-256 over it (as ToolName's fallback).
func BareToolName(tool string) string {
	if tool != "" && safe(tool) && len(tool) <= MaxToolName {
		return tool
	}
	sum := sha256.Sum256([]byte(tool))
	digest := hex.EncodeToString(sum[:8])
	return sanitize(tool, MaxToolName-1-len(digest)) + "." + digest
}

func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if !safeByte(s[i]) {
			return false
		}
	}
	return true
}

func safeByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// sanitize keeps at most n bytes of s, each outside [A-Za-z0-9_-] made "_".
func sanitize(s string, n int) string {
	b := []byte(s[:min(len(s), n)])
	for i := range b {
		if !safeByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}
