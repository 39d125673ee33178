"""engine/variable_store.py: one variable per TF1 name, created on the first trace, reused by
later traces and shared by all replicas, filed in the v1 collections. Fake replica functions
on the 8 simulated cores (no model_fn, no estimator)."""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine.variable_store import VariableStore
from tpu_estimator_compat.tf1_behaviour import variables as tf1_variables

_v1 = tf.compat.v1
REPLICAS = 8


def _trace(strategy, store, replica_fn):
    """Traces `replica_fn(x)` on every replica as the engine's step does; returns what each
    replica's call returned, by replica."""
    returned = {}

    def replica(x):
        with step_graph.building_replica(), store.creating_variables_in_replica():
            store.prepare_graph()
            returned[step_graph.current_replica()] = replica_fn(x)
        return tf.identity(x)

    def step(x):
        store.prepare_graph()
        return strategy.run(replica, args=(x,))

    with strategy.scope(), store.creating_variables():
        step_graph.StepGraph.trace(step, tf.TensorSpec([], tf.float32))
    return [returned[r] for r in range(strategy.num_replicas_in_sync)]


@pytest.mark.parametrize("name, expected", [
    ("dense/kernel:0", "dense/kernel"), ("dense/kernel/Adam/", "dense/kernel/Adam"),
    ("mean/total/replica_3:0", "mean/total"), ("global_step", "global_step")])
def test_tf1_name(name, expected):  # the names the store keys variables by
    assert tf1_variables.tf1_name(name) == expected


def test_variables_are_created_once_shared_by_replicas_and_reused_by_later_traces(
        eight_devices):
    store = VariableStore(eight_devices)
    assert store.global_step.dtype == tf.int64 and set(store.named_variables()) == {
        "global_step"}

    def replica_fn(x):
        kernel = _v1.get_variable("dense/kernel", [2], initializer=_v1.ones_initializer())
        step = _v1.train.get_global_step()
        return kernel, step, list(_v1.trainable_variables()), list(_v1.global_variables())

    first = _trace(eight_devices, store, replica_fn)
    kernel = store.named_variables()["dense/kernel"]
    assert len(store) == 2 and store.trainable_names() == ["dense/kernel"]
    for created, step, trainable, global_variables in first:
        assert created is kernel and step is store.global_step
        assert trainable == [kernel]  # filed in each replica's collections
        assert {id(v) for v in global_variables} == {id(kernel), id(store.global_step)}
    kernel.assign([5.0, 7.0])
    second = _trace(eight_devices, store, replica_fn)
    assert len(store) == 2 and all(created is kernel for created, *_ in second)
    assert kernel.numpy().tolist() == [5.0, 7.0]  # not re-initialised


def test_replica_r_gets_replica_0s_name_for_its_kth_request(eight_devices):
    store = VariableStore(eight_devices)

    def replica_fn(x):
        created = []
        for _ in range(2):  # tf.compat.v1.metrics-style: names relative to the name scope
            with tf.name_scope("mean"):
                created.append(_v1.Variable(0.0, name="total", trainable=False,
                                            collections=[_v1.GraphKeys.LOCAL_VARIABLES]))
        created.append(_v1.get_variable("w", [], initializer=_v1.zeros_initializer()))
        return created

    by_replica = _trace(eight_devices, store, replica_fn)
    assert sorted(store.named_variables()) == ["global_step", "w"]  # locals not checkpointed
    assert "mean/total" in store and "mean_1/total" in store and len(store) == 4
    replica_0 = by_replica[0]
    for created in by_replica[1:]:
        assert all(mine is first for mine, first in zip(created, replica_0))
    _trace(eight_devices, store, replica_fn)  # a second trace: the same names, not mean_2
    assert len(store) == 4 and "mean/total" in store and "mean_1/total" in store
    assert store.trainable_names() == ["w"]
    for variable in replica_0[:2]:
        variable.assign(3.0)
    store.reset_local_variables()
    assert [float(v.numpy()) for v in replica_0[:2]] == [0.0, 0.0]


def test_a_variable_only_another_replica_creates_is_an_error(eight_devices):
    def replica_fn(x):
        if step_graph.current_replica() == 1:
            _v1.get_variable("extra", [], initializer=_v1.zeros_initializer())

    with pytest.raises(RuntimeError, match="Replica 1's model_fn creates a variable 'extra' "
                                           "that replica 0's did not: every replica must "
                                           "build the same model."):
        _trace(eight_devices, VariableStore(eight_devices), replica_fn)


def test_trainability_follows_the_v1_defaults(eight_devices):
    store = VariableStore(eight_devices)

    def replica_fn(x):
        _v1.get_variable("default", [], initializer=_v1.zeros_initializer())
        _v1.get_variable("frozen", [], initializer=_v1.zeros_initializer(), trainable=False)
        _v1.get_variable("on_read", [], initializer=_v1.zeros_initializer(),
                         synchronization=tf.VariableSynchronization.ON_READ,
                         aggregation=tf.VariableAggregation.SUM)

    _trace(eight_devices, store, replica_fn)
    assert store.trainable_names() == ["default"]
    assert {"default", "frozen", "on_read"} <= set(store.named_variables())


def test_initial_values_are_computed_outside_the_trace(eight_devices):
    """Traced tensors without a constant value (TF1's `tf.Variable(tf.random_normal(...))`)
    are computed eagerly, as TF1's init op computed them."""
    store = VariableStore(eight_devices)

    def replica_fn(x):
        scale = tf.reduce_sum(tf.ones([3]))  # a traced tensor with no constant value
        _v1.get_variable("scaled", initializer=tf.constant([1.0, 2.0]) * scale)
        _v1.Variable(tf.random.uniform([4], 1.0, 2.0), name="random")

    _trace(eight_devices, store, replica_fn)
    np.testing.assert_array_equal(store.named_variables()["scaled"].numpy(), [3.0, 6.0])
    random = store.named_variables()["random"].numpy()
    assert random.shape == (4,) and ((random >= 1.0) & (random < 2.0)).all()


def test_an_initial_value_computed_from_the_input_is_an_error(eight_devices):
    def replica_fn(x):
        _v1.get_variable("from_input", initializer=x * 2.0)

    with pytest.raises(ValueError, match="is computed from the model's input, so it cannot "
                                         "be the initial value of a variable"):
        _trace(eight_devices, VariableStore(eight_devices), replica_fn)
