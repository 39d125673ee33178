"""TF 1.15's API inventory (`cli/tf115_inventory.json.gz`, from `tools/tf1_inventory.py`)
walked over the namespace: every name served has TF 1.15's kind, every name not served is
excluded with a reason, and the inventory itself says what TF 1.15's sources say."""
import gzip
import json
import os
import subprocess
import sys

import pytest

from tpu_estimator_compat.cli import inventory


@pytest.fixture(scope="module")
def walk():
    import tpu_estimator_compat.v1  # noqa: F401,PLC0415
    return inventory.walk()


def _kinds(module):
    return {name: kind for kind, names in inventory.load()[module].items() for name in names}


def test_inventory_holds_tf115s_attribute_kinds():
    # contrib/framework/python/ops/__init__.py star-imports its `arg_scope` submodule: the
    # attribute is the function; `variables` stays the submodule (its __all__ lacks it).
    ops = _kinds("tensorflow.contrib.framework.python.ops")
    assert ops["arg_scope"] == "f" and ops["variables"] == "m"
    # contrib/rnn: remove_undocumented keeps the @@-documented names only (not `python`).
    rnn = _kinds("tensorflow.contrib.rnn")
    assert rnn["LSTMCell"] == "c" and rnn["static_rnn"] == "f" and "python" not in rnn
    assert "LayerNormBasicLSTMCell" in rnn
    # The generated API: classes, functions, protocol buffers, LazyLoader modules.
    root = _kinds("tensorflow")
    assert (root["Session"], root["ConfigProto"], root["reshape"], root["contrib"]) == (
        "c", "c", "f", "m")
    assert _kinds("tensorflow.train")["AdamOptimizer"] == "c"
    assert _kinds("tensorflow.keras")["layers"] == "m"
    # tensorflow.estimator is tensorflow_estimator's API (first on tensorflow.__path__).
    assert _kinds("tensorflow.estimator.tpu")["TPUEstimator"] == "c"
    assert _kinds("tensorflow_estimator.python.estimator.tpu.tpu_config")["TPUConfig"] == "c"
    assert "absolute_import" not in root  # __future__ imports are not API
    modules = inventory.load()
    assert "tensorflow.contrib.tpu.python.tpu.tpu_estimator" in modules
    assert not [m for m in modules if m.endswith("_test") or ".kernel_tests" in m]
    assert os.path.getsize(inventory.INVENTORY) < 400_000


def test_every_served_name_has_tf115s_kind(walk):
    internals = inventory.loaded_internal_modules()
    assert "tensorflow.python.ops.standard_ops" in internals
    different = {path: (tf1, ours)
                 for path, tf1, ours in walk.different + inventory.walk(internals).different}
    unexplained = {p: k for p, k in different.items() if p not in inventory.KIND_DIFFERENCES}
    assert not unexplained, unexplained  # (tf1 kind, served kind)
    walked = set(inventory.walked_modules()) | set(internals)
    stale = [p for p in inventory.KIND_DIFFERENCES
             if p.rpartition(".")[0] in walked and p not in different]
    assert not stale
    # TF 1.x's star imports, served (tensorflow.python.ops.standard_ops.cond was the module).
    assert ("tensorflow.contrib.framework.python.ops" in walked and "tensorflow.train" in walked
            and "tensorflow.python.ops.parallel_for" in walked)


def test_every_name_not_served_is_excluded_with_a_reason(walk):
    unexplained = [path for path in walk.missing if inventory.exclusion(path) is None]
    assert not unexplained, unexplained
    used = {prefix for prefix in inventory.EXCLUDED
            if any(p == prefix or p.startswith(prefix + ".") for p in walk.missing)}
    assert used == set(inventory.EXCLUDED)  # none stale


@pytest.mark.slow  # trains or evaluates for several seconds
def test_check_calls_every_name_tf115_had_and_we_do_not_serve_unsupported(walk):
    # Not `not-in-TF1` (TensorFlow 2.15's compat.v1 lacks e.g. config.experimental_list_devices)
    # nor `supported` (the import path of a module a star import shadows is the module).
    from tpu_estimator_compat.cli import check  # noqa: PLC0415
    resolver = check.Resolver()
    assert "tensorflow.config.experimental_list_devices" in walk.missing
    wrong = {path: resolver.verdict(path).status for path in walk.missing
             if resolver.verdict(path).status != "unsupported"}
    assert not wrong, wrong


def test_coverage_counts_per_top_module(walk):
    coverage = inventory.coverage(walk)
    assert coverage["tf.train"] == (128, 128)
    served, total = coverage["tf.contrib.rnn"]
    assert total == len(_kinds("tensorflow.contrib.rnn")) and 15 <= served < total
    assert coverage["tf.contrib.quantize"][0] == 0


def test_coverage_counts_the_names_checks_verdicts_call_served_in_every_module(walk):
    """`check`'s coverage line and its per-name verdicts agree: each top module's served
    count is the number of its TF 1.15 names `check` marks supported (or TF2)."""
    from tpu_estimator_compat.cli import check  # noqa: PLC0415
    resolver, counted = check.Resolver(), {}
    for module in inventory.walked_modules():
        for names in inventory.load()[module].values():
            for name in names:
                status = resolver.verdict(f"{module}.{name}").status
                served, total = counted.get(inventory.top_module(module), (0, 0))
                counted[inventory.top_module(module)] = (
                    served + (status in ("supported", "difference", "tf2")), total + 1)
    assert counted == inventory.coverage(walk)
    assert not [m for m in inventory.walked_modules() if m.endswith("test_util")]


def test_docs_report_the_current_coverage(walk):
    docs = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "compatibility.md")
    with open(docs, encoding="utf-8") as f:
        assert inventory.coverage_table(walk) in f.read()


@pytest.mark.skipif(not os.environ.get("TF115_WHEEL"),
                    reason="set TF115_WHEEL and TF115_ESTIMATOR_WHEEL to the tensorflow-cpu "
                           "1.15.0 and tensorflow-estimator 1.15.1 wheels to regenerate")
def test_generator_reproduces_the_committed_inventory(tmp_path):
    output = tmp_path / "inventory.json.gz"
    subprocess.run([sys.executable, "tools/tf1_inventory.py", os.environ["TF115_WHEEL"],
                    os.environ["TF115_ESTIMATOR_WHEEL"], str(output)], check=True,
                   cwd=os.path.dirname(os.path.dirname(__file__)))
    with gzip.open(output, "rt") as f:
        assert json.load(f)["modules"] == inventory.load()
