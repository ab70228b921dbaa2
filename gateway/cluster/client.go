package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NewClient makes the Redis client of a node from the URL of --redis, in
// one of go-redis's own forms:
//
//	redis://host:6379/0                        one Redis (or a primary whose
//	                                           replicas nobody promotes)
//	redis://s1:26379?master_name=NAME&addr=s2:26379&addr=s3:26379
//	                                           Sentinel: the host and every
//	                                           addr are sentinels, asked for
//	                                           the primary of NAME; the
//	                                           user and password of the URL
//	                                           are the sentinels', those of
//	                                           Redis are username= and
//	                                           password=
//	redis://seed1:6379?addr=seed2:6379&addr=seed3:6379, with redisCluster
//	                                           Redis Cluster: the host and
//	                                           every addr are seeds, the
//	                                           client learns the others and
//	                                           the slots from them
//
// With Sentinel the client asks the sentinels for the primary at each new
// connection and drops its connections to a former primary when they
// announce a failover, so every user of the client (the registry, the
// heartbeat, the subscription of Peers) follows the new primary without a
// restart of the node. A cluster client follows the slots' moves
// (MOVED/ASK) and reloads the slot map when a primary fails over.
//
// The registry bounds its calls with context deadlines, which go-redis
// applies to a read in progress only when asked to (the earlier of the
// deadline and ReadTimeout): every form is asked to. The subscription of
// Peers reads without a deadline and keeps the client's own timeouts.
//
// Errors name the URL without its password.
func NewClient(rawURL string, redisCluster bool) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error quotes the URL, password included.
		return nil, fmt.Errorf("redis URL: not a URL (redis://[user:password@]host:port[/db][?master_name=NAME&addr=host:port...])")
	}
	if redisCluster {
		if u.Query().Has("master_name") {
			return nil, fmt.Errorf("redis URL %s: master_name= (Sentinel) with --redis-cluster: a Redis Cluster is named by its seeds (addr=), Sentinel without --redis-cluster", redacted(u))
		}
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL %s (Redis Cluster): %s", redacted(u), redact(err, u))
		}
		opts.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opts), nil
	}
	if u.Query().Has("master_name") {
		opts, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL %s (Sentinel): %s", redacted(u), redact(err, u))
		}
		opts.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(opts), nil
	}
	if u.Query().Has("addr") {
		// go-redis's cluster URL form: refused by name rather than by
		// ParseURL's "unexpected option: addr".
		return nil, fmt.Errorf("redis URL %s: several addresses (addr=) without master_name= nor --redis-cluster: Sentinel needs master_name=NAME, a Redis Cluster --redis-cluster (docs/CLUSTER.md)", redacted(u))
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %s", redacted(u), redact(err, u))
	}
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}

// IsCluster reports whether rdb is a Redis Cluster client (NewClient with
// redisCluster): node inboxes then go on sharded pub/sub, and the reaper
// scans every primary.
func IsCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Redacted is the URL of --redis as a log line or an error may name it:
// without its passwords (the URL's and a Sentinel URL's password=).
func Redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(not a URL)"
	}
	return redacted(u)
}

func redacted(u *url.URL) string {
	c := *u
	if q := c.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// redact keeps a parser's message from carrying the URL's passwords.
func redact(err error, u *url.URL) string {
	msg := err.Error()
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	for _, p := range u.Query()["password"] {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
}

// CheckServer refuses a Redis Cluster node reached without
// --redis-cluster: a plain client would follow none of its MOVED
// redirections, and the offices of other slots would fail join by join.
// Refused at start, with the flag to use, rather than later.
func CheckServer(ctx context.Context, rdb redis.UniversalClient) error {
	if IsCluster(rdb) {
		return nil
	}
	// INFO's default sections (not "cluster" alone: miniredis knows only
	// some). A server that will not say (a proxy without INFO) is not
	// refused: its scripts' errors will say more than a guess.
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		return nil //nolint:nilerr // see above
	}
	if strings.Contains(info, "cluster_enabled:1") {
		return errors.New("redis is a Redis Cluster node: give --redis-cluster (and its seeds as addr=, docs/CLUSTER.md)")
	}
	return nil
}
