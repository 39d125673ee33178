"""XLA on the simulated TPU: the step compiles as on a TPU (engine/xla_step.py).

What XLA cannot compile fails train()/evaluate()/predict() naming the op, as it would on a
TPU; `tf.tpu.outside_compilation` keeps such ops on the host; numbers stay the original's.
The original's numbers come from tests/data/xla_reference_model.py (TF 2.15, use_tpu=False,
one CPU, the same global batch of 16); here the batch is split over 8 simulated cores.
"""
import inspect
import os

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.engine import runtime
from tpu_estimator_compat.engine import tpu_ops
from tests import event_reader
from tests.data import xla_reference_model as model

# The original's values after STEPS steps (tests/data/xla_reference_model.py).
ORIGINAL_WEIGHTS = {
    "model/w1": [
        [-0.7914783954620361, -0.7619617581367493, -0.7335038185119629, -0.7015586495399475,
         -0.37692296504974365, -0.13461001217365265, -0.06303734332323074,
         -0.026838509365916252],
        [-0.5253021717071533, -0.4969523847103119, -0.47093871235847473, -0.4450378715991974,
         -0.0959816724061966, 0.1202181801199913, 0.18327276408672333, 0.20689378678798676],
        [0.31133487820625305, 0.3442140221595764, 0.37649005651474, 0.4024583697319031,
         0.18294364213943481, -0.03169825300574303, -0.05310496315360069,
         -0.03835621103644371],
        [0.5691578984260559, 0.6029877662658691, 0.6368754506111145, 0.6652987003326416,
         0.4271085858345032, 0.22857491672039032, 0.21379172801971436, 0.2331118881702423]],
    "model/b1": [0.39371103048324585, 0.3958491086959839, 0.3985019326210022,
                 0.3965035080909729, 0.11548605561256409, -0.10556904226541519,
                 -0.1488673835992813, -0.15784874558448792],
    "model/w2": [[0.5950282216072083], [0.5094711184501648], [0.4239062964916229],
                 [0.33821138739585876], [0.22897517681121826], [0.12790338695049286],
                 [0.04143553227186203], [-0.04288068041205406]],
}
# (The eval "loss" is not compared: with TPU semantics it is replica 0's, as on a TPU.)
ORIGINAL_EVAL = {"accuracy": 0.875, "mean_logit": 1.3665074}
ORIGINAL_PREDICTIONS = [2.6515965461730957, 0.0, 2.4893009662628174, 0.0, 2.33219051361084,
                        0.0, 2.1737465858459473] * 4 + [2.6515965461730957, 0.0,
                                                         2.4893009662628174, 0.0]
ATOL = 1e-5


@pytest.fixture
def simulated_tpu(monkeypatch):
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")
    monkeypatch.delenv(runtime.SIMULATED_TPU_XLA_ENV, raising=False)  # XLA: the default
    return monkeypatch


def _estimator(model_dir, logits_hook=None):
    config = tec.RunConfig(model_dir=str(model_dir),
                           tpu_config=tec.TPUConfig(iterations_per_loop=3))
    model_fn = model.make_model_fn(tec.TPUEstimatorSpec, tec.CrossShardOptimizer, logits_hook)
    return tec.TPUEstimator(model_fn, config=config, use_tpu=True,
                            train_batch_size=model.GLOBAL_BATCH,
                            eval_batch_size=model.GLOBAL_BATCH,
                            predict_batch_size=model.GLOBAL_BATCH)


def _assert_original_numbers(estimator):
    for name, value in ORIGINAL_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=0, atol=ATOL)
    results = estimator.evaluate(model.input_fn, steps=model.EVAL_STEPS)
    for name, value in ORIGINAL_EVAL.items():
        np.testing.assert_allclose(results[name], value, rtol=0, atol=ATOL)
    predictions = [p["logits"][0] for p in estimator.predict(model.predict_input_fn)]
    np.testing.assert_allclose(predictions, ORIGINAL_PREDICTIONS, rtol=0, atol=ATOL)


def test_train_evaluate_predict_under_xla_give_the_originals_numbers(simulated_tpu, tmp_path):
    estimator = _estimator(tmp_path)
    estimator.train(model.input_fn, max_steps=model.STEPS)
    _assert_original_numbers(estimator)


def _line_of(function, text):
    """'file:line (name)' of the line of `function` that starts with `text`."""
    lines, first = inspect.getsourcelines(function)
    number = first + next(i for i, line in enumerate(lines) if line.strip().startswith(text))
    return f"{inspect.getsourcefile(function)}:{number} ({function.__name__})"


def _py_function(logits, features, mode):  # pylint: disable=unused-argument
    result = tf.py_function(lambda t: t, [logits], tf.float32)
    result.set_shape(logits.shape)
    return result


