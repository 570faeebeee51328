#!/usr/bin/env bash
# npm run build:images: builds the Dockerfile's two targets, the controller (`runtime`) and the agent
# image (`agent`), with buildah: no docker engine, no registry (docs/images.md).
#
# The Dockerfile's base images cannot be pulled here, so local stand-ins are made once and tagged
# exactly as its FROM lines name them: a debootstrap bookworm rootfs (`debian:<DEBIAN_VERSION>`) and
# that rootfs plus this machine's Node, npm, the CA bundle and a `node` user uid 1000
# (`node:<NODE_VERSION>-bookworm-slim`). The Dockerfile itself is built unmodified.
#
# Everything lives in one cache per machine, like the control-plane binaries:
#   ~/.cache/ai-agent-subsystem/images/  (IMAGES_CACHE overrides)
#     storage/, run/    buildah's own image store (nothing under /var/lib/containers)
#     bookworm-rootfs.tar  the debootstrap rootfs
#     archives/<image id>.tar  each built image as a docker archive, for `ctr images import`
# and a manifest per checkout, <repo>/.cache/images.json, naming the images this checkout built.
#
# Usage: scripts/images/build.sh [agent|controller|pause ...]  (default all three); prints the
# manifest's path. pause is the real node's sandbox image (scripts/cluster/pause, docs/real-node.md).
# Needs root and the Debian packages buildah and debootstrap (scripts/ensure-deps.sh installs them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
log() { echo "[images] $*" >&2; }
die() { echo "build-images: $*" >&2; exit 1; }

[[ "$(id -u)" == 0 ]] || die "needs root (buildah's image store and debootstrap's chroot); run as root"
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null ||
    die "$tool is not installed (Debian package $tool; scripts/ensure-deps.sh installs it as root)"
done

CACHE="${IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-agent-subsystem/images}"
mkdir -p "$CACHE/archives"
# buildah's images live under its --root and --runroot. It still creates a few paths of its own
# whatever the flags (a blob-info cache, a CNI lock, a networks dir, seen with buildah 1.28): those
# that did not exist before are removed when this script ends, so the machine keeps only the cache.
# (test/harness/images.ts keeps the same list for its own buildah calls.)
bh() { buildah --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver overlay "$@"; }
# One build at a time per machine: buildah's store is shared by every checkout.
exec 9>"$CACHE/lock"
if ! flock -n 9; then
  log "another image build is running; waiting for it"
  flock 9
fi

# Read once the lock is held: a build that waited must not record (and later remove) the paths
# that the build before it created and is about to remove itself.
created=()
for p in /var/lib/containers /run/containers /run/runc /etc/cni; do [[ -e "$p" ]] || created+=("$p"); done
# shellcheck disable=SC2317 # run by the trap
forget_created() { local p; for p in "${created[@]}"; do rm -rf "$p"; done; }
trap forget_created EXIT

# The names the Dockerfile's FROM lines use, from its ARG defaults.
arg() { sed -n "s/^ARG $1=//p" Dockerfile | head -1; }
NODE_VERSION="$(arg NODE_VERSION)"
DEBIAN_VERSION="$(arg DEBIAN_VERSION)"
[[ -n "$NODE_VERSION" && -n "$DEBIAN_VERSION" ]] || die "Dockerfile: no ARG NODE_VERSION/DEBIAN_VERSION default"
# Short names as docker resolves them, so `FROM debian:…` finds the local image.
DEBIAN_IMAGE="docker.io/library/debian:$DEBIAN_VERSION"
NODE_IMAGE="docker.io/library/node:$NODE_VERSION-bookworm-slim"
VERSION="$(node -p 'require("./package.json").version')"
# The release names the controller defaults to (src/controller/config.ts DEFAULT_AGENT_IMAGE,
# deploy/base/controller-deployment.yaml): a pod built exactly as the controller builds it runs them.
AGENT_IMAGE="ghcr.io/re-cinq/ai-agent-run-pod:v$VERSION"
CONTROLLER_IMAGE="ghcr.io/re-cinq/ai-agent-controller:v$VERSION"

has_image() { bh inspect --type image "$1" >/dev/null 2>&1; }

debian_base() {
  has_image "$DEBIAN_IMAGE" && return 0
  local rootfs="$CACHE/bookworm-rootfs.tar" start=$SECONDS
  if [[ ! -s "$rootfs" ]]; then
    local dir
    dir="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
    log "debootstrap --variant=minbase bookworm (once per machine)"
    debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >&2 ||
      { rm -rf "$dir"; die "debootstrap failed (is deb.debian.org reachable?)"; }
    # What the official slim image carries: the three bookworm suites, no package lists or debs.
    rm -f "$dir/etc/apt/sources.list"
    cat >"$dir/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb "$dir"/var/log/*.log
    tar -C "$dir" --numeric-owner -cf "$rootfs.tmp" .
    mv "$rootfs.tmp" "$rootfs"
    rm -rf "$dir"
  fi
  local ctr
  ctr="$(bh from scratch)"
  bh add "$ctr" "$rootfs" / >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
  bh commit --quiet --rm "$ctr" "$DEBIAN_IMAGE" >/dev/null
  log "made $DEBIAN_IMAGE in $((SECONDS - start)) s"
}

