#!/usr/bin/env bash
# The vLLM plugin tests (tests/test_integration_vllm.py) and the structural tags compiled by
# xgrammar (tests/test_structural_tag_xgrammar.py) in a cached virtualenv that has vLLM.
#
# CPU torch plus vLLM is ~2 GB, so it lives outside the checkout and is reused:
#   $AUTOPARSER_VENVS/vllm   (default ~/.cache/autoparser-venvs/vllm)
# The first run creates it (about 2 minutes when torch's CPU wheel is on local disk);
# later runs only re-point the editable autoparser install at this checkout.
# When vLLM cannot be installed here it prints "skipped: vLLM not installable here (...)"
# and exits 0. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

VENVS=${AUTOPARSER_VENVS:-$HOME/.cache/autoparser-venvs}
VENV=$VENVS/vllm
PY=$VENV/bin/python
LIMIT=${AUTOPARSER_VLLM_INSTALL_TIMEOUT:-900}     # seconds for the whole install
LOG=$VENVS/vllm-install.log

# vLLM 0.33.0 pins torch 2.14.0 and CUDA-only extras; on CPU it runs on torch 2.13.0+cpu
# with --no-deps and the imports' own needs (integrations brief, section 1.9).
TORCH="torch==2.13.0"
VLLM="vllm==0.33.0"
DEPS=(numpy requests "transformers>=5.16.1,<5.21" tokenizers openai pydantic fastapi msgspec pyzmq cbor2
      cachetools prometheus_client cloudpickle psutil pybase64 partial-json-parser openai-harmony pillow
      py-cpuinfo uvloop aiohttp regex jinja2 jsonschema sentencepiece ijson mistral_common pytest)
NODEPS=(xgrammar==0.2.8 apache-tvm-ffi)
RECIPE="$TORCH $VLLM ${DEPS[*]} ${NODEPS[*]}"
STAMP=$VENV/.autoparser-recipe

skip() {
    echo "skipped: vLLM not installable here ($1)"
    exit 0
}

ready() {
    [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ] && "$PY" -c \
        "import vllm.parser.parser_manager, vllm.entrypoints.openai.chat_completion.stream_processor" \
        >/dev/null 2>&1
}

install() {
    mkdir -p "$VENVS" || return 1
    [ -x "$PY" ] || python3 -m venv "$VENV" || return 1
    local pip=("$PY" -m pip install -q --disable-pip-version-check)
    "${pip[@]}" "$TORCH" || return 1
    "${pip[@]}" --no-deps "$VLLM" || return 1
    "${pip[@]}" -e "$REPO[test]" || return 1
    "${pip[@]}" "${DEPS[@]}" || return 1
    "${pip[@]}" --no-deps "${NODEPS[@]}" || return 1
    echo "$RECIPE" > "$STAMP"
}

if [ "${1:-}" = "--install-only" ]; then
    install
    exit $?
fi

mkdir -p "$VENVS" 2>/dev/null || skip "cannot create $VENVS"
exec 9>"$VENVS/vllm.lock"
command -v flock >/dev/null && flock -w "$LIMIT" 9

if ! ready; then
    echo "vllm.sh: installing vLLM into $VENV (log: $LOG, at most ${LIMIT}s)"
    start=$(date +%s)
    timeout "$LIMIT" bash "$REPO/.ci/vllm.sh" --install-only >"$LOG" 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
        skip "install took longer than ${LIMIT}s"
    elif [ $rc -ne 0 ] || ! ready; then
        reason=$(grep -E "ERROR|Error|error" "$LOG" | grep -v "dependency resolver\|requires" | tail -1 | cut -c1-160)
        skip "${reason:-install failed, see $LOG}"
    fi
    echo "vllm.sh: installed in $(( $(date +%s) - start ))s"
fi

# point the editable install (and its vllm.general_plugins entry point) at this checkout
"$PY" -m pip install -q --disable-pip-version-check --no-deps -e "$REPO" >>"$LOG" 2>&1 \
    || echo "vllm.sh: could not re-install autoparser into $VENV; testing with PYTHONPATH"

PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pytest tests/test_integration_vllm.py \
    tests/test_structural_tag_xgrammar.py -p no:cacheprovider "$@"
rc=$?
[ $rc -eq 5 ] && rc=0   # nothing collected (no corpus): not a failure
exit $rc
