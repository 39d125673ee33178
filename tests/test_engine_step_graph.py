"""engine/step_graph.py: a step traced as a TF1 graph and copied into a tf.function runs only
what its outputs need, reads before updates, with per-replica v1 collections (fake steps; no
model_fn, no estimator)."""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.engine import step_graph

_SCALAR = tf.TensorSpec([], tf.float32)


def _run(fn, *values, spec=_SCALAR):
    """Traces `fn` once; returns a tf.function running its pruned copy on an input."""
    step = step_graph.StepGraph.trace(fn, spec)
    copy = tf.function(step.instantiate, autograph=False)
    return [tf.nest.map_structure(lambda t: t.numpy(), copy(tf.constant(v))) for v in values]


def test_only_the_ops_the_outputs_need_run():
    counter = tf.Variable(0.0)

    def step(x):
        counter.assign_add(1.0)  # built but not fetched: TF1's Session.run never ran it
        return {"double": 2.0 * x}

    assert _run(step, 3.0, 4.0) == [{"double": 6.0}, {"double": 8.0}]
    assert counter.numpy() == 0.0


def test_reads_see_the_steps_start_value_unless_they_depend_on_the_update():
    weight = tf.Variable(10.0)

    def step(x):
        update = weight.assign_add(x)
        read = weight.read_value()  # built after the update, no dependency on it
        with tf.control_dependencies([update]):
            after = weight.read_value()
        return {"read": read, "after": after, "from_update": update * 1.0}

    results = _run(step, 1.0, 2.0)
    assert results == [{"read": 10.0, "after": 11.0, "from_update": 11.0},
                       {"read": 11.0, "after": 13.0, "from_update": 13.0}]
    assert weight.numpy() == 13.0  # the fetched update ran once per call


def test_the_copy_is_the_traced_graph_not_a_new_call_of_the_function():
    calls = []

    def step(x):
        calls.append(x)
        return x + 1.0

    step_ = step_graph.StepGraph.trace(step, _SCALAR)
    copy = tf.function(step_.instantiate, autograph=False)
    assert [copy(tf.constant(v)).numpy() for v in (1.0, 5.0)] == [2.0, 6.0]
    assert len(calls) == 1  # traced once, as TF1 built the graph once


def test_eager_value_computes_a_tensor_that_needs_no_input():
    step = step_graph.StepGraph.trace(
        lambda x: {"constant_sum": tf.reduce_sum(tf.range(4.0)), "from_input": x * 2.0}, _SCALAR)
    value = step_graph.eager_value(step.outputs["constant_sum"])
    assert isinstance(value, tf.Tensor) and not tf.is_symbolic_tensor(value)
    assert value.numpy() == 6.0
    with pytest.raises(ValueError, match="is computed from the model's input, so it cannot be "
                                         "the initial value of a variable"):
        step_graph.eager_value(step.outputs["from_input"])


def test_a_seeded_initial_value_is_the_graphs_first_draw_in_every_trace():
    """Initial values are computed eagerly from the traced ops; a seeded random op gives its
    graph op's first draw (a fresh kernel, as TF1's session ran), also when a later trace
    (another estimator in the process) has the same seeds, where a cached eager kernel would
    continue its sequence."""
    def initial_values(x):
        tf.compat.v1.set_random_seed(3)
        return {"normal": tf.compat.v1.truncated_normal_initializer(stddev=0.02)([3, 2]),
                "uniform": tf.compat.v1.glorot_uniform_initializer()([2, 2]),
                "from_input": x}

    def first_draws():
        outputs = step_graph.StepGraph.trace(initial_values, _SCALAR).outputs
        return {name: step_graph.eager_value(outputs[name]).numpy()
                for name in ("normal", "uniform")}

    first, second = first_draws(), first_draws()
    graph = tf.Graph()
    with graph.as_default():  # TF1: the same ops in a graph, run once in a new session
        expected = initial_values(tf.constant(0.0))
        with tf.compat.v1.Session() as session:
            expected = session.run({name: expected[name] for name in first})
    for name, value in expected.items():
        np.testing.assert_array_equal(first[name], value, err_msg=name)
        np.testing.assert_array_equal(second[name], value, err_msg=name)


def test_each_replica_has_its_own_collections_and_cross_replica_code_sees_replica_0s(
        eight_devices):
    seen = {}

    def replica(x):
        with step_graph.building_replica():
            replica_id = step_graph.current_replica()
            tf.compat.v1.add_to_collection(
                "losses", tf.identity(x, name=f"loss_of_replica_{replica_id}"))
            seen[replica_id] = len(tf.compat.v1.get_collection("losses"))
        return x

    def step(x):
        eight_devices.run(replica, args=(x,))
        seen["cross_replica"] = tf.compat.v1.get_collection("losses")
        return x

    with eight_devices.scope():
        step_graph.StepGraph.trace(step, _SCALAR)
    assert [seen[r] for r in range(8)] == [1] * 8
    (replica_0s,) = seen["cross_replica"]
    assert replica_0s.op.name.endswith("loss_of_replica_0")
    assert step_graph.current_replica() == 0  # outside replica functions


def test_each_replicas_ops_are_copied_onto_that_replicas_device(eight_devices):
    def replica(x):
        return tf.square(x, name="replica_square")

    def step(x):
        return eight_devices.experimental_local_results(eight_devices.run(replica, args=(x,)))

    with eight_devices.scope():
        traced = step_graph.StepGraph.trace(step, _SCALAR)
    graph = tf.function(traced.instantiate, autograph=False).get_concrete_function(
        _SCALAR).graph
    devices = [tf.DeviceSpec.from_string(op.device).device_index
               for op in graph.get_operations() if op.type == "Square"]
    assert sorted(devices) == list(range(8))  # not every replica on the first device
