// Package blobs is a computer's blob download side (PROTOCOL-0.4.md §5.7,
// §7 C6): stateless signed handles, the spool that keeps large tool-result
// items until an agent drains them, and the chunked client:get_blob.
package blobs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Source kinds a handle names.
const (
	KindSkill  byte = 's' // a skill file: Name, RelPath
	KindResult byte = 'r' // a spooled tool-result item: ID
)

// Ref is what a handle names: re-checked on every get_blob, never trusted.
type Ref struct {
	Kind    byte
	Name    string // skill name
	RelPath string // file in the skill
	ID      string // spool id
}

const (
	handlePrefix = "a2cb1."
	macLen       = 16 // bytes of HMAC-SHA256 kept: 128 bits
	// MaxHandleLen refuses absurd handles before any decoding.
	MaxHandleLen = 4096
)

// ErrInvalidHandle is a handle this computer did not mint (or one altered).
var ErrInvalidHandle = errors.New("invalid blob handle")

// Signer mints and opens handles with a key made at random per process: a
// handle is valid for as long as the computer that minted it runs, and can
// be neither forged nor moved to another computer.
type Signer struct {
	key [32]byte
}

// NewSigner makes a signer with a fresh random key.
func NewSigner() (*Signer, error) {
	s := &Signer{}
	if _, err := rand.Read(s.key[:]); err != nil {
		return nil, fmt.Errorf("blobs: signing key: %w", err)
	}
	return s, nil
}

func (s *Signer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(handlePrefix))
	m.Write(payload)
	return m.Sum(nil)[:macLen]
}

// Mint returns the handle of r.
func (s *Signer) Mint(r Ref) string {
	payload := []byte{r.Kind}
	for _, f := range []string{r.Name, r.RelPath, r.ID} {
		payload = binary.AppendUvarint(payload, uint64(len(f)))
		payload = append(payload, f...)
	}
	enc := base64.RawURLEncoding
	return handlePrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(s.mac(payload))
}

// Open checks a handle's signature and decodes it.
func (s *Signer) Open(h string) (Ref, error) {
	if len(h) > MaxHandleLen || !strings.HasPrefix(h, handlePrefix) {
		return Ref{}, ErrInvalidHandle
	}
	p64, m64, ok := strings.Cut(h[len(handlePrefix):], ".")
	if !ok {
		return Ref{}, ErrInvalidHandle
	}
	enc := base64.RawURLEncoding.Strict()
	payload, err := enc.DecodeString(p64)
	if err != nil {
		return Ref{}, ErrInvalidHandle
	}
	mac, err := enc.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, s.mac(payload)) {
		return Ref{}, ErrInvalidHandle
	}
	// Signed by us, so well-formed; decoded defensively all the same.
	if len(payload) < 1 {
		return Ref{}, ErrInvalidHandle
	}
	r := Ref{Kind: payload[0]}
	rest := payload[1:]
	for _, f := range []*string{&r.Name, &r.RelPath, &r.ID} {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return Ref{}, ErrInvalidHandle
		}
		*f = string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
	}
	if len(rest) != 0 || (r.Kind != KindSkill && r.Kind != KindResult) {
		return Ref{}, ErrInvalidHandle
	}
	return r, nil
}
