#!/usr/bin/env bash
# The real remote run on a GPU machine: starts an OpenSSH server on 127.0.0.1 (a throwaway host key and client
# key, a non-standard port, its own sshd_config), runs `fusion-cli run --target ssh://...` and a local run of
# the same graph in turns, and compares the numbers; then cancels a remote run and checks that no remote
# process and no run folder is left behind.
#
# Usage: scripts/remote-gpu-check.sh DEBS_DIR [GRAPH...]
#   DEBS_DIR  .deb files of openssh-server, openssh-client and the libraries they need, for a machine with no
#             network and no ssh (docs/remote.md, "Checking on a GPU machine", says how to make them); they are
#             unpacked into a private folder (dpkg -x), never installed. An empty folder: use the ssh and sshd
#             already installed.
#   GRAPH     graphs to run (default sample_graphs/relu_mul_add.json and sample_graphs/softmax.json)
# Environment: FX_CLI (default build/app/cli/fusion-cli), OUT (where the reports go; default a temp folder).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
debs="$(cd "${1:?usage: scripts/remote-gpu-check.sh DEBS_DIR [GRAPH...]}" && pwd)"
shift
graphs=("$@")
((${#graphs[@]})) || graphs=("$root/sample_graphs/relu_mul_add.json" "$root/sample_graphs/softmax.json")
cli="$(readlink -f "${FX_CLI:-$root/build/app/cli/fusion-cli}")"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
work="$(mktemp -d /tmp/fx-remote-check.XXXXXX)"
chmod 700 "$work"
sshd_pid=""
cleanup() {
  [[ -n "$sshd_pid" ]] && kill "$sshd_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- ssh and sshd: the system's, or the carried packages unpacked into $work/root ------------------------------
sshd=/usr/sbin/sshd
session_ld_path="${LD_LIBRARY_PATH:-}"
if compgen -G "$debs/*.deb" >/dev/null; then
  for f in "$debs"/*.deb; do dpkg -x "$f" "$work/root"; done
  # The carried libraries serve ssh and sshd only (small wrappers), never fusion-cli or CUDA's libraries.
  libs="$work/root/lib/x86_64-linux-gnu:$work/root/usr/lib/x86_64-linux-gnu"
  mkdir -p "$work/bin"
  for t in usr/bin/ssh usr/bin/ssh-keygen usr/sbin/sshd; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' "$libs" "$work/root/$t" \
      >"$work/bin/$(basename "$t")"
    chmod +x "$work/bin/$(basename "$t")"
  done
  export PATH="$work/bin:$PATH"
  sshd="$work/bin/sshd"
fi
for tool in ssh ssh-keygen; do command -v "$tool" >/dev/null || { echo "remote-gpu-check: no $tool (carry openssh-client)" >&2; exit 1; }; done
[[ -x "$sshd" ]] || { echo "remote-gpu-check: no sshd (carry openssh-server)" >&2; exit 1; }
"$sshd" -V 2>&1 | head -1 || true
if [[ $(id -u) -eq 0 ]]; then
  mkdir -p /run/sshd  # privilege separation, which a package's postinst would have prepared
  id sshd >/dev/null 2>&1 || useradd --system --home-dir /run/sshd --shell /usr/sbin/nologin sshd
fi

user="$(id -un)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
mkdir -p "$work/remote-tmp"
# Sessions get this shell's PATH and library path (CUDA's libraries), as a login on a GPU server would.
cat >"$work/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PidFile $work/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $user
LogLevel ERROR
SetEnv "TMPDIR=$work/remote-tmp" "PATH=$PATH" "LD_LIBRARY_PATH=$session_ld_path" "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}"
CONF
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/host_key.pub")" >"$work/known_hosts"
cat >"$work/ssh_config" <<CONF
Host fxgpu
  HostName 127.0.0.1
  Port $port
  User $user
  IdentityFile $work/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $work/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
CONF
"$sshd" -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
sshd_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
export FX_SSH_CONFIG="$work/ssh_config" XDG_RUNTIME_DIR="$work/rt" XDG_CONFIG_HOME="$work/config"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
target="ssh://fxgpu?cli=$cli"
echo "remote-gpu-check: sshd on 127.0.0.1:$port; target $target"

# --- local and remote runs in turns ------------------------------------------------------------------------------
status=0
for g in "${graphs[@]}"; do
  name="$(basename "$g" .json)"
  for round in 1 2; do
    "$cli" run "$g" --auto --json "$out/$name.local.$round.json" --csv "$out/$name.local.$round.csv" \
      >"$out/$name.local.$round.txt" 2>&1 || { echo "local run of $name failed:"; cat "$out/$name.local.$round.txt"; status=1; }
    start=$(date +%s.%N)
    "$cli" run "$g" --auto --progress --json "$out/$name.remote.$round.json" --csv "$out/$name.remote.$round.csv" \
      --target "$target" >"$out/$name.remote.$round.progress" 2>"$out/$name.remote.$round.txt" ||
      { echo "remote run of $name failed:"; cat "$out/$name.remote.$round.txt"; status=1; }
    echo "$name round $round: remote run took $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
  done
done
python3 - "$out" "${graphs[@]}" <<'PY' || status=1
import json, os, sys
out, graphs = sys.argv[1], sys.argv[2:]
bad = False
for g in graphs:
    name = os.path.basename(g)[:-5]
    rows = {}
    for side in ("local", "remote"):
        for r in (1, 2):
            try:
                with open(f"{out}/{name}.{side}.{r}.json") as f:
                    rows.setdefault(side, []).append(json.load(f))
            except (OSError, ValueError) as e:
                print(f"{name}: no {side} report {r} ({e})"); bad = True
    if len(rows.get("local", [])) < 2 or len(rows.get("remote", [])) < 2:
        continue
    def ms(j, plan): return next(p["total_ms"] for p in j["plans"] if p["name"] == plan)
    print(f"{name}: device {rows['remote'][0]['device']['name']} (remote) / {rows['local'][0]['device']['name']} (local)")
    for plan in ("unfused", "fused"):
        loc = [ms(j, plan) for j in rows["local"]]
        rem = [ms(j, plan) for j in rows["remote"]]
        ratio = min(rem) / min(loc)
        print(f"  {plan:8s} local {', '.join(f'{x:.4f}' for x in loc)} ms; remote {', '.join(f'{x:.4f}' for x in rem)} ms;"
              f" remote/local (best of 2) {ratio:.3f}")
        if abs(ratio - 1) > 0.05: bad = True; print("  ^ more than 5% apart")
    for side in ("local", "remote"):
        for j in rows[side]:
            if not j["verification"]["passed"]: bad = True; print(f"  {side}: verification FAILED")
            if [p["kernel_count"] for p in j["plans"]] != [p["kernel_count"] for p in rows["local"][0]["plans"]]:
                bad = True; print(f"  {side}: other kernel counts")
sys.exit(1 if bad else 0)
PY

# --- cancel: no remote process, no run folder left -------------------------------------------------------------
"$cli" run "${graphs[0]}" --auto --progress --repeat 200000 --target "$target" >"$out/cancel.progress" 2>"$out/cancel.txt" &
client=$!
for _ in $(seq 300); do grep -q '"step"' "$out/cancel.progress" 2>/dev/null && break; sleep 0.1; done
sleep 2
kill -TERM "$client" 2>/dev/null || echo "cancel: the run had already ended (see $out/cancel.txt)"
rc=0; wait "$client" || rc=$?
left_dirs="$(find "$work/remote-tmp" -mindepth 1 -maxdepth 1 | wc -l)"
# The remote fusion-cli runs in its folder: a process whose working directory is still in there is left over.
left_procs=0
for p in /proc/[0-9]*; do
  case "$(readlink "$p/cwd" 2>/dev/null)" in
    "$work/remote-tmp/"*) echo "left over: $(tr '\0' ' ' <"$p/cmdline")"; left_procs=$((left_procs + 1));;
  esac
done
echo "cancel: exit code $rc (130 expected), run folders left $left_dirs, remote processes left $left_procs"
[[ $rc -eq 130 && $left_dirs -eq 0 && $left_procs -eq 0 ]] || status=1
echo "remote-gpu-check: reports in $out; $([[ $status -eq 0 ]] && echo PASSED || echo FAILED)"
exit $status