def _string_op(logits, features, mode):  # pylint: disable=unused-argument
    text = tf.strings.as_string(logits)
    return logits + 0.0 * tf.cast(tf.strings.length(text), tf.float32)


@pytest.mark.parametrize("hook, op_type, op_name, line", [
    (_py_function, "EagerPyFunc", "EagerPyFunc", "result = tf.py_function("),
    (_string_op, "AsString", "AsString", "text = tf.strings.as_string(")])
def test_op_xla_cannot_compile_fails_train_naming_it(hook, op_type, op_name, line,
                                                     simulated_tpu, tmp_path):
    estimator = _estimator(tmp_path, hook)
    with pytest.raises(tpu_ops.TPUUnsupportedOpError) as raised:
        estimator.train(model.input_fn, max_steps=model.STEPS)
    message = str(raised.value)
    assert (f"{op_type} (op '{op_name}', built at {_line_of(hook, line)}): a TPU has no XLA "
            "kernel for it") in message
    assert "tf.tpu.outside_compilation(fn, *args)" in message
    assert "host_call" in message
    assert f"{runtime.SIMULATED_TPU_XLA_ENV}=0" in message
    assert estimator.latest_checkpoint() is None  # refused before the first step


def test_without_xla_the_same_op_trains(simulated_tpu, tmp_path):
    simulated_tpu.setenv(runtime.SIMULATED_TPU_XLA_ENV, "0")
    estimator = _estimator(tmp_path, _py_function)
    estimator.train(model.input_fn, max_steps=model.STEPS)
    for name, value in ORIGINAL_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=0, atol=ATOL)


def _on_the_host(logits, features, mode):  # pylint: disable=unused-argument
    """Adds 0 computed by a py_function, which XLA cannot compile, on the host."""
    def host_zeros(values):
        zeros = tf.py_function(lambda t: t * 0.0, [values], tf.float32)
        return tf.reduce_sum(tf.reshape(zeros, [-1, 4]), axis=1, keepdims=True)
    return logits + tf.compat.v1.tpu.outside_compilation(host_zeros, features)


def test_outside_compilation_runs_on_the_host_under_xla(simulated_tpu, tmp_path):
    estimator = _estimator(tmp_path, _on_the_host)
    estimator.train(model.input_fn, max_steps=model.STEPS)
    _assert_original_numbers(estimator)


def _complex128(logits, features, mode):  # pylint: disable=unused-argument
    """Adds 0 computed in complex128 from the features: XLA's CPU backend compiles it, a
    TPU's does not."""
    wide = tf.cast(features, tf.complex128)
    zeros = tf.math.real(wide - wide)
    return logits + tf.cast(tf.reduce_sum(zeros, axis=1, keepdims=True), tf.float32)


def _complex128_in_a_cond(logits, features, mode):
    """The complex128 ops in a branch of a tf.cond (a function XLA compiles with the step)."""
    return tf.compat.v1.cond(tf.reduce_sum(features) > -1e9,
                             lambda: _complex128(logits, features, mode), lambda: logits)


def _complex128_on_the_host(logits, features, mode):
    return tf.compat.v1.tpu.outside_compilation(_complex128, logits, features, mode)


def _two_core_tpu(simulated_tpu):
    simulated_tpu.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "2")


def _refused_training(simulated_tpu, tmp_path, model_fn):
    """Trains `model_fn` on 2 simulated cores, expecting the TPU op check's refusal:
    (estimator, the error's message)."""
    _two_core_tpu(simulated_tpu)
    estimator = _estimator(tmp_path, model_fn)
    with pytest.raises(tpu_ops.TPUUnsupportedOpError) as raised:
        estimator.train(model.input_fn, max_steps=model.STEPS)
    return estimator, str(raised.value)


def test_a_dtype_the_tpu_lacks_fails_before_the_first_step_naming_it(simulated_tpu,
                                                                      tmp_path):
    estimator, message = _refused_training(simulated_tpu, tmp_path, _complex128)
    assert message.startswith("A TPU cannot compile 3 op(s) of the training step")
    # each op once (not once per replica), with the model_fn line that built it
    cast_line = _line_of(_complex128, "wide = tf.cast(")
    assert (f"  Cast (op 'Cast', built at {cast_line}): a TPU's XLA kernel for it takes no "
            "DstT=complex128\n") in message
    assert (f"  Real (op 'Real', built at {_line_of(_complex128, 'zeros = ')}): a "
            "TPU's XLA kernel for it takes no T=complex128\n") in message
    assert (f"  Sub (op 'sub', built at {_line_of(_complex128, 'zeros = ')}): a "
            "TPU's XLA kernel for it takes no T=complex128\n") in message
    assert "or give it a dtype the TPU takes" in message
    assert estimator.latest_checkpoint() is None


