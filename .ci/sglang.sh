#!/usr/bin/env bash
# The SGLang plugin tests (tests/test_integration_sglang.py) in a cached virtualenv that has SGLang.
#
# CPU torch plus SGLang and triton is ~2.6 GB, so it lives outside the checkout and is reused:
#   $AUTOPARSER_VENVS/sglang   (default ~/.cache/autoparser-venvs/sglang)
# The first run creates it (a few minutes when torch's CPU wheel is on local disk);
# later runs only re-point the editable autoparser install at this checkout.
# When SGLang cannot be installed here it prints "skipped: SGLang not installable here (...)"
# and exits 0. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

VENVS=${AUTOPARSER_VENVS:-$HOME/.cache/autoparser-venvs}
VENV=$VENVS/sglang
PY=$VENV/bin/python
LIMIT=${AUTOPARSER_SGLANG_INSTALL_TIMEOUT:-900}     # seconds for the whole install
LOG=$VENVS/sglang-install.log

# SGLang 0.5.23 pins torch 2.14.1 and CUDA-only kernels; its parsers and OpenAI serving code
# run on torch 2.13.0+cpu with --no-deps and the imports' own needs (integrations brief, section 2).
# triton and torchvision are imported unconditionally (the test declares torchvision's CUDA-only
# operators so that its CUDA wheel imports on CPU torch).
TORCH="torch==2.13.0"
SGLANG="sglang==0.5.23"
DEPS=("transformers==5.19.0" "tokenizers==0.23.2" pydantic fastapi orjson partial_json_parser msgspec jsonschema
      jinja2 numpy requests aiohttp pyzmq psutil pybase64 pillow uvloop uvicorn python-multipart prometheus-client
      sentencepiece "openai==2.8.0" "openai-harmony==0.0.4" interegular einops setproctitle xxhash dill gguf
      IPython loguru pytest)
NODEPS=("xgrammar==0.2.7" "apache-tvm-ffi==0.1.11" triton "torchvision==0.28.0" compressed-tensors)
RECIPE="$TORCH $SGLANG ${DEPS[*]} ${NODEPS[*]}"
STAMP=$VENV/.autoparser-recipe

skip() {
    echo "skipped: SGLang not installable here ($1)"
    exit 0
}

# (importing sglang needs the test's torchvision shim, so readiness is checked on metadata)
ready() {
    [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ] && "$PY" -c "
import importlib.metadata as m, importlib.util as u
assert m.version('sglang') == '0.5.23' and m.version('torch').endswith('+cpu')
assert all(u.find_spec(x) for x in ('triton', 'xgrammar', 'torchvision', 'transformers', 'pytest'))" \
        >/dev/null 2>&1
}

install() {
    mkdir -p "$VENVS" || return 1
    [ -x "$PY" ] || python3 -m venv "$VENV" || return 1
    local pip=("$PY" -m pip install -q --disable-pip-version-check)
    "${pip[@]}" "$TORCH" || return 1
    "${pip[@]}" --no-deps "$SGLANG" "${NODEPS[@]}" || return 1
    "${pip[@]}" -e "$REPO[test]" || return 1
    "${pip[@]}" "${DEPS[@]}" || return 1
    "$PY" -c "import torch; assert torch.__version__.endswith('+cpu'), torch.__version__" || return 1
    echo "$RECIPE" > "$STAMP"
}

if [ "${1:-}" = "--install-only" ]; then
    install
    exit $?
fi

mkdir -p "$VENVS" 2>/dev/null || skip "cannot create $VENVS"
exec 9>"$VENVS/sglang.lock"
command -v flock >/dev/null && flock -w "$LIMIT" 9

if ! ready; then
    echo "sglang.sh: installing SGLang into $VENV (log: $LOG, at most ${LIMIT}s)"
    start=$(date +%s)
    timeout "$LIMIT" bash "$REPO/.ci/sglang.sh" --install-only >"$LOG" 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
        skip "install took longer than ${LIMIT}s"
    elif [ $rc -ne 0 ] || ! ready; then
        reason=$(grep -E "ERROR|Error|error" "$LOG" | grep -v "dependency resolver\|requires" | tail -1 | cut -c1-160)
        skip "${reason:-install failed, see $LOG}"
    fi
    echo "sglang.sh: installed in $(( $(date +%s) - start ))s"
fi

# point the editable install (and its sglang.srt.plugins entry point) at this checkout
"$PY" -m pip install -q --disable-pip-version-check --no-deps -e "$REPO" >>"$LOG" 2>&1 \
    || echo "sglang.sh: could not re-install autoparser into $VENV; testing with PYTHONPATH"

PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 SGLANG_PLUGINS=autoparser \
    "$PY" -m pytest tests/test_integration_sglang.py -p no:cacheprovider "$@"
rc=$?
[ $rc -eq 5 ] && rc=0   # nothing collected (no corpus): not a failure
exit $rc
