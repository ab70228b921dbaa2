// Package skills is a computer's skill registry (PROTOCOL-0.4.md §5.5,
// §5.6, §7 C5): skill folders given by the user (--skills DIR) and the
// skill:// resources of its MCP servers, listed by client:get_skills and
// read, one file at a time, inside a real-path sandbox by client:get_skill.
//
// A skill is a folder holding a SKILL.md whose YAML front matter names and
// describes it. Its .skillenv (the skill's secrets) is never read, listed,
// fingerprinted or served.
package skills

import (
	"errors"
	"strings"
)

// Kind is the source kind of a skill name (§5.5's table).
type Kind int

// Name kinds, by segment count.
const (
	User        Kind = iota + 1 // "<skill>"
	Marketplace                 // "<plugin>:<skill>"
	MCP                         // "mcp:<bundle_id>:<skill>"
)

// Name is a parsed skill name.
type Name struct {
	Kind Kind
	// Plugin is the plugin segment (Marketplace only).
	Plugin string
	// BundleID is the server segment (MCP only).
	BundleID string
	// Skill is the last segment.
	Skill string
}

// MaxNameLen bounds a whole name: 64 per kebab segment, and a bundle id has
// no length limit of its own, so the bound only stops absurd inputs before
// any work is done on them.
const MaxNameLen = 1024

// ErrInvalidName is returned for a name the lexer refuses (4016).
var ErrInvalidName = errors.New("invalid skill name")

// ParseName is the skill name lexer: 1 or 2 kebab segments, or 3 whose first
// is literally "mcp" and whose second is a bundle id. It never builds a path:
// the registry maps names to folders.
func ParseName(s string) (Name, error) {
	if s == "" || len(s) > MaxNameLen {
		return Name{}, ErrInvalidName
	}
	segs := strings.Split(s, ":")
	switch {
	case len(segs) == 1 && ValidSegment(segs[0]):
		return Name{Kind: User, Skill: segs[0]}, nil
	case len(segs) == 2 && ValidSegment(segs[0]) && ValidSegment(segs[1]):
		return Name{Kind: Marketplace, Plugin: segs[0], Skill: segs[1]}, nil
	case len(segs) == 3 && segs[0] == "mcp" && ValidBundleID(segs[1]) && ValidSegment(segs[2]):
		return Name{Kind: MCP, BundleID: segs[1], Skill: segs[2]}, nil
	}
	return Name{}, ErrInvalidName
}

// String is the name as listed.
func (n Name) String() string {
	switch n.Kind {
	case User:
		return n.Skill
	case Marketplace:
		return n.Plugin + ":" + n.Skill
	case MCP:
		return "mcp:" + n.BundleID + ":" + n.Skill
	}
	return ""
}

// ValidSegment reports whether s is a kebab segment: [a-z0-9-], 1-64
// characters, no leading or trailing '-', no "--".
func ValidSegment(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidBundleID reports whether s can be a bundle id (PROTOCOL-0.4.md
// §5.2): non-empty, [A-Za-z0-9_-], no "__".
func ValidBundleID(s string) bool {
	if s == "" || strings.Contains(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
