#!/usr/bin/env bash
# Build the two reactbench images (docker/cpu.Dockerfile, docker/gpu.Dockerfile) on this machine.
#
#   bash scripts/images.sh [cpu|gpu|all]     (from the repository root; `make images` runs it)
#
# The engine: docker when its daemon answers, else podman (installed from Debian's packages
# when missing, with podman-compose, buildah, runc and debootstrap). Podman is configured for
# machines that forbid raising hard limits (runc, default_ulimits at the current hard limit).
# The bases: the Dockerfiles' defaults (python:3.11-slim-bookworm, ghcr.io/astral-sh/uv) when a
# registry answers; otherwise local ones made here, once: a Debian bookworm minbase with Python
# 3.11 from the apt sources' mirror (debootstrap, the host's extra CA certificates added so the
# package index is reachable from the build), and a uv image from the uv wheel on the package
# index. REACTBENCH_LOCAL_BASES=1 forces the local bases, =0 the registry ones.
# Prints one line per image: `image <tag> <MB> MB built in <s> s` (scripts/images-test.sh reads it).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION="${UV_VERSION:-0.9.5}"
LOCAL_PYTHON=localhost/reactbench-python:3.11-bookworm
LOCAL_UV=localhost/reactbench-uv:$UV_VERSION
CPU_TAG="${REACTBENCH_CPU_IMAGE:-reactbench-cpu:latest}"
GPU_TAG="${REACTBENCH_GPU_IMAGE:-reactbench-gpu:latest}"
log() { echo "images: $*" >&2; }

# The engine: a docker daemon that answers, else podman.
engine() {
    if [ -n "${REACTBENCH_ENGINE:-}" ]; then echo "$REACTBENCH_ENGINE"; return; fi
    if command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; then echo docker; return; fi
    echo podman
}

install_podman() {
    local missing=()
    for tool in podman buildah runc debootstrap podman-compose; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    # Service names resolve on podman's CNI networks only with the dnsname plugin (compose).
    [ -x /usr/lib/cni/dnsname ] || missing+=(dnsname)
    [ "${#missing[@]}" -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || { log "need root to install ${missing[*]} (apt-get), or install them yourself"; exit 1; }
    log "installing podman buildah runc debootstrap podman-compose from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        podman buildah runc debootstrap podman-compose uidmap slirp4netns fuse-overlayfs \
        golang-github-containernetworking-plugin-dnsname >/dev/null
}

hard_limit() {
    local name=$1 value=$2 pid1
    [ "$value" = unlimited ] && value=1048576
    pid1="$(awk -v n="$name" 'index($0, n) == 1 {print $(NF - 1)}' /proc/1/limits 2>/dev/null || true)"
    [ -n "$pid1" ] && [ "$pid1" != unlimited ] && [ "$pid1" -lt "$value" ] && value=$pid1
    echo "$value"
}

# runc (crun is not in every Debian release) and explicit ulimits: podman's default raises the
# open-files limit to 1048576, which a container cannot do where the hard limit is lower.
configure_podman() {
    local conf=/etc/containers/containers.conf
    [ "$(id -u)" -eq 0 ] || conf="${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf"
    if [ -f "$conf" ] && grep -q "reactbench" "$conf"; then return 0; fi
    if [ -f "$conf" ] && grep -qE '^\s*(runtime|default_ulimits)\s*=' "$conf"; then
        log "$conf sets runtime or default_ulimits already: left as it is"; return 0
    fi
    # The lowest hard limit of this shell and of PID 1 (a sandbox may cap PID 1 lower, and runc
    # cannot set what its parent's parent may not hold).
    local nofile nproc
    nofile="$(hard_limit "Max open files" "$(ulimit -Hn)")"
    nproc="$(hard_limit "Max processes" "$(ulimit -Hu)")"
    # Podman 4.3 holds at most 32768 processes itself (seen in /proc/<podman>/limits), so runc
    # cannot give a container more than that.
    [ "$nproc" -gt 32768 ] && nproc=32768
    mkdir -p "$(dirname "$conf")"
    log "writing $conf (runtime runc, nofile $nofile, nproc $nproc)"
    cat >>"$conf" <<CONF
# Written by reactbench scripts/images.sh: limits a container may hold on this machine.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
CONF
}

registry_reachable() {
    local code
    code="$(curl -s -o /dev/null -m 8 -w '%{http_code}' https://registry-1.docker.io/v2/ || true)"
    [ "$code" != "000" ] && [ -n "$code" ]
}

have_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# The first mirror of the apt sources (deb822 or one-line format).
apt_mirror() {
    local m
    m="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
    [ -n "$m" ] || m="$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
    echo "${m:-http://deb.debian.org/debian}"
}

# Debian bookworm minbase with Python 3.11 and CA certificates, imported as $LOCAL_PYTHON.
make_python_base() {
    have_image "$LOCAL_PYTHON" && { log "$LOCAL_PYTHON exists"; return 0; }
    command -v debootstrap >/dev/null || { log "debootstrap missing (apt-get install debootstrap)"; exit 1; }
    local root mirror t0
    root="$(mktemp -d /var/tmp/reactbench-rootfs.XXXXXX)"
    mirror="$(apt_mirror)"; t0=$SECONDS
    log "debootstrap bookworm minbase + python3.11 from $mirror into $root"
    debootstrap --variant=minbase --include=python3.11,ca-certificates bookworm "$root" "$mirror" >"$root.log" 2>&1 \
        || { tail -20 "$root.log" >&2; rm -rf "$root"; exit 1; }
    # The host's extra certificates (a TLS-inspecting proxy's CA, say): kept through later
    # `update-ca-certificates` runs because they live in /usr/local/share/ca-certificates.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null
    fi
    ln -sf python3.11 "$root/usr/bin/python"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc "$root"/usr/share/man
    tar -C "$root" -c . | "$ENGINE" import --change 'CMD ["python3.11"]' - "$LOCAL_PYTHON" >"$root.log" 2>&1 \
        || { cat "$root.log" >&2; rm -rf "$root"; exit 1; }
    rm -rf "$root" "$root.log"
    log "$LOCAL_PYTHON made in $((SECONDS - t0)) s"
}

# A scratch image holding /uv, from the uv wheel on the package index (what ghcr.io/astral-sh/uv holds).
make_uv_image() {
    have_image "$LOCAL_UV" && { log "$LOCAL_UV exists"; return 0; }
    local dir
    dir="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
        --python-version 3.11 -d "$dir" "uv==$UV_VERSION"
    python3 - "$dir" <<'PY'
import sys, zipfile, pathlib
d = pathlib.Path(sys.argv[1])
whl = next(d.glob("uv-*.whl"))
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith("/scripts/uv"))
    (d / "uv").write_bytes(z.read(name))
(d / "uv").chmod(0o755)
PY
    printf 'FROM scratch\nCOPY uv /uv\n' >"$dir/Containerfile"
    "$ENGINE" build -q -f "$dir/Containerfile" -t "$LOCAL_UV" "$dir" >/dev/null
    rm -rf "$dir"
    log "$LOCAL_UV made from the uv $UV_VERSION wheel"
}

