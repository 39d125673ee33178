#!/usr/bin/env bash
# Which TensorFlow releases the package works on (docs/tensorflow-versions.md).
#
#   tools/tf_versions.sh [VERSION...]        default: 2.16 2.17 2.18 2.19 2.20 2.21
#
# For each VERSION, one after another (each is heavy: a TensorFlow download, the MNIST example,
# a few minutes of tests): a fresh venv with tensorflow==VERSION.* and tf-keras==VERSION.*, and
# the package's own requirements and test extras read from setup.cfg (the package itself runs
# from this checkout, on PYTHONPATH); then
#   1. the MNIST example (README set-up command), which must reach >= 97 % eval accuracy;
#   2. the core tests (CORE_TESTS): training, evaluation, prediction, export, the v1 namespace,
#      the runner and the log lines.
# Each version appends one row to $TF_VERSIONS_DIR/results.md (docs/tensorflow-versions.md's table format) and keeps
# its logs there. Environment: TF_VERSIONS_DIR (default /tmp/tf_versions), PYTHON (the
# interpreter for the venvs, default python3), CORE_TESTS (space-separated test files).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${TF_VERSIONS_DIR:-/tmp/tf_versions}
python=${PYTHON:-python3}
read -r -a core_tests <<< "${CORE_TESTS:-tests/test_train.py tests/test_evaluate.py \
tests/test_predict.py tests/test_export.py tests/test_v1_namespace.py tests/test_runner.py \
tests/test_logging.py}"
if [ $# -gt 0 ]; then versions=("$@"); else versions=(2.16 2.17 2.18 2.19 2.20 2.21); fi
mkdir -p "$work"
results="$work/results.md"

# The requirements setup.cfg declares (install_requires + the test extra), without the
# TensorFlow pins, which the constraints below set per version.
requirements() {
  "$python" - "$repo/setup.cfg" <<'EOF'
import configparser, sys
config = configparser.ConfigParser()
config.read(sys.argv[1])
lines = (config["options"]["install_requires"] + "\n"
         + config["options.extras_require"]["test"]).splitlines()
print("\n".join(line.strip() for line in lines if line.strip() and not line.startswith("#")))
EOF
}

for version in "${versions[@]}"; do
  venv="$work/venv-$version"
  log="$work/$version"
  mkdir -p "$log"
  echo "== TensorFlow $version: $(date -u +%H:%M:%S) building $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  printf 'tensorflow==%s.*\ntf-keras==%s.*\n' "$version" "$version" > "$log/constraints.txt"
  requirements > "$log/requirements.txt"
  if ! "$venv/bin/pip" install --quiet -c "$log/constraints.txt" -r "$log/requirements.txt" \
      > "$log/install.log" 2>&1; then
    echo "| $version | | not installable (see install.log) | | does not work |" | tee -a "$results"
    continue
  fi
  installed=$("$venv/bin/python" -c "import importlib.metadata as m; \
print(m.version('tensorflow'), '|', m.version('tf-keras'))" 2>/dev/null)

  echo "== TensorFlow $installed: $(date -u +%H:%M:%S) the MNIST example"
  ( cd "$repo" && PYTHONPATH="$repo" timeout 1800 "$venv/bin/python" -m models.mnist.mnist_tpu \
      --model_dir="$log/mnist" ) > "$log/mnist.log" 2>&1
  mnist_status=$?
  accuracy=$(grep -oE 'Final eval accuracy: [0-9.]+' "$log/mnist.log" | tail -n 1 | awk '{print $4}')
  if [ "$mnist_status" -eq 0 ] && "$venv/bin/python" -c \
      "import sys; sys.exit(0 if float(sys.argv[1] or 0) >= 0.97 else 1)" "${accuracy:-0}"; then
    mnist="ok, accuracy $accuracy"
  else
    mnist="FAIL: $(grep -E '^[A-Za-z_.]+(Error|Exception)' "$log/mnist.log" | tail -n 1 | cut -c1-120)"
  fi

  echo "== TensorFlow $installed: $(date -u +%H:%M:%S) core tests"
  ( cd "$repo" && PYTHONPATH="$repo" timeout 3600 "$venv/bin/python" -m pytest -q \
      -p no:cacheprovider "${core_tests[@]}" ) > "$log/tests.log" 2>&1
  tests=$(tail -n 1 "$log/tests.log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//; s/, [0-9]+ warnings?//')
  verdict=works
  case "$mnist $tests" in *FAIL*|*failed*|*error*) verdict="does not work" ;; esac
  echo "| $installed | $mnist | $tests | $verdict |" | tee -a "$results"
  rm -rf "$log/mnist"
done
echo "== results (also in $results):"
cat "$results"
