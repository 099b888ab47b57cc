#!/usr/bin/env bash
# Do what a Hugging Face Space does with this repository, from nothing, and check one typed turn.
#
#   scripts/space_check.sh [WORKDIR]        (default /tmp/e3rg-space-check; about 20 min on 2 cores)
#
# 1. copies the repository's files (tracked and new, as in the working tree) to WORKDIR/repo: what a
#    push to the Space would hold;
# 2. installs the Debian packages of packages.txt that are missing (apt-get; needs root);
# 3. makes a clean venv and runs `pip install -r requirements.txt` with no CMAKE_ARGS and an empty pip
#    cache, as a Space's builder does (so llama.cpp is built from source with requirements.txt's own
#    settings, never a wheel built earlier on this machine), then gradio[oauth] at the README's
#    sdk_version, which the Space's image adds;
# 4. starts `python app.py` with SPACE_ID and the Space's server variables set and E3RG_DATA_DIR in
#    WORKDIR (app.py installs requirements-nodeps.txt itself on a Space);
# 5. sends one typed turn through gradio_client's /turn and checks it: an emotion label, a reply,
#    a WAV and an MP4 with content; then stops the app.
#
# Exits 0 when the turn passed. Writes WORKDIR/space_check.json (what was built, the llama.cpp system
# info, timings, the turn's result) and keeps the logs in WORKDIR/logs/. Not part of the test suite:
# run it by hand after changing requirements.txt, packages.txt or app.py.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-/tmp/e3rg-space-check}"
PYTHON="${PYTHON:-python3}"
PORT="${PORT:-7861}"
TURN_TIMEOUT_S="${TURN_TIMEOUT_S:-900}"
mkdir -p "$WORK/logs"
WORK="$(cd "$WORK" && pwd)"
LOGS="$WORK/logs"
t0=$(date +%s)
stamp() { echo "== $* ($(date -u +%T), $(( $(date +%s) - t0 )) s)"; }

stamp "copying the repository to $WORK/repo"
rm -rf "$WORK/repo" "$WORK/venv" "$WORK/data" "$WORK/pip-cache"
mkdir -p "$WORK/repo" "$WORK/data"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) | tar -xf - -C "$WORK/repo"

stamp "Debian packages from packages.txt"
missing=()
while read -r pkg; do
    pkg="${pkg%%#*}"; pkg="$(echo "$pkg" | xargs)"
    [ -z "$pkg" ] && continue
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done < "$WORK/repo/packages.txt"
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

stamp "pip install -r requirements.txt in a clean venv (llama.cpp builds from source: the long step)"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
# a Space's builder: no CMAKE_ARGS, no pip cache of this machine
env -u CMAKE_ARGS -u FORCE_CMAKE PIP_CACHE_DIR="$WORK/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$VPY" -m pip install -q -U pip >"$LOGS/pip.log" 2>&1
build_start=$(date +%s)
(cd "$WORK/repo" && env -u CMAKE_ARGS -u FORCE_CMAKE PIP_CACHE_DIR="$WORK/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$VPY" -m pip install -v -r requirements.txt >>"$LOGS/pip.log" 2>&1) || {
    tail -40 "$LOGS/pip.log"; echo "space check FAILED: pip install -r requirements.txt" >&2; exit 1; }
install_s=$(( $(date +%s) - build_start ))
sdk="$(sed -n 's/^sdk_version: *//p' "$WORK/repo/README.md" | head -1)"
if [ -n "$sdk" ]; then
    env -u CMAKE_ARGS PIP_CACHE_DIR="$WORK/pip-cache" "$VPY" -m pip install -q "gradio[oauth]==$sdk" >>"$LOGS/pip.log" 2>&1
fi
grep -E "Adding CPU backend variant|GGML_NATIVE" "$LOGS/pip.log" | sed 's/^ *//' | sort -u > "$LOGS/llama_cmake.txt" || true
cat "$LOGS/llama_cmake.txt"
system_info="$("$VPY" -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode())')"
echo "llama.cpp: $system_info"

