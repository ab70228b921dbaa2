// Package organize implements the Computer's two organizers: Desktop
// (organize_desktop, seed 001) and Finder (organize_finder, seeds 000 and
// 004). Both are pure: they read their inputs, never modify them, and report
// what they skipped or corrected as Warnings for the caller to log.
package organize

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// Warning describes an input the organizer skipped or corrected.
type Warning struct {
	Server string
	URI    string
	Reason string
}

func (w Warning) String() string {
	return "server " + w.Server + ", " + w.URI + ": " + w.Reason
}

// serverRanks orders servers as both organizers do: the servers of the
// tool-call history, most recent (last) first and de-duplicated, then the
// remaining servers of present by name. Only servers in present get a rank.
func serverRanks(history []string, present map[string]struct{}) map[string]int {
	ranks := make(map[string]int, len(present))
	for i := len(history) - 1; i >= 0; i-- {
		name := history[i]
		if _, ok := present[name]; !ok {
			continue
		}
		if _, seen := ranks[name]; !seen {
			ranks[name] = len(ranks)
		}
	}
	if len(ranks) == len(present) {
		return ranks
	}
	rest := make([]string, 0, len(present)-len(ranks))
	for name := range present {
		if _, ok := ranks[name]; !ok {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		ranks[name] = len(ranks)
	}
	return ranks
}

// appendLower appends strings.ToLower(s) to dst: the same rune mapping,
// without allocating a string per field. Its output is always valid UTF-8.
func appendLower(dst []byte, s string) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(s))[:n+len(s)]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return appendLowerRunes(dst[:n+i], s[i:])
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[n+i] = c
	}
	return dst
}

func appendLowerRunes(dst []byte, s string) []byte {
	for _, r := range s { // invalid bytes come out as U+FFFD, as in strings.ToLower
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}