node_base() {
  has_image "$NODE_IMAGE" && return 0
  local node npm_dir bundle have start=$SECONDS
  node="$(readlink -f "$(command -v node)")"
  have="$("$node" --version)"
  # A stand-in named for one Node release must carry that release: the agent image's executable
  # embeds the Node that builds it.
  [[ "$have" == "v$NODE_VERSION" ]] ||
    die "the Dockerfile's FROM names Node $NODE_VERSION but this machine's node is $have: install Node $NODE_VERSION or change ARG NODE_VERSION"
  npm_dir="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)"
  # TLS to the registries may be re-signed by a proxy the host trusts through its CA bundle; npm ci
  # inside the build needs the same trust (a registry-pulled node image would need it too).
  bundle=/etc/ssl/certs/ca-certificates.crt
  [[ -s "$bundle" ]] || die "no CA bundle at $bundle"
  local ctr mnt
  ctr="$(bh from --pull=never "$DEBIAN_IMAGE")"
  mnt="$(bh mount "$ctr")"
  install -D -m 0755 "$node" "$mnt/usr/local/bin/node"
  mkdir -p "$mnt/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$mnt/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  install -D -m 0644 "$bundle" "$mnt/etc/ssl/certs/ca-certificates.crt"
  # The official image's user: node, uid and gid 1000, home /home/node.
  echo "node:x:1000:" >>"$mnt/etc/group"
  echo "node:x:1000:1000::/home/node:/bin/bash" >>"$mnt/etc/passwd"
  echo "node:*:20000:0:99999:7:::" >>"$mnt/etc/shadow"
  install -d -m 0755 -o 1000 -g 1000 "$mnt/home/node"
  bh umount "$ctr" >/dev/null
  bh config --env NODE_VERSION="$NODE_VERSION" --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    --cmd node "$ctr"
  bh commit --quiet --rm "$ctr" "$NODE_IMAGE" >/dev/null
  log "made $NODE_IMAGE in $((SECONDS - start)) s"
}

# The real node's sandbox image, under the name the kubelet of this release defaults to (containerd's
# sandbox_image is set to it too): the upstream image cannot be pulled here.
PAUSE_IMAGE="registry.k8s.io/pause:3.10"
pause_image() {
  local bin ctr
  bin="$(bash scripts/cluster/build.sh)"
  # Rebuilt only when the program changed: a new image id means a new import into the node.
  local sum
  sum="$(sha256sum "$bin/pause" | cut -c1-64)"
  if has_image "$PAUSE_IMAGE" &&
    [[ "$(bh inspect --type image --format '{{index .Docker.Config.Labels "pause.sha256"}}' "$PAUSE_IMAGE")" == "$sum" ]]; then
    export_archive "$PAUSE_IMAGE"
    return
  fi
  ctr="$(bh from scratch)"
  bh copy --chmod 0755 "$ctr" "$bin/pause" /pause >/dev/null
  bh config --entrypoint '["/pause"]' --user 65535:65535 --label "pause.sha256=$sum" "$ctr"
  bh commit --quiet --rm "$ctr" "$PAUSE_IMAGE" >/dev/null
  export_archive "$PAUSE_IMAGE"
}

# Saves an image as a docker archive named by its id (once); echoes the id.
export_archive() {
  local name="$1" id archive
  id="$(bh inspect --type image --format '{{.FromImageID}}' "$name")"
  archive="$CACHE/archives/$id.tar"
  if [[ ! -s "$archive" ]]; then
    bh push --quiet "$name" "docker-archive:$archive.tmp:$name" >&2
    mv "$archive.tmp" "$archive"
  fi
  echo "$id"
}

# Builds one target; echoes its image id.
build_target() {
  local target="$1" name="$2" start=$SECONDS
  log "buildah bud --target $target -> $name"
  # --format docker keeps HEALTHCHECK (OCI image configs have no field for it); --network=host: the
  # RUN steps reach the package registries as the host does (no CNI network for the build).
  bh bud --pull=never --network=host --layers --format docker --target "$target" \
    -t "$name" -f Dockerfile . >&2 || die "buildah bud --target $target failed (output above)"
  local id
  id="$(export_archive "$name")"
  log "$name ($target) built in $((SECONDS - start)) s"
  echo "$id"
}

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(agent controller pause)
debian_base
node_base
entries=()
for t in "${targets[@]}"; do
  case "$t" in
    agent) id="$(build_target agent "$AGENT_IMAGE")"; name="$AGENT_IMAGE" ;;
    controller) id="$(build_target runtime "$CONTROLLER_IMAGE")"; name="$CONTROLLER_IMAGE" ;;
    pause) id="$(pause_image)"; name="$PAUSE_IMAGE" ;;
    *) die "unknown image '$t' (agent, controller or pause)" ;;
  esac
  entries+=("\"$t\":{\"name\":\"$name\",\"id\":\"$id\",\"archive\":\"$CACHE/archives/$id.tar\"}")
done
# Drop archives no image in the store has anymore (each rebuild after a change leaves one).
for a in "$CACHE"/archives/*.tar; do
  [[ -e "$a" ]] || continue
  has_image "$(basename "$a" .tar)" || rm -f "$a"
done
mkdir -p .cache
manifest=".cache/images.json"
# Merged into what the manifest held: building one image keeps the other's entry.
node -e '
  const fs = require("node:fs");
  const [file, store, ...entries] = process.argv.slice(1);
  let old = {};
  try { old = JSON.parse(fs.readFileSync(file, "utf8")); } catch {}
  const next = { ...old, store: JSON.parse(store) };
  for (const e of entries) Object.assign(next, JSON.parse(`{${e}}`));
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(next, null, 2)}\n`);
  fs.renameSync(`${file}.tmp`, file);
' "$manifest" "{\"root\":\"$CACHE/storage\",\"runroot\":\"$CACHE/run\"}" "${entries[@]}"
echo "$ROOT/$manifest"