def test_ops_in_the_functions_the_step_calls_are_checked(simulated_tpu, tmp_path):
    _, message = _refused_training(simulated_tpu, tmp_path, _complex128_in_a_cond)
    assert message.startswith("A TPU cannot compile 7 op(s) of the training step")
    cond_line = _line_of(_complex128_in_a_cond, "return tf.compat.v1.cond(")
    # the branch's ops, then their gradients' (built by minimize()), each once
    assert (f"\n  Cast (op 'cond/Cast' in a function called by op 'cond', built at "
            f"{cond_line}): a TPU's XLA kernel for it takes no DstT=complex128\n") in message
    assert ("\n  Neg (op 'gradients/cond_grad/gradients/cond/sub_grad/Neg' in a function "
            "called by op 'gradients/cond_grad/StatelessIf', built at ") in message


def test_the_same_op_under_outside_compilation_trains(simulated_tpu, tmp_path):
    _two_core_tpu(simulated_tpu)
    estimator = _estimator(tmp_path, _complex128_on_the_host)
    estimator.train(model.input_fn, max_steps=model.STEPS)
    for name, value in ORIGINAL_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=0, atol=ATOL)


def _unique_and_float64(logits, features, mode):  # pylint: disable=unused-argument
    """Adds 0 computed from tf.unique's data-dependent shape and in float64, both of which
    TensorFlow 2.21 compiles for a TPU (XLA_TPU_JIT registers them)."""
    values, _ = tf.unique(tf.reshape(features, [-1]))
    wide = tf.cast(tf.reduce_sum(values), tf.float64)
    return logits + tf.cast(wide - wide, tf.float32)


def test_unique_and_float64_are_compiled_as_a_tpu_compiles_them(simulated_tpu, tmp_path,
                                                                  caplog):
    _two_core_tpu(simulated_tpu)
    estimator = _estimator(tmp_path, _unique_and_float64)
    estimator.train(model.input_fn, max_steps=model.STEPS)
    for name, value in ORIGINAL_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=0, atol=ATOL)
    assert ("The training step computes in float64 ('Cast', 'sub'): a TPU compiles it but "
            "has no float64 hardware") in caplog.text


def _stock_model_fn(features, labels, mode, params):  # pylint: disable=unused-argument
    """Dense layers, softmax cross-entropy, Adam: what a TPU compiles (no false refusal)."""
    hidden = v1.layers.dense(features, 8, activation=tf.nn.relu, kernel_initializer=(
        v1.constant_initializer(np.linspace(-0.5, 0.5, 4 * 8).reshape(4, 8))))
    logits = v1.layers.dense(hidden, 3, kernel_initializer=(
        v1.constant_initializer(np.linspace(0.4, -0.4, 8 * 3).reshape(8, 3))))
    if mode == "infer":
        return tec.TPUEstimatorSpec(mode, predictions={
            "probabilities": tf.nn.softmax(logits), "class": tf.argmax(logits, axis=1)})
    classes = tf.cast(tf.reshape(labels, [-1]) + tf.reduce_sum(features, axis=1) > 0, tf.int32)
    loss = v1.losses.sparse_softmax_cross_entropy(classes, logits)
    if mode == "train":
        optimizer = tec.CrossShardOptimizer(v1.train.AdamOptimizer(0.05))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, global_step=v1.train.get_global_step()))
    return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(
        lambda c, l: {"accuracy": v1.metrics.accuracy(c, tf.argmax(l, axis=1))},
        [classes, logits]))


def _stock_run(model_dir):
    estimator = tec.TPUEstimator(
        _stock_model_fn, use_tpu=True, train_batch_size=model.GLOBAL_BATCH,
        eval_batch_size=model.GLOBAL_BATCH, predict_batch_size=model.GLOBAL_BATCH,
        config=tec.RunConfig(model_dir=str(model_dir),
                             tpu_config=tec.TPUConfig(iterations_per_loop=3)))
    estimator.train(model.input_fn, max_steps=model.STEPS)
    return (estimator.get_variable_value("dense/kernel"),
            estimator.evaluate(model.input_fn, steps=model.EVAL_STEPS)["accuracy"],
            [p["probabilities"] for p in estimator.predict(model.predict_input_fn)])


def test_a_stock_model_passes_the_check_and_computes_what_it_does_without_xla(
        simulated_tpu, tmp_path):
    _two_core_tpu(simulated_tpu)
    kernel, accuracy, probabilities = _stock_run(tmp_path / "xla")
    simulated_tpu.setenv(runtime.SIMULATED_TPU_XLA_ENV, "0")
    kernel_0, accuracy_0, probabilities_0 = _stock_run(tmp_path / "plain")
    np.testing.assert_allclose(kernel, kernel_0, rtol=0, atol=ATOL)
    assert accuracy == accuracy_0
    np.testing.assert_allclose(probabilities, probabilities_0, rtol=0, atol=ATOL)
    assert not np.allclose(kernel, np.linspace(-0.5, 0.5, 4 * 8).reshape(4, 8))  # trained


