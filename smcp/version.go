package smcp

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Version is a protocol profile: the MAJOR.MINOR a connection speaks
// (PROTOCOL-0.4.md §2-§3). PATCH never decides compatibility.
type Version struct{ Major, Minor int }

// The profiles this library knows, oldest first.
var (
	V02 = Version{0, 2}
	V03 = Version{0, 3}
	V04 = Version{0, 4}
	// V05 is the draft of 0.5 (PROTOCOL-0.5.md): served only where an
	// operator names it, until 0.5.0 is tagged.
	V05 = Version{0, 5}
)

// Profiles are the known profiles, oldest first, each with the full version
// a connection of it announces (PROTOCOL-0.4.md §2 H5).
type profile struct {
	v    Version
	full string
	// draft: not yet released; not served unless asked for
	// (DefaultVersions leaves it out).
	draft bool
}

var profiles = []profile{
	{V02, "0.2.0", false},
	{V03, "0.3.2", false},
	{V04, "0.4.0", false},
	{V05, "0.5.0", true},
}

// Versions returns the known profiles, oldest first.
func Versions() []Version {
	out := make([]Version, len(profiles))
	for i, p := range profiles {
		out[i] = p.v
	}
	return out
}

// DefaultVersions returns the released profiles, oldest first: what a
// server serves unless told otherwise.
func DefaultVersions() []Version {
	var out []Version
	for _, p := range profiles {
		if !p.draft {
			out = append(out, p.v)
		}
	}
	return out
}

// Draft reports whether v is a known profile not yet released.
func (v Version) Draft() bool {
	return slices.ContainsFunc(profiles, func(p profile) bool { return p.v == v && p.draft })
}

func (v Version) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// Full is the full version a connection of profile v sends and a server of
// it names as server_version ("0.3.2", "0.4.0"); MAJOR.MINOR.0 for a
// profile this library does not know.
func (v Version) Full() string {
	for _, p := range profiles {
		if p.v == v {
			return p.full
		}
	}
	return v.String() + ".0"
}

// Known reports whether v is one of Versions.
func (v Version) Known() bool {
	return slices.ContainsFunc(profiles, func(p profile) bool { return p.v == v })
}

// Compare orders versions: -1, 0 or +1.
func (v Version) Compare(o Version) int {
	if v.Major != o.Major {
		return cmpInt(v.Major, o.Major)
	}
	return cmpInt(v.Minor, o.Minor)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return v == Version{} }

// profileByName finds a known profile by its MAJOR.MINOR without parsing (a
// registry record names its member's profile so; routing reads it per
// cross-node call).
var profileByName = func() map[string]Version {
	m := map[string]Version{}
	for _, p := range profiles {
		m[p.v.String()] = p.v
	}
	return m
}()

// LookupProfile returns the known profile named s ("0.4").
func LookupProfile(s string) (Version, bool) {
	v, ok := profileByName[s]
	return v, ok
}

// ParseProfile reads a profile as an operator writes it: "0.3" (or a full
// "0.3.2", whose PATCH is ignored).
func ParseProfile(s string) (Version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) == 3 {
		parts = parts[:2]
	}
	if len(parts) != 2 {
		return Version{}, fmt.Errorf("protocol version %q: want MAJOR.MINOR, e.g. 0.4", s)
	}
	maj, err1 := strconv.Atoi(parts[0])
	min, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj < 0 || min < 0 {
		return Version{}, fmt.Errorf("protocol version %q: want MAJOR.MINOR, e.g. 0.4", s)
	}
	v := Version{maj, min}
	if !v.Known() {
		return Version{}, fmt.Errorf("protocol version %s is not one this build speaks (%s)", v, joinVersions(Versions()))
	}
	return v, nil
}

func joinVersions(vs []Version) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// wellFormed is PROTOCOL-0.4.md §2 H3: three decimal numbers and nothing
// else (no sign, no pre-release, no build).
var wellFormed = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// ClientVersion is an a2c_version value as a client sent it.
type ClientVersion struct {
	Version
	Patch int
	// Raw is the value as sent.
	Raw string
	// Huge: a number too large to compare (well-formed, never compatible).
	huge bool
}

// ParseClientVersion reads an a2c_version value (H3). ok is false for a
// malformed value.
func ParseClientVersion(s string) (ClientVersion, bool) {
	if !wellFormed.MatchString(s) {
		return ClientVersion{}, false
	}
	parts := strings.Split(s, ".")
	n := [3]int{}
	cv := ClientVersion{Raw: s}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			cv.huge = true
			continue
		}
		n[i] = v
	}
	cv.Version, cv.Patch = Version{n[0], n[1]}, n[2]
	return cv, true
}

// CompatibleWith is PROTOCOL-0.4.md §2 H4: in v0.x MAJOR and MINOR equal;
// from v1.0 MAJOR equal and the client's MINOR not above the server's.
func (c ClientVersion) CompatibleWith(server Version) bool {
	if c.huge || c.Major != server.Major {
		return false
	}
	if server.Major == 0 {
		return c.Minor == server.Minor
	}
	return c.Minor <= server.Minor
}
