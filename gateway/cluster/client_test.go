package cluster_test

import (
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
)

// TestNewClientForms: a master_name makes the host and addrs sentinels (a
// failover client); without one the URL is one Redis; an error never
// carries the password.
func TestNewClientForms(t *testing.T) {
	one, err := cluster.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if got := one.Options().Addr; got != "127.0.0.1:6379" {
		t.Errorf("one Redis: addr %q", got)
	}
	failover, err := cluster.NewClient("redis://127.0.0.1:26379?master_name=m&addr=127.0.0.1:26380&addr=127.0.0.1:26381")
	if err != nil {
		t.Fatal(err)
	}
	defer failover.Close()
	if got := failover.Options().Addr; got != "FailoverClient" {
		t.Errorf("Sentinel URL: addr %q, want go-redis's failover client", got)
	}
	for _, bad := range []string{
		"redis://u:s3cret@127.0.0.1:26379?master_name=m&nope=1",
		"redis://127.0.0.1:26379?master_name=m&password=s3cret&db=x",
		"redis://127.0.0.1:26379/x?master_name=m&password=s3cret",
		"redis://u:s3cret@127.0.0.1:6379/0?nope=1",
		"redis://u:s3cret@127.0.0.1:6379/x",
		"redis://u:s3cret@[::1/0",
	} {
		_, err := cluster.NewClient(bad)
		if err == nil {
			t.Errorf("%s: no error", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error carries the password: %v", bad, err)
		}
		if got := cluster.Redacted(bad); strings.Contains(got, "s3cret") {
			t.Errorf("Redacted(%s) = %s", bad, got)
		}
	}
}
