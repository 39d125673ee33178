"""The corpus's numbers checks (`run.py`'s `eval-recheck` and `replica-check` modes): what a
program's logs and checkpoints must show besides its exit status.

eval-recheck: the evaluation a program logged in the process that trained ("Saving dict for
global step N: k = v, ...", as TF1's Estimator logged it) against the one a fresh process
computes from the same model directory: metrics equal exactly, losses within `LOSS_TOLERANCE`.

replica-check: the weights of a short deterministic run on several simulated TPU replicas
against the weights of the same run on one replica over the same global batch, both started
from the first run's step-0 checkpoint (see `compare_weights`). A MEAN program
(CrossShardOptimizer's minimize or compute_gradients, whose loss TF1 divided by the number
of replicas) must give the 1-replica run's weights.

SUM programs take their gradients themselves (tf.gradients) and give them to
CrossShardOptimizer's apply_gradients, which in TF1 summed them across replicas: 8 replicas
apply the sum of 8 per-replica gradients, each of its replica's mean loss. BERT's family clips
each replica's gradient (clip_by_global_norm(1.0)) BEFORE that sum, so no 1-replica run gives
TF1's arithmetic on distinct examples. Their deterministic run therefore feeds every replica
the same examples: TF1's arithmetic is then exactly 8 x the 1-replica run's clipped gradient,
which the optimizer's slots show (`compare_slots`: a first moment 8x, a second moment 64x);
the weights, whose Adam-family update is invariant to the gradient's scale but for its
epsilon, are compared as a MEAN program's.
"""
import glob
import os
import re

import numpy as np

LOSS_TOLERANCE = 5e-4
WEIGHT_TOLERANCE = 1e-5  # relative to the variable's largest value
UPDATE_TOLERANCE = 1e-3  # relative to the largest change training made to a weight
SLOT_TOLERANCE = 1e-4  # relative to the slot's largest value

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


_PRINTED_DICT = re.compile(r"Eval results: \{(.*)\}$", re.MULTILINE)
_PRINTED_ITEM = re.compile(r"'([^']+)': (?:np\.float\d+\()?([^,()]+)\)?")
_CHECKPOINT_STEP = re.compile(r"model\.ckpt-(\d+)|Saving checkpoints for (\d+) ")


def printed_results(log_text):
    """The evaluations a program printed itself as `Eval results: {'name': value, ...}` (a dict
    of NumPy floats: retinanet's COCO metrics from predict()), as `eval_results` reads the
    Estimator's; the global step of each is that of the last checkpoint the log names before
    it (saved, or restored for predict())."""
    evaluations = []
    for match in _PRINTED_DICT.finditer(log_text):
        steps = _CHECKPOINT_STEP.findall(log_text, 0, match.start())
        results = {name: float(value)
                   for name, value in _PRINTED_ITEM.findall(match.group(1))}
        evaluations.append((int("".join(steps[-1])) if steps else -1, results))
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


def slot_factors(replicas, single):
    """{slot suffix: [(factor, size)]}: for each optimizer slot (`<weight>/<suffix>`), the
    factor f with replicas' slot = f x single's (least squares; None where the slot is no
    such multiple within SLOT_TOLERANCE of its largest value) and the slot's largest value
    in the 1-replica run."""
    weights = set(model_weights(single))
    factors = {}
    for name in sorted(set(single) - weights):
        owner = max((name[:i] for i, c in enumerate(name) if c == "/" and name[:i] in weights),
                    key=len, default=None)
        if owner is None or name not in replicas:
            continue
        a = np.asarray(replicas[name], np.float64).ravel()
        b = np.asarray(single[name], np.float64).ravel()
        norm = np.dot(b, b)
        factor = np.dot(a, b) / norm if norm else None
        if factor is not None and not np.max(np.abs(a - factor * b)) <= (
                SLOT_TOLERANCE * np.max(np.abs(a))):
            factor = None
        factors.setdefault(name[len(owner) + 1:], []).append(
            (factor, np.max(np.abs(b), initial=0.0)))
    return factors


def compare_slots(replicas, single, expected):
    """Status of the SUM arithmetic in the optimizer's slots: each slot of the run on several
    replicas `expected[suffix]` times the 1-replica run's (a first moment linear in the summed
    gradient: the number of replicas; a second moment: its square). Slots under
    SLOT_TOLERANCE of their kind's largest value hold rounding (a bias whose gradient is zero:
    attention keys'), not a gradient: left out."""
    factors = slot_factors(replicas, single)
    seen = []
    for suffix, want in sorted(expected.items()):
        if not factors.get(suffix):
            return "FAIL: no %s slots" % suffix
        largest = max(size for _, size in factors[suffix])
        found = [f for f, size in factors[suffix] if size > SLOT_TOLERANCE * largest]
        if not all(f is not None and abs(f - want) <= SLOT_TOLERANCE * want for f in found):
            shown = sorted({"?" if f is None else "%.4g" % f for f in found})
            return "FAIL: %s slots are %s x the 1-replica run's, not %g x" % (
                suffix, ", ".join(shown), want)
        seen.append("%d %s %gx" % (len(found), suffix, want))
    return "ok (slots: %s)" % ", ".join(seen)
