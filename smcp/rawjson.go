package smcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// The gateway relays payloads as the bytes it received (PROTOCOL.md §3 rule
// 4): it checks that they are JSON and reads the few top-level fields it
// routes on, and nothing is decoded into Go values or encoded again. This
// file is that reader. It accepts exactly RFC 8259 JSON (what
// encoding/json's Valid accepts, with the same nesting limit, and only in
// UTF-8, which Valid does not check: see str), plus one rule of its own:
// every number must fit a float64 (RFC 8259 §6). A number such
// as 1e400 or a 375-digit integer has no meaning for most receivers (the
// Python SDK's json turns it into inf, JavaScript into Infinity, protobuf's
// Struct refuses it), so it is refused as malformed rather than relayed
// with a meaning that differs per reader. Integers beyond 2^53 within that
// range (2^64, say) are relayed with their spelling intact.

// MaxJSONDepth bounds the nesting of a relayed payload, as encoding/json does.
const MaxJSONDepth = 10000

// SyntaxError locates what is wrong with a relayed payload.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func syntaxErr(i int, format string, args ...any) error {
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf(format, args...)}
}

// rawScanner validates JSON values in b.
type rawScanner struct {
	b     []byte
	depth int
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value starting at b[i] (no leading space) and returns
// the index just past it.
func (s *rawScanner) value(i int) (int, error) {
	if i >= len(s.b) {
		return i, syntaxErr(i, "unexpected end")
	}
	switch c := s.b[i]; {
	case c == '{':
		return s.object(i)
	case c == '[':
		return s.array(i)
	case c == '"':
		return s.str(i)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	case c == 't':
		return s.word(i, "true")
	case c == 'f':
		return s.word(i, "false")
	case c == 'n':
		return s.word(i, "null")
	default:
		return i, syntaxErr(i, "unexpected %q", rune(c))
	}
}

func (s *rawScanner) word(i int, w string) (int, error) {
	if len(s.b)-i < len(w) || string(s.b[i:i+len(w)]) != w {
		// NaN, Infinity and the like land here.
		return i, syntaxErr(i, "unexpected %q", rune(s.b[i]))
	}
	return i + len(w), nil
}

func (s *rawScanner) enter(i int) error {
	if s.depth++; s.depth > MaxJSONDepth {
		return syntaxErr(i, "nested deeper than %d", MaxJSONDepth)
	}
	return nil
}

func (s *rawScanner) object(i int) (int, error) {
	if err := s.enter(i); err != nil {
		return i, err
	}
	defer func() { s.depth-- }()
	i = skipSpace(s.b, i+1)
	if i < len(s.b) && s.b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(s.b) || s.b[i] != '"' {
			return i, syntaxErr(i, "expected a key")
		}
		var err error
		if i, err = s.str(i); err != nil {
			return i, err
		}
		if i = skipSpace(s.b, i); i >= len(s.b) || s.b[i] != ':' {
			return i, syntaxErr(i, "expected ':'")
		}
		if i, err = s.value(skipSpace(s.b, i+1)); err != nil {
			return i, err
		}
		i = skipSpace(s.b, i)
		if i >= len(s.b) {
			return i, syntaxErr(i, "unexpected end")
		}
		switch s.b[i] {
		case ',':
			i = skipSpace(s.b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or '}'")
		}
	}
}

func (s *rawScanner) array(i int) (int, error) {
	if err := s.enter(i); err != nil {
		return i, err
	}
	defer func() { s.depth-- }()
	i = skipSpace(s.b, i+1)
	if i < len(s.b) && s.b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = s.value(i); err != nil {
			return i, err
		}
		i = skipSpace(s.b, i)
		if i >= len(s.b) {
			return i, syntaxErr(i, "unexpected end")
		}
		switch s.b[i] {
		case ',':
			i = skipSpace(s.b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxErr(i, "expected ',' or ']'")
		}
	}
}

// str checks a string: its bytes must be UTF-8 (RFC 8259 §8.1), and escapes
// are checked for form only.
//
// Invalid UTF-8 is refused rather than relayed or replaced: the gateway
// relays payloads inside WebSocket text frames, which RFC 6455 §8.1 makes a
// receiver (Node's ws, aiohttp) fail the connection for, ending every call
// in flight on it; replacing the bytes with U+FFFD, as encoding/json does,
// would relay text the sender did not write. Every front end's payload
// passes here, so this is the one place the rule lives.
//
// A lone surrogate escape (\ud800) is valid: JSON's grammar allows it, it is
// ASCII on the wire so it breaks no WebSocket peer, and it is relayed as is
// (a receiver decides what it means; encoding/json reads it as U+FFFD).
func (s *rawScanner) str(i int) (int, error) {
	start := i
	i++
	i += plainRun(s.b[i:]) // most strings are plain to their end
	for i < len(s.b) {
		c := s.b[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(s.b) {
				return i, syntaxErr(i, "unterminated string")
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(s.b)-i < 6 || !isHex4(s.b[i+2:i+6]) {
					return i, syntaxErr(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return i, syntaxErr(i, "control character in string")
		default:
			// A multi-byte sequence holds only bytes >= 0x80, so text is UTF-8
			// when each run of such bytes is; utf8.Valid checks a run faster
			// than decoding it rune by rune.
			j := i + 1
			for j < len(s.b) && s.b[j] >= utf8.RuneSelf {
				j++
			}
			if !utf8.Valid(s.b[i:j]) {
				return i, invalidUTF8(s.b, i)
			}
			i = j
		}
	}
	return start, syntaxErr(start, "unterminated string")
}

// plainRun is how many bytes at b's start are plain string text (printable
// ASCII but '"' and '\\'), counted eight at a time, short of the last
// seven: a blob's chunk is hundreds of KB of base64, all plain, which a
// byte at a time took a fifth of the gateway's CPU (bench -mode blob).
func plainRun[T string | []byte](b T) int {
	n := 0
	for ; n+8 <= len(b); n += 8 {
		if special(word(b, n)) != 0 {
			break
		}
	}
	return n
}

// word is the eight bytes of b at n, little-endian (one load).
func word[T string | []byte](b T, n int) uint64 {
	return uint64(b[n]) | uint64(b[n+1])<<8 | uint64(b[n+2])<<16 | uint64(b[n+3])<<24 |
		uint64(b[n+4])<<32 | uint64(b[n+5])<<40 | uint64(b[n+6])<<48 | uint64(b[n+7])<<56
}

// special is not zero when x has a byte that is not plain string text.
// (v - ones) &^ v has a high bit set where v has a zero byte (so v = x
// XOR the quote or the backslash), and (x - 0x20*ones) | x where x has a
// byte below 0x20 or above 0x7f: exact as to whether there is one, which
// is all plainRun asks.
func special(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((x - ones*0x20) | x | (q-ones)&^q | (bs-ones)&^bs) & highs
}

// CheckUTF8 reports where b is not UTF-8, for a front end whose JSON a
// library decodes (encoding/json replaces such bytes with U+FFFD): the
// relay's rule (see str) before the text is read.
func CheckUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	return invalidUTF8(b, 0)
}

// invalidUTF8 locates the first byte at or after i that starts no valid
// sequence.
func invalidUTF8(b []byte, i int) error {
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	return syntaxErr(i, "invalid UTF-8 (byte 0x%02x): JSON text must be UTF-8", b[min(i, len(b)-1)])
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *rawScanner) number(i int) (int, error) {
	start := i
	digits := func() int {
		n := 0
		for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if s.b[i] == '-' {
		i++
	}
	first := i
	n := digits()
	if n == 0 || (n > 1 && s.b[first] == '0') {
		return i, syntaxErr(start, "invalid number")
	}
	short := n <= 15
	if i < len(s.b) && s.b[i] == '.' {
		i++
		if digits() == 0 {
			return i, syntaxErr(start, "invalid number")
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		short = false
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, syntaxErr(start, "invalid number")
		}
	}
	// Up to 15 integer digits and no exponent always fits; only longer
	// spellings pay for a parse.
	if !short {
		if f, err := strconv.ParseFloat(string(s.b[start:i]), 64); err != nil || math.IsInf(f, 0) {
			return i, syntaxErr(start, "number %.40s out of the float64 range", s.b[start:i])
		}
	}
	return i, nil
}

// CheckJSON reports whether b is one JSON value (with surrounding white
// space) under the rules above.
func CheckJSON(b []byte) error {
	s := rawScanner{b: b}
	i, err := s.value(skipSpace(b, 0))
	if err != nil {
		return err
	}
	if i = skipSpace(b, i); i != len(b) {
		return syntaxErr(i, "data after the value")
	}
	return nil
}

// SplitArray checks that b is a JSON array and returns its elements as
// sub-slices of b (not copied), each without surrounding white space.
func SplitArray(b []byte) ([]json.RawMessage, error) {
	return AppendArray(nil, b)
}

// AppendArray is SplitArray appending the elements to out, for callers that
// keep them in an array of their own (no allocation for a few elements).
func AppendArray(out []json.RawMessage, b []byte) ([]json.RawMessage, error) {
	s := rawScanner{b: b, depth: 1}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, syntaxErr(i, "expected an array")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			end, err := s.value(i)
			if err != nil {
				return nil, err
			}
			out = append(out, json.RawMessage(b[i:end:end]))
			i = skipSpace(b, end)
			if i >= len(b) {
				return nil, syntaxErr(i, "unexpected end")
			}
			if b[i] == ']' {
				i++
				break
			}
			if b[i] != ',' {
				return nil, syntaxErr(i, "expected ',' or ']'")
			}
			i = skipSpace(b, i+1)
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return nil, syntaxErr(i, "data after the array")
	}
	return out, nil
}

// errStop ends ObjectFields early without an error.
var errStop = errors.New("stop")

// ObjectFields checks that b is one JSON object and calls field with each
// top-level key (unescaped) and its value (a sub-slice of b, checked). A
// field error ends the walk and is returned.
func ObjectFields(b []byte, field func(key string, value json.RawMessage) error) error {
	return walkObject(b, func(_ int, key []byte, v json.RawMessage) error { return field(string(key), v) })
}

// ObjectKeys is ObjectFields with each key as bytes that field must not
// keep: a per-call scan that only compares keys (a switch on string(key)
// copies nothing) allocates nothing per key.
func ObjectKeys(b []byte, field func(key []byte, value json.RawMessage) error) error {
	return walkObject(b, func(_ int, key []byte, v json.RawMessage) error { return field(key, v) })
}

// RenameKey returns a copy of the JSON object b with its top-level key from
// renamed to, or nil if b has no such key written as plain letters (without
// escapes). Nothing else of b changes.
func RenameKey(b []byte, from, to string) []byte {
	token := `"` + from + `"`
	at := -1
	_ = walkObject(b, func(keyAt int, key []byte, _ json.RawMessage) error {
		if string(key) == from && string(b[keyAt:keyAt+len(token)]) == token {
			at = keyAt
			return errStop
		}
		return nil
	})
	if at < 0 {
		return nil
	}
	out := make([]byte, 0, len(b)-len(from)+len(to))
	out = append(out, b[:at+1]...)
	out = append(out, to...)
	return append(out, b[at+1+len(from):]...)
}

// walkObject is ObjectFields, telling field where each key starts in b.
// A key without escapes or non-ASCII bytes is a sub-slice of b (no copy:
// the routed events' checks compare every key of every payload); field
// must not keep key.
func walkObject(b []byte, field func(keyAt int, key []byte, value json.RawMessage) error) error {
	s := rawScanner{b: b, depth: 1}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return syntaxErr(i, "expected an object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return syntaxErr(i, "expected a key")
			}
			keyAt := i
			kend, err := s.str(i)
			if err != nil {
				return err
			}
			key := b[i+1 : kend-1]
			if !plainASCII(key) {
				s, err := RawString(b[i:kend])
				if err != nil {
					return err
				}
				key = []byte(s)
			}
			if i = skipSpace(b, kend); i >= len(b) || b[i] != ':' {
				return syntaxErr(i, "expected ':'")
			}
			i = skipSpace(b, i+1)
			end, err := s.value(i)
			if err != nil {
				return err
			}
			if err := field(keyAt, key, json.RawMessage(b[i:end:end])); err != nil {
				return err
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return syntaxErr(i, "unexpected end")
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return syntaxErr(i, "expected ',' or '}'")
			}
			i = skipSpace(b, i+1)
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return syntaxErr(i, "data after the object")
	}
	return nil
}

// plainASCII reports whether the body of a string token is its value as
// it is: no escape, nothing but ASCII (RawString's plain case).
func plainASCII(body []byte) bool {
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// RawString decodes a JSON string token (quotes included, already checked).
// Plain strings are copied as they are; escaped ones take encoding/json.
func RawString(tok []byte) (string, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", syntaxErr(0, "expected a string")
	}
	body := tok[1 : len(tok)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return s, nil
}