stamp "python app.py as a Space runs it (SPACE_ID set, data in $WORK/data)"
app_pid=""
cleanup() { if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then kill "$app_pid"; wait "$app_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
(cd "$WORK/repo" && exec env -u CMAKE_ARGS SPACE_ID="e3rg/space-check" SPACE_HOST="space-check.hf.space" \
    SYSTEM=spaces GRADIO_SERVER_NAME=127.0.0.1 GRADIO_SERVER_PORT="$PORT" E3RG_DATA_DIR="$WORK/data" \
    PIP_CACHE_DIR="$WORK/pip-cache" "$VPY" app.py >"$LOGS/app.log" 2>&1) &
app_pid=$!

stamp "one typed turn through gradio_client"
set +e
E3RG_SPACE_CHECK_OUT="$WORK/space_check.json" "$VPY" - "http://127.0.0.1:$PORT/" "$TURN_TIMEOUT_S" "$app_pid" \
    "$install_s" "$system_info" <<'PY'
import json, os, sys, time, urllib.request
from pathlib import Path

url, timeout_s, app_pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
report = {"install_s": int(sys.argv[4]), "llama_system_info": sys.argv[5], "amx_in_build": "AMX" in sys.argv[5]}
out = Path(os.environ["E3RG_SPACE_CHECK_OUT"])


def alive() -> bool:
    try:
        os.kill(app_pid, 0)
        return True
    except OSError:
        return False


def finish(ok: bool, why: str) -> None:
    report.update(ok=ok, result=why)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(("PASSED: " if ok else "FAILED: ") + why)
    sys.exit(0 if ok else 1)


start = time.time()
while True:  # the app loads every model before it listens
    if not alive():
        finish(False, "app.py exited before serving (see logs/app.log)")
    try:
        urllib.request.urlopen(url, timeout=5).close()
        break
    except OSError:
        if time.time() - start > timeout_s:
            finish(False, f"app.py did not serve {url} in {timeout_s:.0f} s")
        time.sleep(3)
report["start_s"] = round(time.time() - start, 1)

from gradio_client import Client

text = "I finally passed my driving test today after failing it twice!"
began = time.time()
try:
    result = Client(url, verbose=False).predict(None, "amara", text, None, None, api_name="/turn")
except Exception as exc:  # whatever the client raises is the check's result
    finish(False, f"the turn failed: {type(exc).__name__}: {exc}; alive after it: {alive()}")
report["turn_s"] = round(time.time() - began, 1)
sid, emotion, _distribution, reply, wav, video = result[:6]  # docs/api.md: /turn's outputs in order
wav = Path(wav) if isinstance(wav, str) else None
mp4 = Path(video["video"] if isinstance(video, dict) else video) if video else None
report.update(message=text, emotion=emotion, reply=reply, wav=str(wav), mp4=str(mp4),
              wav_bytes=wav.stat().st_size if wav and wav.is_file() else 0,
              mp4_bytes=mp4.stat().st_size if mp4 and mp4.is_file() else 0)
problems = []
if not (isinstance(emotion, str) and emotion):
    problems.append(f"no emotion label ({emotion!r})")
if not (isinstance(reply, str) and len(reply.split()) >= 3):
    problems.append(f"no reply ({reply!r})")
if report["wav_bytes"] < 10_000:
    problems.append("no reply audio")
if report["mp4_bytes"] < 10_000:
    problems.append("no reply video")
if not alive():
    problems.append("app.py died after the turn")
else:  # the app's peak memory: what the Space's hardware must hold
    status = Path(f"/proc/{app_pid}/status").read_text().splitlines()
    peak_kb = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), 0)
    report["app_peak_rss_gb"] = round(peak_kb / 1024 / 1024, 2)
finish(not problems, "; ".join(problems) or f"{emotion.get('label')}: {reply}")
PY
status=$?
set -e
stamp "done (exit $status); report in $WORK/space_check.json, logs in $LOGS"
exit "$status"
