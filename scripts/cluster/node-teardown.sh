#!/usr/bin/env bash
# Takes a real node (test/harness/real-node, docs/real-node.md) off the machine and puts back what
# it changed: run by the harness when a plane stops, and by the plane's watchdog when the process
# that started it died without stopping it. Idempotent, and safe on a half-started node: the
# harness records each change in <node dir>/teardown/ before making it.
# Usage: node-teardown.sh <node dir>
#   teardown/pgids          the kubelet's and containerd's process groups
#   teardown/socket         containerd's socket (its shims are started with -address <socket>)
#   teardown/cgroup-root    the kubelet's cgroupRoot (one tree in every cgroup hierarchy)
#   teardown/bridge         the CNI bridge created for the node
#   teardown/sysctls        "<key> <value before>" for each sysctl the kubelet or CNI changes
#   teardown/created-paths  paths outside the node dir that did not exist before it started
#   teardown/lock           the machine-wide lock file this node holds
#   teardown/pgids          also kube-proxy's and kube-router's groups, when they run
#   teardown/nft-tables     `nft list tables` before kube-proxy or the NetworkPolicy engine started
#   teardown/kube-chains    "<ip|ip6> <table> <chain>" for each KUBE-* chain present before kube-proxy
#                           or kube-router (the NetworkPolicy engine) started
#   teardown/ipsets         `ipset list -n` before kube-router started
set -u
dir="${1:?usage: node-teardown.sh <node dir>}"
t="$dir/teardown"
[[ -d "$t" ]] || exit 0
read_lines() { [[ -f "$t/$1" ]] && grep -v '^$' "$t/$1"; }

# 1. The kubelet and containerd (TERM, then KILL), so nothing restarts a container meanwhile.
mapfile -t groups < <(read_lines pgids)
for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null; done
for _ in $(seq 1 30); do
  alive=0
  for g in "${groups[@]}"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
  [[ $alive == 0 ]] && break
  sleep 0.1
done
for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done

# 2. Every container process: they all live in the node's cgroup tree.
cgroup_root="$(read_lines cgroup-root | head -1)"
cgroup_dirs=()
if [[ -n "$cgroup_root" ]]; then
  for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do [[ -d "$d" ]] && cgroup_dirs+=("$d"); done
fi
for _ in $(seq 1 50); do
  pids="$(for d in "${cgroup_dirs[@]}"; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u)"
  [[ -z "$pids" ]] && break
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $pids 2>/dev/null
  sleep 0.1
done

# 3. containerd's shims: started detached by containerd, each with -address <our socket>.
socket="$(read_lines socket | head -1)"
if [[ -n "$socket" ]]; then
  for p in /proc/[0-9]*; do
    cmd="$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" || continue
    [[ "$cmd" == *containerd-shim* && "$cmd" == *"-address $socket "* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
fi

# 4. Mounts: the kubelet's root-dir bind mount and volumes, sandbox shm, network namespaces and the
#    containers' overlay rootfs all sit under the node dir; deepest first.
mapfile -t created < <(read_lines created-paths)
under_node() {
  local m="$1" p
  [[ "$m" == "$dir" || "$m" == "$dir"/* ]] && return 0
  for p in "${created[@]}"; do [[ "$m" == "$p" || "$m" == "$p"/* ]] && return 0; done
  return 1
}
for _ in 1 2 3; do
  mapfile -t mounts < <(awk '{print $5}' /proc/self/mountinfo | sort -r)
  left=0
  for m in "${mounts[@]}"; do
    m="${m//\\040/ }"
    under_node "$m" || continue
    left=1
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  [[ $left == 0 ]] && break
done

# 5. The cgroup tree, leaves first (a cgroup goes once its processes are gone).
for d in "${cgroup_dirs[@]}"; do
  for _ in 1 2 3 4 5; do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d "$d" ]] || break
    sleep 0.2
  done
done

# 6. The bridge and any veth still attached to it (a pod's netns takes its own end with it).
bridge="$(read_lines bridge | head -1)"
if [[ -n "$bridge" ]] && ip link show "$bridge" >/dev/null 2>&1; then
  for veth in $(ip -o link show master "$bridge" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$veth" 2>/dev/null
  done
  ip link del "$bridge" 2>/dev/null
fi

# 6b. kube-proxy's and kube-router's firewall rules (both are stopped in step 1): nftables tables that
#     did not exist before go whole; in tables that did, the KUBE-* chains they added and the rules
#     jumping to them; then kube-router's ipsets (a set goes once no rule names it).
if [[ -f "$t/nft-tables" ]]; then
  mapfile -t tables_before < <(read_lines nft-tables)
  while read -r table; do
    [[ -z "$table" ]] && continue
    keep=0
    for b in "${tables_before[@]}"; do [[ "$b" == "$table" ]] && keep=1; done
    # shellcheck disable=SC2086 # "table <family> <name>"
    [[ $keep == 0 ]] && nft delete ${table} 2>/dev/null
  done < <(nft list tables 2>/dev/null)
fi
if [[ -f "$t/kube-chains" ]]; then
  mapfile -t chains_before < <(read_lines kube-chains)
  for pair in "ip iptables" "ip6 ip6tables"; do
    family="${pair% *}" tool="${pair#* }"
    table="" new_chains=()
    while read -r line; do
      [[ "$line" == \** ]] && table="${line#\*}"
      [[ "$line" =~ ^:(KUBE-[^ ]+) ]] || continue
      chain="${BASH_REMATCH[1]}" known=0
      for b in "${chains_before[@]}"; do [[ "$b" == "$family $table $chain" ]] && known=1; done
      [[ $known == 0 ]] && new_chains+=("$table $chain")
    done < <("$tool-save" 2>/dev/null)
    for tc in "${new_chains[@]}"; do
      table="${tc% *}" chain="${tc#* }"
      "$tool-save" -t "$table" 2>/dev/null | grep -E -- "^-A .* -j $chain( |\$)" | while read -r rule; do
        # shellcheck disable=SC2086 # the rule's own words
        eval "$tool -t $table -D ${rule#-A }" 2>/dev/null
      done
    done
    for tc in "${new_chains[@]}"; do "$tool" -t "${tc% *}" -F "${tc#* }" 2>/dev/null; done
    for tc in "${new_chains[@]}"; do "$tool" -t "${tc% *}" -X "${tc#* }" 2>/dev/null; done
  done
fi
if [[ -f "$t/ipsets" ]] && command -v ipset >/dev/null; then
  mapfile -t sets_before < <(read_lines ipsets)
  while read -r set; do
    [[ -z "$set" ]] && continue
    keep=0
    for b in "${sets_before[@]}"; do [[ "$b" == "$set" ]] && keep=1; done
    [[ $keep == 0 ]] && ipset destroy "$set" 2>/dev/null
  done < <(ipset list -n 2>/dev/null)
fi

# 7. The sysctls as they were.
while read -r key value; do
  [[ -n "$key" ]] && echo "$value" >"/proc/sys/${key//.//}" 2>/dev/null
done < <(read_lines sysctls)

# 8. Paths the node created outside its dir, most recent first.
# --one-file-system: a mount that survived step 4 is left alone rather than emptied.
for ((i = ${#created[@]} - 1; i >= 0; i--)); do rm -rf --one-file-system -- "${created[$i]}"; done

# 9. The machine-wide lock, if it is still ours.
lock="$(read_lines lock | head -1)"
if [[ -n "$lock" && -f "$lock" ]] && [[ "$(sed -n 2p "$lock")" == "$dir" ]]; then rm -f "$lock"; fi
rm -rf "$t"
exit 0
