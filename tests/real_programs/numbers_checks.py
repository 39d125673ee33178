"""The corpus's numbers checks (`run.py`'s `eval-recheck` and `replica-check` modes): what a
program's logs and checkpoints must show besides its exit status.

eval-recheck: the evaluation a program logged in the process that trained ("Saving dict for
global step N: k = v, ...", as TF1's Estimator logged it) against the one a fresh process
computes from the same model directory: metrics equal exactly, losses within `LOSS_TOLERANCE`.

replica-check: the weights of a short deterministic run on several simulated TPU replicas
against the weights of the same run on one replica over the same global batch, both started
from the first run's step-0 checkpoint (see `compare_weights`).
"""
import glob
import os
import re

import numpy as np

LOSS_TOLERANCE = 5e-4
WEIGHT_TOLERANCE = 1e-5  # relative to the variable's largest value
UPDATE_TOLERANCE = 1e-3  # relative to the largest change training made to a weight

_SAVING_DICT = re.compile(r"Saving dict for global step (\d+): (.*)$", re.MULTILINE)


def eval_results(log_text):
    """The evaluations a log records: [(global_step, {name: value})], in order. A value is a
    float where it reads as one (float32 text: exact), else its text."""
    evaluations = []
    for step, text in _SAVING_DICT.findall(log_text):
        results = {}
        for item in text.split(", "):
            name, _, value = item.partition(" = ")
            try:
                results[name] = float(value)
            except ValueError:
                results[name] = value.strip()
        evaluations.append((int(step), results))
    return evaluations


def is_loss(name):
    return "loss" in name.lower()


def compare_evaluations(in_process, fresh):
    """Status of the eval re-check: the last evaluation logged in the training process against
    the fresh process's evaluation of the same global step."""
    if not in_process:
        return "FAIL: the training process logged no evaluation"
    step, expected = in_process[-1]
    same_step = [results for s, results in fresh if s == step]
    if not same_step:
        return "FAIL: the fresh process evaluated global step(s) %s, not %d" % (
            sorted({s for s, _ in fresh}) or "none", step)
    actual = same_step[-1]
    if sorted(actual) != sorted(expected):
        return "FAIL: the fresh process's metrics are %s, the training process's %s" % (
            sorted(actual), sorted(expected))
    loss_diff = 0.0
    for name in sorted(expected):
        a, b = expected[name], actual[name]
        if is_loss(name) and isinstance(a, float) and isinstance(b, float):
            if not abs(a - b) <= LOSS_TOLERANCE:
                return "FAIL: %s = %s in-process, %s fresh (step %d)" % (name, a, b, step)
            loss_diff = max(loss_diff, abs(a - b))
        elif a != b:
            return "FAIL: %s = %s in-process, %s fresh (step %d)" % (name, a, b, step)
    metrics = [n for n in expected if not is_loss(n) and n != "global_step"]
    return "ok (step %d: %d metric(s) equal, loss diff %.1e)" % (step, len(metrics), loss_diff)


def checkpoints(model_dir):
    """{global_step: checkpoint prefix} of the `model.ckpt-N` checkpoints in model_dir."""
    found = {}
    for index in glob.glob(os.path.join(model_dir, "model.ckpt-*.index")):
        prefix = index[:-len(".index")]
        step = prefix.rsplit("-", 1)[1]
        if step.isdigit():
            found[int(step)] = prefix
    return found


def seed_model_dir(prefix, model_dir):
    """Copies the checkpoint `prefix` into `model_dir` as its latest checkpoint; returns the
    copy's prefix."""
    os.makedirs(model_dir, exist_ok=True)
    name = os.path.basename(prefix)
    for path in glob.glob(prefix + ".*"):
        with open(path, "rb") as src, open(
                os.path.join(model_dir, os.path.basename(path)), "wb") as dst:
            dst.write(src.read())
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' % (name, name))
    return os.path.join(model_dir, name)


def checkpoint_values(prefix):
    """{name: array} of a checkpoint's floating-point variables."""
    import tensorflow as tf  # noqa: PLC0415  (only the replica check reads checkpoints)

    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name)
            for name, dtype in reader.get_variable_to_dtype_map().items()
            if dtype.is_floating}


def model_weights(values):
    """The names among `values` that are model weights: not an optimizer's slot (a variable
    named `<another variable>/<slot>`: `/Adam`, `/adam_m`, `/Momentum`...)."""
    names = set(values)
    return sorted(n for n in names
                  if not any(n[:i] in names for i, c in enumerate(n) if c == "/"))


def compare_weights(initial, replicas, single):
    """Status of the replica check: every model weight of the run on several replicas
    (`replicas`) against the 1-replica run's (`single`), both started from `initial`: equal
    within WEIGHT_TOLERANCE of the variable's largest value plus UPDATE_TOLERANCE of the
    largest change training made to any weight (rounding in weights that training barely
    moved, a bias with a zero gradient). A run that changed no weight proves nothing."""
    names = model_weights(single)
    if sorted(model_weights(replicas)) != names:
        return "FAIL: the runs saved different variables: %s" % sorted(
            set(model_weights(replicas)) ^ set(names))
    pairs = {}
    for name in names:
        a, b = np.asarray(replicas[name], np.float64), np.asarray(single[name], np.float64)
        if a.shape != b.shape:
            return "FAIL: %s has shape %s on several replicas, %s on one" % (
                name, a.shape, b.shape)
        pairs[name] = (a, b, np.asarray(initial.get(name, b), np.float64))
    update = max(np.max(np.abs(b - start), initial=0.0) for _, b, start in pairs.values())
    if not update:
        return "FAIL: no weight changed from the step-0 checkpoint"
    worst, worst_name, worst_diff = -1.0, None, 0.0
    for name, (a, b, start) in pairs.items():
        scale = max(np.max(np.abs(b), initial=0.0), np.max(np.abs(start), initial=0.0))
        diff = np.max(np.abs(a - b), initial=0.0)
        ratio = diff / (WEIGHT_TOLERANCE * scale + UPDATE_TOLERANCE * update)
        if not ratio <= worst:  # NaN too
            worst, worst_name, worst_diff = ratio, name, diff
    summary = "%s differs by %.1e, %.2g of its tolerance (largest update %.1e, %d weights)" % (
        worst_name, worst_diff, worst, update, len(names))
    return ("ok (%s)" if worst <= 1 else "FAIL: %s") % summary
