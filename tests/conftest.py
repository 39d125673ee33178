"""Test session set-up: one TensorFlow process whose CPU is split into 8 logical devices.

The split must happen before TensorFlow initialises its devices, so it is done at import
time here, before any test module runs. 8 logical CPUs stand in for the 8 cores of a TPU.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

NUM_LOGICAL_DEVICES = 8

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration()] * NUM_LOGICAL_DEVICES)


@pytest.fixture(scope="session")
def eight_devices():
    """A MirroredStrategy over the 8 logical CPU devices (a simulated 8-core TPU).

    One per session: strategies over the same devices share collective instance keys, so two
    of them in one process would mix up their all-reduces.
    """
    return tf.distribute.MirroredStrategy(
        [f"/cpu:{i}" for i in range(NUM_LOGICAL_DEVICES)])


@pytest.fixture(scope="session")
def two_devices():
    """A MirroredStrategy over 2 logical CPU devices, with collective group keys of its own:
    every MirroredStrategy numbers its device groups from 1, and a group key run with 2
    devices aborts the 8-device strategy's all-reduces that use it later in the process."""
    from tpu_estimator_compat.tf_internals import distribute  # noqa: PLC0415

    return distribute.mirrored_strategy_class(10 ** 6)(["/cpu:0", "/cpu:1"])


@pytest.fixture(scope="session")
def one_device():
    """A MirroredStrategy with a single replica, for 1-vs-8 replica comparisons."""
    return tf.distribute.MirroredStrategy(["/cpu:0"])