# Build one image; prints its size and build time.
build_image() {
    local kind=$1 tag=$2 t0 args=() mb
    if [ "$LOCAL_BASES" = 1 ]; then args+=(--build-arg "PYTHON_IMAGE=$LOCAL_PYTHON" --build-arg "UV_IMAGE=$LOCAL_UV"); fi
    if [ "$ENGINE" = podman ]; then
        # docker format: OCI images drop SHELL (pipefail); the per-Dockerfile ignore file is
        # read by BuildKit on its own, podman is told; host network for the package index.
        args+=(--format docker --ignorefile "docker/$kind.Dockerfile.dockerignore" --network host --layers)
    fi
    [ -n "${REACTBENCH_EXTRAS:-}" ] && [ "$kind" = cpu ] && args+=(--build-arg "EXTRAS=$REACTBENCH_EXTRAS")
    t0=$(date +%s.%N)
    "$ENGINE" build "${args[@]}" -f "docker/$kind.Dockerfile" -t "$tag" . >&2
    local secs
    secs="$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")"
    mb="$("$ENGINE" image inspect --format '{{.Size}}' "$tag" | python3 -c 'import sys; print(round(int(sys.stdin.read()) / 1e6))')"
    # Dangling layers of earlier builds of this tag.
    "$ENGINE" image prune -f >/dev/null 2>&1 || true
    echo "image $tag $mb MB built in $secs s"
}

main() {
    local which="${1:-all}"
    ENGINE="$(engine)"
    if [ "$ENGINE" = podman ]; then install_podman; configure_podman; fi
    case "${REACTBENCH_LOCAL_BASES:-auto}" in
        1) LOCAL_BASES=1 ;;
        0) LOCAL_BASES=0 ;;
        *) if registry_reachable; then LOCAL_BASES=0; else LOCAL_BASES=1; fi ;;
    esac
    if [ "$LOCAL_BASES" = 1 ]; then
        log "no registry reachable: local bases"
        make_python_base
        make_uv_image
    fi
    case "$which" in
        cpu) build_image cpu "$CPU_TAG" ;;
        gpu) build_image gpu "$GPU_TAG" ;;
        all) build_image cpu "$CPU_TAG"; build_image gpu "$GPU_TAG" ;;
        bases) : ;;
        *) log "usage: $0 [cpu|gpu|all|bases]"; exit 2 ;;
    esac
}

main "$@"