def test_the_shipped_tpu_kernels_are_the_installed_tensorflows():
    from tools import tpu_ops as tool  # noqa: PLC0415
    assert tool.main(["--check"]) == 0, "run python tools/tpu_ops.py"


def _node_defs():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None])
        ops = {"unique": tf.unique(x).y, "float64": tf.cast(x, tf.float64) * 2.0,
               "int64": tf.cast(x, tf.int64) + 1, "complex128": tf.cast(x, tf.complex128),
               "string Const": tf.constant("message"), "string op": tf.strings.as_string(x),
               "py_function": tf.py_function(lambda t: t, [x], tf.float32)}
    return {key: tensor.op.node_def for key, tensor in ops.items()}


def test_the_tpu_kernels_take_unique_float64_and_int64_not_complex128_strings_or_python():
    refusals = {key: tpu_ops.refusal(node_def) for key, node_def in _node_defs().items()}
    assert refusals == {
        "unique": None, "float64": None, "int64": None, "string Const": None,
        "complex128": "a TPU's XLA kernel for it takes no DstT=complex128",
        "string op": "a TPU has no XLA kernel for it",
        "py_function": "a TPU has no XLA kernel for it"}


def _tf2_summary_before_the_logits(logdir, with_string_assert=False):
    """simclr's way: a TF2 summary written in model_fn, under `record_if`, that the model's
    output depends on (a `tf.cond` whose branch writes: the host's op, not XLA's); with an
    assert on the features' shape whose message is string constants (compiled: its strings
    may not pass into XLA, which 6e6903c's rule did)."""
    def hook(logits, features, mode):
        writer = tf.summary.create_file_writer(os.path.join(logdir, mode))
        step = tf.compat.v1.train.get_global_step()
        with writer.as_default(), tf.summary.record_if(tf.equal(step % 2, 0)):
            written = tf.summary.scalar("mean_logit", tf.reduce_mean(logits), step=step)
        with tf.control_dependencies([written]):
            checks = [writer.flush()]
        if with_string_assert:  # as BERT's embeddings
            checks.append(tf.compat.v1.assert_less_equal(tf.shape(features)[1], 4))
        with tf.control_dependencies(checks):
            return tf.identity(logits)
    return hook


@pytest.mark.parametrize("with_string_assert", [False, True])
def test_a_tf2_summary_in_model_fn_runs_on_the_host_under_xla(with_string_assert,
                                                              simulated_tpu, tmp_path):
    logdir = str(tmp_path / "summaries")
    estimator = _estimator(tmp_path / "model",
                           _tf2_summary_before_the_logits(logdir, with_string_assert))
    estimator.train(model.input_fn, max_steps=model.STEPS)
    written = event_reader.read_scalars(os.path.join(logdir, "train"))["mean_logit"]
    assert sorted({step for step, _ in written}) == [0, 2, 4]  # record_if: even steps
    _assert_original_numbers(estimator)


def _py_function_outside_training(logits, features, mode):
    return logits if mode == "train" else _py_function(logits, features, mode)


def test_evaluate_and_predict_compile_with_xla(simulated_tpu, tmp_path):
    estimator = _estimator(tmp_path, _py_function_outside_training)
    estimator.train(model.input_fn, max_steps=1)
    unsupported = (r"A TPU cannot compile 1 op\(s\) of the {} step .*\n  EagerPyFunc \(op "
                   r"'EagerPyFunc', built at .*\): a TPU has no XLA kernel for it\n")
    with pytest.raises(tpu_ops.TPUUnsupportedOpError, match=unsupported.format("evaluation")):
        estimator.evaluate(model.input_fn, steps=1)
    with pytest.raises(tpu_ops.TPUUnsupportedOpError, match=unsupported.format("prediction")):
        next(estimator.predict(model.predict_input_fn))


@pytest.mark.parametrize("value, expected", [
    ("", True), ("1", True), ("on", True), ("0", False), ("False", False), ("off", False)])
def test_the_variable_turns_xla_off(value, expected):
    assert runtime.simulated_tpu_xla({runtime.SIMULATED_TPU_XLA_ENV: value}) is expected


def test_a_bad_value_of_the_variable_is_refused():
    with pytest.raises(ValueError, match=f"`{runtime.SIMULATED_TPU_XLA_ENV}` turns XLA "
                                         r"compilation on the simulated TPU on \(1\) or off"):
        runtime.simulated_tpu_xla({runtime.SIMULATED_TPU_XLA_ENV: "maybe"})
