#!/usr/bin/env bash
# A three-node gateway cluster on loopback, started by one command: redis-server, three
# `smcp gateway --redis` nodes sharing it, Debian's nginx as the load balancer in front of
# them, and two computers: pc-direct, given the three nodes' URLs (it fails over between
# them), and pc-lb, which connects through nginx. Ctrl-C stops everything. README.md beside
# this script explains each piece; docs/CLUSTER.md the cluster itself.
#
# Settings (environment): SMCP (default bin/smcp, built with `make build` when missing),
# NGINX, REDIS_SERVER, LB_PORT (8080), GRPC_PORT (8090), NODE_PORTS ("8081 8082 8083"),
# REDIS_PORT (6399), REDIS_TTL (3s), OFFICE (cluster), SMCP_API_KEY (the one key of every
# node and client; a demo key by default), CLUSTER_DIR (logs, pids and nginx's prefix;
# a new temporary folder by default).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

SMCP="${SMCP:-$root/bin/smcp}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
REDIS_SERVER="${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}"
LB_PORT="${LB_PORT:-8080}"
GRPC_PORT="${GRPC_PORT:-8090}"
read -r -a node_ports <<<"${NODE_PORTS:-8081 8082 8083}"
REDIS_PORT="${REDIS_PORT:-6399}"
REDIS_TTL="${REDIS_TTL:-3s}"
OFFICE="${OFFICE:-cluster}"
export SMCP_API_KEY="${SMCP_API_KEY:-smcp-cluster-demo-key}"
state="${CLUSTER_DIR:-$(mktemp -d -t smcp-cluster.XXXXXX)}"

if [ "${#node_ports[@]}" -ne 3 ]; then
  echo "NODE_PORTS must name three ports, got: ${node_ports[*]}" >&2; exit 2
fi
for bin in "$NGINX" "$REDIS_SERVER"; do
  if [ ! -x "$bin" ]; then
    echo "$bin not found: install Debian's nginx and redis-server (apt-get install nginx redis-server)" >&2; exit 1
  fi
done
if [ ! -x "$SMCP" ]; then
  echo "building $SMCP (make build)"
  make -C "$root" build
fi

pids=()
# start NAME CMD...: runs CMD in the background, its output in $state/NAME.log, its pid
# in $state/NAME.pid (kill -9 "$(cat $state/gw1.pid)" kills node 1).
start() {
  local name="$1"; shift
  "$@" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
  pids+=($!)
}
stop_all() {
  trap - EXIT INT TERM
  if [ "${#pids[@]}" -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  echo "cluster stopped (logs in $state)"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# wait_until WHAT CMD...: retries CMD for 30 s.
wait_until() {
  local what="$1"; shift
  for _ in $(seq 1 150); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "$what did not come up: see $state/*.log" >&2
  return 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ready() { "$SMCP" healthcheck --timeout 1s "$1/readyz"; }

mkdir -p "$state/nginx/logs" "$state/nginx/temp"
# nginx's workers drop root (as nobody) when the master runs as root: they
# must reach their temp folders.
chmod 755 "$state" "$state/nginx" "$state/nginx/temp"

# 1. Redis: one instance, in memory only (the registry heals itself if it restarts empty).
start redis "$REDIS_SERVER" --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no --dir "$state"
wait_until "redis-server on port $REDIS_PORT" port_open "$REDIS_PORT"

# 2. Three gateway nodes. Behind nginx every client arrives from its address, so the
# per-address limits move to nginx (limit_conn) and are off here.
node_urls=()
for i in 1 2 3; do
  port="${node_ports[$((i - 1))]}"
  start "gw$i" "$SMCP" gateway --listen "127.0.0.1:$port" \
    --redis "redis://127.0.0.1:$REDIS_PORT/0" --node-id "gw$i" --redis-ttl "$REDIS_TTL" \
    --max-conns-per-addr -1 --max-unauthenticated-per-addr -1 --max-mcp-sessions-per-addr -1 --max-mcp-listen-streams-per-addr -1 \
    --public-url "http://127.0.0.1:$LB_PORT"
  node_urls+=("http://127.0.0.1:$port")
done
for u in "${node_urls[@]}"; do wait_until "gateway $u" ready "$u"; done

# 3. nginx, from the template beside this script.
sed -e "s/@GW1_PORT@/${node_ports[0]}/g" -e "s/@GW2_PORT@/${node_ports[1]}/g" -e "s/@GW3_PORT@/${node_ports[2]}/g" \
  -e "s/@LB_PORT@/$LB_PORT/g" -e "s/@GRPC_PORT@/$GRPC_PORT/g" "$here/nginx.conf.in" >"$state/nginx/nginx.conf"
start nginx "$NGINX" -p "$state/nginx" -c nginx.conf -e stderr -g "daemon off; pid $state/nginx/nginx.pid;"
lb="http://127.0.0.1:$LB_PORT"
wait_until "nginx on port $LB_PORT" ready "$lb"

# 4. Two computers hosting the document server over the example documents.
cat >"$state/computer.yaml" <<YAML
servers:
  docs:
    name: docs
    type: stdio
    disabled: false
    forbidden_tools: []
    tool_meta: {}
    default_tool_meta: {auto_apply: true}
    server_parameters:
      command: $SMCP
      args: [docs, --root, $root/examples/docs, --host, com.example.docs]
      env: null
      cwd: null
      encoding: utf-8
      encoding_error_handler: strict
inputs: []
YAML
all_nodes="$(IFS=,; echo "${node_urls[*]}")"
start pc-direct "$SMCP" computer --config "$state/computer.yaml" --office "$OFFICE" --name pc-direct --gateway "$all_nodes"
start pc-lb "$SMCP" computer --config "$state/computer.yaml" --office "$OFFICE" --name pc-lb --gateway "$lb"
wait_until "computer pc-direct" grep -q "joined office" "$state/pc-direct.log"
wait_until "computer pc-lb" grep -q "joined office" "$state/pc-lb.log"

cat <<BANNER
cluster ready
  load balancer  $lb  (Socket.IO, MCP at $lb/mcp/$OFFICE, Connect, console)
                 127.0.0.1:$GRPC_PORT  (gRPC over h2c)
  nodes          gw1 ${node_urls[0]}  gw2 ${node_urls[1]}  gw3 ${node_urls[2]}
  redis          redis://127.0.0.1:$REDIS_PORT/0
  computers      pc-direct (--gateway $all_nodes), pc-lb (--gateway $lb)
  office         $OFFICE; key in \$SMCP_API_KEY ($( [ "$SMCP_API_KEY" = smcp-cluster-demo-key ] && echo "the demo key smcp-cluster-demo-key" || echo "yours"))
  logs and pids  $state
Try:
  $SMCP agent --url $lb --office $OFFICE call docs__list_documents --computer pc-direct
  $SMCP agent --url $lb --office $OFFICE list
  kill -9 \$(cat $state/gw1.pid)     # a node dies; its computers and agents move on
Ctrl-C stops the cluster.
BANNER
wait
