package quota

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Table is which Limits bound whom, as the keys file says:
//
//	quota: {calls_per_second: 20, burst: 40}      # every key and token
//	quota_by_claim:                               # tokens, by a claim's value
//	  claim: groups
//	  values: {interns: {calls_per_second: 1}}
//	keys:
//	  - id: slow
//	    key: slow-key
//	    quota: {calls_per_second: 5, burst: 5}    # this key
//
// A key's own quota wins, then (for a token) the first value of its claim
// that has one, then the default.
type Table struct {
	Default *Limits
	// Keys by key id.
	Keys map[string]*Limits
	// Claim is the token claim (a string or a list) whose values ByClaim
	// maps.
	Claim   string
	ByClaim map[string]*Limits
}

// For returns the limits of a principal by its id and, for a token, its
// claims; nil: unlimited.
func (t *Table) For(id string, claims map[string]any) *Limits {
	if t == nil {
		return nil
	}
	if l, ok := t.Keys[id]; ok {
		return l
	}
	if t.Claim != "" && claims != nil {
		switch v := claims[t.Claim].(type) {
		case string:
			if l, ok := t.ByClaim[v]; ok {
				return l
			}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					if l, ok := t.ByClaim[s]; ok {
						return l
					}
				}
			}
		}
	}
	return t.Default
}

// Unlimited reports whether the table bounds nobody.
func (t *Table) Unlimited() bool {
	if t == nil {
		return true
	}
	if !t.Default.Unlimited() {
		return false
	}
	for _, l := range t.Keys {
		if !l.Unlimited() {
			return false
		}
	}
	for _, l := range t.ByClaim {
		if !l.Unlimited() {
			return false
		}
	}
	return true
}

// LoadFile reads the quotas of a keys file (the rest of it is read by
// core.LoadKeyRing and the rules). Keys without an id are named as the
// key ring names them, key#<index>. A bad quota is refused, naming it.
func LoadFile(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	return Parse(path, b)
}

// Parse is LoadFile of the bytes b read from path (a reload has them).
func Parse(path string, b []byte) (*Table, error) {
	var f struct {
		Quota        *Limits `yaml:"quota"`
		QuotaByClaim struct {
			Claim  string             `yaml:"claim"`
			Values map[string]*Limits `yaml:"values"`
		} `yaml:"quota_by_claim"`
		Keys []struct {
			ID    string  `yaml:"id"`
			Quota *Limits `yaml:"quota"`
		} `yaml:"keys"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	t := &Table{Default: f.Quota, Keys: map[string]*Limits{}, Claim: f.QuotaByClaim.Claim, ByClaim: f.QuotaByClaim.Values}
	if err := t.Default.Validate(); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	if len(t.ByClaim) > 0 && t.Claim == "" {
		return nil, fmt.Errorf("keys file %s: quota_by_claim: values without a claim", path)
	}
	for v, l := range t.ByClaim {
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("keys file %s: quota_by_claim: %s: %w", path, v, err)
		}
	}
	for i, k := range f.Keys {
		if k.Quota == nil {
			continue
		}
		id := k.ID
		if id == "" {
			id = fmt.Sprintf("key#%d", i)
		}
		if err := k.Quota.Validate(); err != nil {
			return nil, fmt.Errorf("keys file %s: key %s: %w", path, id, err)
		}
		t.Keys[id] = k.Quota
	}
	return t, nil
}
