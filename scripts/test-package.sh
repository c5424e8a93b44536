#!/usr/bin/env bash
# The Debian package test (ctest: package_deb_installs_and_runs). From a built tree: builds the .deb with CPack,
# installs it with a real `dpkg -i` into a temporary root (its own dpkg database, so this machine's packages are
# untouched), checks that every dependency it declares is installed here with a version that satisfies it, and
# runs what it installed: fusion-cli --version, fusion-cli analyze on an installed sample, and fusion-explorer
# opening that sample offscreen and saving a screenshot.
# As root in CI (CI=true, as .ci/run runs) or with FX_PACKAGE_SYSTEM_INSTALL=1, it also installs the package
# into the system with dpkg -i, runs the same from /usr and removes it again (FX_PACKAGE_SYSTEM_INSTALL=0: never).
# Usage: scripts/test-package.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: scripts/test-package.sh BUILD_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data
fail() { echo "test-package: FAILED: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1 \
  || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/pkg/*.deb)
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"

# What the package must hold: the programs, the samples, completions; the GUI's files and man pages where built.
expected=(usr/bin/fusion-cli usr/share/fusion-explorer/sample_graphs/relu_mul_add.json
          usr/share/fusion-explorer/lessons/02-vertical-fusion.json
          usr/share/bash-completion/completions/fusion-cli usr/share/zsh/vendor-completions/_fusion-cli)
gui=0
if [[ -x $build/app/gui/fusion-explorer ]]; then
  gui=1
  expected+=(usr/bin/fusion-explorer usr/share/applications/fusion-explorer.desktop
             usr/share/icons/hicolor/scalable/apps/fusion-explorer.svg usr/share/mime/packages/fusion-explorer.xml)
fi
[[ -f $build/man/fusion-cli.1 ]] && expected+=(usr/share/man/man1/fusion-cli.1)
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./||' > "$work/contents.txt"
for f in "${expected[@]}"; do grep -qx "$f" "$work/contents.txt" || fail "the package lacks $f"; done

# Every declared dependency is satisfied on this machine (a fresh Debian 12 after scripts/install-deps.sh).
printf 'Source: fusion-explorer\n\nPackage: fusion-explorer\nArchitecture: any\n' > "$work/control"
if [[ -n $depends ]]; then
  dpkg-checkbuilddeps -d "$depends" "$work/control" || fail "unmet dependencies"
fi

# A real dpkg -i into a temporary root with its own database.
root=$work/root
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
force=--force-depends
[[ $(id -u) -ne 0 ]] && force+=,not-root
dpkg --root="$root" --log="$work/dpkg.log" "$force" --force-script-chrootless -i "$deb" > "$work/dpkg-i.log" 2>&1 \
  || { cat "$work/dpkg-i.log"; fail "dpkg -i into $root"; }
dpkg --root="$root" -s fusion-explorer | grep -q "Status: install ok installed" || fail "dpkg does not list it as installed"

run_installed() {  # PREFIX: runs the installed programs under PREFIX
  local prefix=$1 sample=$1/share/fusion-explorer/sample_graphs/relu_mul_add.json
  "$prefix/bin/fusion-cli" --version | grep -q "^fusion-cli [0-9]" || fail "$prefix/bin/fusion-cli --version"
  "$prefix/bin/fusion-cli" analyze "$sample" | grep -q "candidates (2)" || fail "fusion-cli analyze $sample"
  if ((gui)); then
    rm -f "$work/shot.png"
    QT_QPA_PLATFORM=offscreen timeout 120 "$prefix/bin/fusion-explorer" --auto-fuse --screenshot "$work/shot.png" "$sample" \
      > "$work/gui.log" 2>&1 || { cat "$work/gui.log"; fail "$prefix/bin/fusion-explorer"; }
    [[ -s $work/shot.png ]] || fail "fusion-explorer saved no screenshot"
  fi
  echo "ran $prefix/bin/fusion-cli$( ((gui)) && echo " and fusion-explorer")"
}
run_installed "$root/usr"

system=${FX_PACKAGE_SYSTEM_INSTALL:-0}
[[ ${CI:-} == true && $(id -u) -eq 0 && -z ${FX_PACKAGE_SYSTEM_INSTALL:-} ]] && system=1
if [[ $system == 1 ]]; then
  if dpkg-query -W -f='${Status}' fusion-explorer 2>/dev/null | grep -q installed; then
    fail "fusion-explorer is already installed here; not replacing it"
  fi
  trap 'dpkg -r fusion-explorer > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
  dpkg -i "$deb" > "$work/dpkg-system.log" 2>&1 || { cat "$work/dpkg-system.log"; fail "dpkg -i $deb"; }
  run_installed /usr
  dpkg -r fusion-explorer > /dev/null
  echo "installed into the system with dpkg -i, ran from /usr, removed"
fi
echo "test-package: ok"
