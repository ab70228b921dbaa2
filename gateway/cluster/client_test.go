package cluster_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
)

// TestNewClientForms: a master_name makes the host and addrs sentinels (a
// failover client); with redisCluster the host and addrs are a Redis
// Cluster's seeds; else the URL is one Redis, and addrs are refused; an
// error never carries the password.
func TestNewClientForms(t *testing.T) {
	one, err := cluster.NewClient("redis://127.0.0.1:6379/0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if got := one.(*redis.Client).Options().Addr; got != "127.0.0.1:6379" {
		t.Errorf("one Redis: addr %q", got)
	}
	failover, err := cluster.NewClient("redis://127.0.0.1:26379?master_name=m&addr=127.0.0.1:26380&addr=127.0.0.1:26381", false)
	if err != nil {
		t.Fatal(err)
	}
	defer failover.Close()
	if got := failover.(*redis.Client).Options().Addr; got != "FailoverClient" {
		t.Errorf("Sentinel URL: addr %q, want go-redis's failover client", got)
	}
	seeds, err := cluster.NewClient("redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", true)
	if err != nil {
		t.Fatal(err)
	}
	defer seeds.Close()
	if got := seeds.(*redis.ClusterClient).Options().Addrs; len(got) != 3 || got[0] != "127.0.0.1:7000" || got[2] != "127.0.0.1:7002" {
		t.Errorf("cluster URL: seeds %v, want the host and both addr=", got)
	}
	for _, bad := range []string{
		"redis://u:s3cret@127.0.0.1:26379?master_name=m&nope=1",
		"redis://127.0.0.1:26379?master_name=m&password=s3cret&db=x",
		"redis://127.0.0.1:26379/x?master_name=m&password=s3cret",
		"redis://u:s3cret@127.0.0.1:6379/0?nope=1",
		"redis://u:s3cret@127.0.0.1:6379/x",
		"redis://u:s3cret@[::1/0",
		"redis://u:s3cret@127.0.0.1:7000?addr=127.0.0.1:7001&nope=1&cluster",
		"redis://u:s3cret@127.0.0.1:7000?addr=127.0.0.1:7001&master_name=m&cluster",
		"redis://u:s3cret@127.0.0.1:7000?addr=127.0.0.1:7001",
	} {
		_, err := cluster.NewClient(bad, strings.Contains(bad, "cluster"))
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
