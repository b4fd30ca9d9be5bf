#!/usr/bin/env bash
# Builds the filter's OCI image, as Istio's WasmPlugin pulls it: the Wasm image specification's
# compat variant, one layer holding `plugin.wasm` at the root. Writes an OCI image layout
# archive (`oci-archive:`), which `skopeo copy` pushes to any registry.
#
#   envoy/oci-image.sh WASM ARCHIVE [TAG]
#
# Needs umoci (Debian's package `umoci`); with `--install`, installs it with apt-get when missing.
set -euo pipefail

install=0
if [ "${1:-}" = "--install" ]; then
    install=1
    shift
fi
wasm=${1:?usage: envoy/oci-image.sh [--install] WASM ARCHIVE [TAG]}
archive=${2:?usage: envoy/oci-image.sh [--install] WASM ARCHIVE [TAG]}
tag=${3:-latest}

if ! command -v umoci >/dev/null; then
    if [ "$install" = 1 ]; then
        sudo=""
        [ "$(id -u)" = 0 ] || sudo="sudo -n"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q umoci >/dev/null || true
    fi
    if ! command -v umoci >/dev/null; then
        echo "oci-image: umoci is not installed and could not be (apt-get install umoci)" >&2
        exit 3
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layout="$work/layout"
rootless=""
[ "$(id -u)" = 0 ] || rootless="--rootless"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
# unpack/repack rather than `umoci insert`, whose layer (umoci 0.4.7) lacks the tar padding and
# end-of-archive blocks.
umoci unpack $rootless --image "$layout:$tag" "$work/bundle" >/dev/null
install -m 0644 "$wasm" "$work/bundle/rootfs/plugin.wasm"
umoci repack --image "$layout:$tag" "$work/bundle"
# The compat variant's annotation: one standard tar+gzip layer holding plugin.wasm.
umoci config $rootless --image "$layout:$tag" --os wasi --architecture wasm \
    --manifest.annotation module.wasm.image/variant=compat
umoci gc --layout "$layout"
mkdir -p "$(dirname "$archive")"
tar -C "$layout" -cf "$archive.tmp" .
mv "$archive.tmp" "$archive"
echo "oci-image: $archive ($tag), layer /plugin.wasm = $wasm"
