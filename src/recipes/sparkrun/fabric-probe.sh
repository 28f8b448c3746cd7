#!/bin/sh
# A sparkrun cluster node's fabric candidates, asked of the node over ssh (fabric.ts sends it
# and reads the answer; its one placeholder is filled by src/remote/sh-template.ts): each
# interface backed by an RDMA device as `rdma IF`, the IPv4 addresses (`ip -o addr show`), then
# `route` and the routing table. It always exits 0: a part the node cannot give is left out.
net=@NET@
for d in "$net"/*; do [ -e "$d/device/infiniband" ] && echo "rdma ${d##*/}"; done
ip -o addr show 2>/dev/null
echo route
cat /proc/net/route 2>/dev/null
true
