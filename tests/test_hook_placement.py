"""engine/hook_placement.py as `ModelEngine.compile` uses it: the default places no hooks,
and a placement's fetches come out of the loop; a fake placement stands in for the host's
HookRun (no estimator)."""
import numpy as np
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.api.spec import TPUEstimatorSpec
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.engine.model_engine import ModelEngine

_v1 = tf.compat.v1
_SPEC_HOOK = _v1.train.SessionRunHook()


def _model_fn(features, labels, mode, params):
    del labels, params
    w = _v1.get_variable("w", [], initializer=_v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(features - w))
    train_op = _v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=_v1.train.get_global_step())
    return TPUEstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[_SPEC_HOOK])


def _input_fn(params):
    return tf.data.Dataset.from_tensors(tf.ones([params["batch_size"]])).repeat()


class _FakeTracedHooks:
    def __init__(self):
        self.replicas_entered = 0
        self.spec_hooks = None

    def enter_replica(self):
        self.replicas_entered += 1

    def replica_fetches(self, spec_hooks):
        self.spec_hooks = spec_hooks
        return {"seven": tf.constant(7)}


class _FakeHooks:
    """A placement for an empty `hooks=` (trace key ()) that declines every cached trace."""
    trace_key = ()

    def __init__(self):
        self.offered = []
        self.traced = None

    def new_trace(self, variables, session_runs):
        del session_runs
        self.variables = variables
        self.traced = _FakeTracedHooks()
        return self.traced

    def reuse(self, traced):
        self.offered.append(traced)
        return False


def test_compile_places_no_hooks_by_default_and_keeps_that_trace_apart(one_device):
    runtime = runtime_lib.runtime_for_strategy(one_device, tpu_semantics=True)
    plan = batching.plan_batches(2, ModeKeys.TRAIN, runtime, TPUConfig())
    program = model_bridge.UserProgram(_model_fn, {}, RunConfig())
    iterator = inputs.distributed_iterator(_input_fn, ModeKeys.TRAIN, runtime, plan, program)
    engine = ModelEngine(runtime)

    plain = engine.compile(ModeKeys.TRAIN, program, plan, iterator)
    result = plain.loop(iterator, tf.constant(2))
    assert result.hook_fetches == {} and engine.global_step == 2
    assert np.isclose(float(result.loss), 0.8 ** 2)  # w: 0 -> 0.2 -> 0.36; loss at w=0.2

    hooks = _FakeHooks()
    hooked = engine.compile(ModeKeys.TRAIN, program, plan, iterator, hooks)
    assert hooked is not plain and hooks.offered == [plain.traced.placed_hooks]
    assert hooked.traced.placed_hooks is hooks.traced and hooks.variables is engine.store
    assert hooks.traced.replicas_entered == 1 and hooks.traced.spec_hooks == [_SPEC_HOOK]
    result = hooked.loop(iterator, tf.constant(1))
    assert {key: int(value) for key, value in result.hook_fetches.items()} == {"seven": 7}
    assert engine.global_step == 3

    assert engine.compile(ModeKeys.TRAIN, program, plan, iterator) is plain
    assert engine.compile(ModeKeys.TRAIN, program, plan, iterator, hooks) is hooked
