#!/usr/bin/env bash
# Installs the Debian 12 packages Fusion Explorer needs. Idempotent: a second run checks with dpkg and installs
# nothing when everything is present.
#   scripts/install-deps.sh          what developing needs: building, testing, packaging (and what running needs)
#   scripts/install-deps.sh --run    only what running the built programs needs (the .deb's dependencies)
set -euo pipefail

# Running: the libraries fusion-cli and fusion-explorer load, Qt's platform plugins, a font, graphviz's layout.
run_packages=(
  libqt6core6 libqt6gui6 libqt6widgets6 libqt6svg6 libqt6concurrent6 qt6-qpa-plugins
  libgvc6 libcgraph6 libonnx1 libprotobuf32 fonts-dejavu-core
  openssh-client  # fusion-cli run --target ssh://... (docs/remote.md)
)
# Developing: compilers and headers, test tools and data, the sanitizer and fuzzer runtimes, man pages and
# the Debian package tools.
dev_packages=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-svg-dev libgl-dev
  libgraphviz-dev graphviz
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  xvfb xauth
  clang libclang-rt-14-dev
  python3 python3-numpy python3-jsonschema
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler python3-onnx
  help2man dpkg-dev file
  # Remote runs (docs/remote.md): the tests start their own sshd, munged, slurmctld and slurmd on 127.0.0.1
  # with their own configs. On a machine with systemd, installing these also enables the system's services.
  openssh-server munge slurmctld slurmd slurm-client
)

case "${1:-}" in
  --run) packages=("${run_packages[@]}") ;;
  ""|--dev) packages=("${run_packages[@]}" "${dev_packages[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [--run|--dev]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
