#!/usr/bin/env bash
# Runs the Slurm tests of fusion-cli run --target slurm://... (tests/remote/test_remote_slurm.cpp): each starts
# a one-node Slurm (munged, slurmctld, slurmd on 127.0.0.1, its own slurm.conf in a temporary folder) and an
# sshd as its login node. slurmd launches jobs only as root, so run this as root on a machine with Debian's
# munge, slurmctld, slurmd and slurm-client (scripts/install-deps.sh installs them); the suite's run of the same
# tests skips with the reason where that is not so. Usage: scripts/slurm-check.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${FX_BUILD_DIR:-$root/build}}"
[[ $(id -u) -eq 0 ]] || { echo "slurm-check: run as root (slurmd launches jobs only as root)" >&2; exit 1; }
cmake --build "$build" --target fx_remote_tests fusion-cli
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# GTEST_SKIP would pass quietly: a skip here is a failure, with its reason.
XDG_CONFIG_HOME="$tmp" "$build/tests/fx_remote_tests" --gtest_filter='RemoteSlurm.*' | tee "$tmp/log"
if grep -q '\[  SKIPPED \]' "$tmp/log"; then echo "slurm-check: skipped (reason above)" >&2; exit 1; fi
