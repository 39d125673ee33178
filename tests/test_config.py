"""Tests for config/: InputPipelineConfig, TPUConfig, RunConfig, TF_CONFIG, model_dir."""
import copy
import json
import os
import pathlib
import re

import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.config.model_dir import resolve_model_dir
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tf_config import parse_tf_config
from tpu_estimator_compat.config.tpu_config import (InputPipelineConfig, IterationsPerLoop,
                                                    LoopSize, TPUConfig, loop_size,
                                                    parse_iterations_per_loop)

IPL_ERROR = "Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer"


@pytest.fixture(autouse=True)
def no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def set_tf_config(monkeypatch, tf_config):
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))


def raises(exc, message):
    """pytest.raises for an exact message prefix (fix hints may follow it)."""
    return pytest.raises(exc, match="^" + re.escape(message))


class FakeClusterResolver:
    """A ClusterResolver stand-in that counts its calls."""

    def __init__(self, master="grpc://10.0.0.2:8470", cluster=None):
        self._master = master
        self._cluster = cluster if cluster is not None else {"worker": ["10.0.0.2:8470"]}
        self.calls = []

    def master(self):
        self.calls.append("master")
        return self._master

    def cluster_spec(self):
        self.calls.append("cluster_spec")
        return tf.train.ClusterSpec(self._cluster)


# ------------------------------------------------------------------ InputPipelineConfig

def test_input_pipeline_config_values():
    assert (InputPipelineConfig.PER_SHARD_V1, InputPipelineConfig.PER_HOST_V1,
            InputPipelineConfig.PER_HOST_V2, InputPipelineConfig.BROADCAST,
            InputPipelineConfig.SLICED) == (1, 2, 3, 4, 5)


# ------------------------------------------------------------ parse_iterations_per_loop

@pytest.mark.parametrize("value, expected", [
    (1, (1, "count")),
    (2, (2, "count")),
    (np.int64(7), (7, "count")),
    ("10", (10, "count")),
    ("1s", (1, "seconds")),
    ("3600s", (3600, "seconds")),
    ("3m", (180, "seconds")),
    ("60m", (3600, "seconds")),
    ("1h", (3600, "seconds")),
    ("2h", (7200, "seconds")),
])
def test_parse_iterations_per_loop_valid(value, expected):
    parsed = parse_iterations_per_loop(value)
    assert parsed == expected
    assert isinstance(parsed, IterationsPerLoop)
    assert parsed.value == expected[0] and parsed.unit == expected[1]


@pytest.mark.parametrize("value", [
    0, -1, "0", "0s", "01", "-5", "1.5", 1.5, 2.0, "1d", "s", "10 s", "1h ", "5|", "",
    None, True, "1sm", [2]])
def test_parse_iterations_per_loop_invalid(value):
    with raises(ValueError, IPL_ERROR):
        parse_iterations_per_loop(value)


def test_parse_iterations_per_loop_error_names_examples_and_value():
    with pytest.raises(ValueError) as info:
        parse_iterations_per_loop("1d")
    assert "Examples of valid values: `3600s`, `60m`, `1h`." in str(info.value)
    assert "Got: '1d'." in str(info.value)


# -------------------------------------------------------------------------- TPUConfig

def test_tpu_config_fields_and_defaults():
    cfg = TPUConfig()
    assert TPUConfig._fields == (
        "iterations_per_loop", "num_shards", "num_cores_per_replica",
        "per_host_input_for_training", "tpu_job_name", "initial_infeed_sleep_secs",
        "input_partition_dims", "eval_training_input_configuration",
        "experimental_host_call_every_n_steps",
        "experimental_allow_per_host_v2_parallel_get_next", "experimental_feed_hook")
    assert tuple(cfg) == (2, None, None, InputPipelineConfig.PER_HOST_V1, None, None, None,
                          InputPipelineConfig.PER_HOST_V1, 1, False, None)
    assert parse_iterations_per_loop(cfg.iterations_per_loop) == (2, "count")


@pytest.mark.parametrize("given, expected", [
    (True, InputPipelineConfig.PER_HOST_V1),
    (False, InputPipelineConfig.PER_SHARD_V1),
    (1, 1), (2, 2), (3, 3), (4, 4), (5, 5),
    (InputPipelineConfig.PER_HOST_V2, 3),
])
def test_tpu_config_input_mode(given, expected):
    mode = TPUConfig(per_host_input_for_training=given).per_host_input_for_training
    assert mode == expected and type(mode) is int


def test_tpu_config_keeps_valid_values():
    hook_class = type("FeedHook", (), {})
    cfg = TPUConfig(iterations_per_loop="30m", num_shards=8, num_cores_per_replica=2,
                    per_host_input_for_training=InputPipelineConfig.PER_HOST_V2,
                    tpu_job_name="tpu_worker", initial_infeed_sleep_secs=30,
                    input_partition_dims=[[1, 2, 1, 1], None],
                    eval_training_input_configuration=InputPipelineConfig.SLICED,
                    experimental_host_call_every_n_steps=5,
                    experimental_allow_per_host_v2_parallel_get_next=True,
                    experimental_feed_hook=hook_class)
    assert cfg == ("30m", 8, 2, 3, "tpu_worker", 30, [[1, 2, 1, 1], None], 5, 5, True,
                   hook_class)
    assert parse_iterations_per_loop(cfg.iterations_per_loop) == (1800, "seconds")


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(iterations_per_loop=0), ValueError, IPL_ERROR),
    (dict(iterations_per_loop="5d"), ValueError, IPL_ERROR),
    (dict(num_shards=2.0), TypeError, "TPUConfig num_shards must be int, got <class 'float'>"),
    (dict(num_shards=0), ValueError, "TPUConfig num_shards must be positive, got 0"),
    (dict(num_shards=True), TypeError, "TPUConfig num_shards must be int, got <class 'bool'>"),
    (dict(num_cores_per_replica=3), ValueError,
     "num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got 3"),
    (dict(num_cores_per_replica=256), ValueError,
     "num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got 256"),
    (dict(input_partition_dims=[[1], [1], [1]], per_host_input_for_training=3,
          num_cores_per_replica=2), ValueError,
     "input_partition_dims must be a list/tuple with one or two elements."),
    (dict(input_partition_dims=[], per_host_input_for_training=3, num_cores_per_replica=2),
     ValueError, "input_partition_dims must be a list/tuple with one or two elements."),
    (dict(input_partition_dims=[[1, 2]], num_cores_per_replica=2), ValueError,
     "input_partition_dims is only supported in PER_HOST_V2 mode."),
    (dict(input_partition_dims=[[1, 2]], per_host_input_for_training=3), ValueError,
     "input_partition_dims requires setting num_cores_per_replica."),
    (dict(eval_training_input_configuration=InputPipelineConfig.PER_HOST_V2), ValueError,
     "eval_training_input_configuration must be PER_HOST_V1 or SLICED; got 3"),
    (dict(eval_training_input_configuration=True), ValueError,
     "eval_training_input_configuration must be PER_HOST_V1 or SLICED; got True"),
    (dict(initial_infeed_sleep_secs=-1), ValueError,
     "TPUConfig initial_infeed_sleep_secs must be positive, got -1"),
    (dict(initial_infeed_sleep_secs=1.5), TypeError,
     "TPUConfig initial_infeed_sleep_secs must be int, got <class 'float'>"),
    (dict(per_host_input_for_training=7), ValueError,
     "per_host_input_for_training must be True, False or an InputPipelineConfig value"),
    (dict(experimental_host_call_every_n_steps=0), ValueError,
     "TPUConfig experimental_host_call_every_n_steps must be positive, got 0"),
])
def test_tpu_config_validation(kwargs, exc, message):
    with raises(exc, message):
        TPUConfig(**kwargs)


def test_tpu_config_zero_infeed_sleep_is_allowed():
    assert TPUConfig(initial_infeed_sleep_secs=0).initial_infeed_sleep_secs == 0


def test_tpu_config_job_name_from_tf_config(monkeypatch):
    set_tf_config(monkeypatch, {"service": {"tpu_worker_job_name": "my_tpu_job"}})
    assert TPUConfig().tpu_job_name == "my_tpu_job"
    assert TPUConfig(tpu_job_name="explicit").tpu_job_name == "explicit"


def test_tpu_config_replace_revalidates():
    cfg = TPUConfig(iterations_per_loop=10)
    assert cfg._replace(iterations_per_loop="1h").iterations_per_loop == "1h"
    assert cfg._replace(per_host_input_for_training=False).per_host_input_for_training == 1
    with raises(ValueError, IPL_ERROR):
        cfg._replace(iterations_per_loop=-3)


# -------------------------------------------------------------------------- RunConfig

def test_run_config_defaults():
    cfg = RunConfig()
    assert cfg.tpu_config == TPUConfig()
    assert (cfg.master, cfg.evaluation_master, cfg.cluster) == ("", "", None)
    assert cfg.model_dir is None
    assert cfg.tf_random_seed is None
    assert cfg.save_summary_steps == 100
    assert (cfg.save_checkpoints_steps, cfg.save_checkpoints_secs) == (None, 600)
    assert cfg.session_config is None
    assert cfg.keep_checkpoint_max == 5
    assert cfg.keep_checkpoint_every_n_hours == 10000
    assert cfg.log_step_count_steps == 100
    assert (cfg.train_distribute, cfg.eval_distribute, cfg.device_fn, cfg.protocol) == (
        None, None, None, None)
    assert cfg.experimental_distribute is None
    assert cfg.experimental_max_worker_delay_secs is None
    assert cfg.session_creation_timeout_secs == 7200
    assert cfg.checkpoint_save_graph_def is True
    assert cfg.cluster_spec.as_dict() == {}
    assert (cfg.task_type, cfg.task_id, cfg.is_chief) == ("worker", 0, True)
    assert (cfg.num_worker_replicas, cfg.num_ps_replicas) == (1, 0)
    assert cfg.global_id_in_cluster == 0
    assert cfg.service is None


def test_run_config_keeps_given_values(tmp_path, one_device):
    session_config = tf.compat.v1.ConfigProto(log_device_placement=True)
    tpu_config = TPUConfig(iterations_per_loop=50)

    def device_fn(op):
        return "/cpu:0"

    cfg = RunConfig(tpu_config=tpu_config, evaluation_master="grpc://eval", master="grpc://m",
                    model_dir=pathlib.Path(tmp_path), tf_random_seed=42, save_summary_steps=0,
                    save_checkpoints_steps=250, session_config=session_config,
                    keep_checkpoint_max=0, keep_checkpoint_every_n_hours=2,
                    log_step_count_steps=10, train_distribute=one_device,
                    device_fn=device_fn, protocol="grpc", eval_distribute=one_device,
                    experimental_distribute="distribute-config",
                    experimental_max_worker_delay_secs=3,
                    session_creation_timeout_secs=60, checkpoint_save_graph_def=False)
    assert cfg.tpu_config is tpu_config
    assert (cfg.master, cfg.evaluation_master) == ("grpc://m", "grpc://eval")
    assert cfg.model_dir == str(tmp_path)
    assert (cfg.tf_random_seed, cfg.save_summary_steps) == (42, 0)
    assert (cfg.save_checkpoints_steps, cfg.save_checkpoints_secs) == (250, None)
    assert cfg.session_config is session_config
    assert (cfg.keep_checkpoint_max, cfg.keep_checkpoint_every_n_hours) == (0, 2)
    assert cfg.log_step_count_steps == 10
    assert cfg.train_distribute is one_device and cfg.eval_distribute is one_device
    assert cfg.device_fn is device_fn and cfg.protocol == "grpc"
    assert cfg.experimental_distribute == "distribute-config"
    assert cfg.experimental_max_worker_delay_secs == 3
    assert cfg.session_creation_timeout_secs == 60
    assert cfg.checkpoint_save_graph_def is False


def test_run_config_properties_are_read_only():
    cfg = RunConfig()
    with pytest.raises(AttributeError):
        cfg.model_dir = "/tmp/x"
    with pytest.raises(AttributeError):
        cfg.is_chief = False


@pytest.mark.parametrize("kwargs, expected", [
    ({}, (None, 600)),
    (dict(save_checkpoints_steps=100), (100, None)),
    (dict(save_checkpoints_secs=30), (None, 30)),
    (dict(save_checkpoints_steps=None), (None, None)),
    (dict(save_checkpoints_secs=None), (None, None)),
    (dict(save_checkpoints_steps=None, save_checkpoints_secs=None), (None, None)),
    (dict(save_checkpoints_steps=5, save_checkpoints_secs=None), (5, None)),
])
def test_run_config_checkpoint_policy(kwargs, expected):
    cfg = RunConfig(**kwargs)
    assert (cfg.save_checkpoints_steps, cfg.save_checkpoints_secs) == expected


@pytest.mark.parametrize("kwargs, message", [
    (dict(save_checkpoints_steps=10, save_checkpoints_secs=10),
     "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."),
    (dict(model_dir=""), "model_dir should be non-empty."),
    (dict(save_summary_steps=-1), "save_summary_steps should be >= 0"),
    (dict(save_checkpoints_steps=-1), "save_checkpoints_steps should be >= 0"),
    (dict(save_checkpoints_secs=-1), "save_checkpoints_secs should be >= 0"),
    (dict(session_config={"allow_soft_placement": True}),
     "session_config must be instance of ConfigProto"),
    (dict(keep_checkpoint_max=-1), "keep_checkpoint_max should be >= 0"),
    (dict(keep_checkpoint_every_n_hours=0), "keep_checkpoint_every_n_hours should be > 0"),
    (dict(log_step_count_steps=0), "log_step_count_steps should be > 0"),
    (dict(log_step_count_steps="10"), "log_step_count_steps should be > 0"),
    (dict(tf_random_seed=1.5), "tf_random_seed must be integer."),
    (dict(tf_random_seed="1"), "tf_random_seed must be integer."),
    (dict(experimental_max_worker_delay_secs=1.5),
     "experimental_max_worker_delay_secs must be an integer if set."),
    (dict(session_creation_timeout_secs=0), "session_creation_timeout_secs should be > 0"),
    (dict(device_fn=lambda operation: ""),
     'device_fn must be callable with exactly one argument "op".'),
    (dict(device_fn="/cpu:0"), 'device_fn must be callable with exactly one argument "op".'),
    (dict(protocol="http"), "protocol should be grpc or grpc+verbs"),
    (dict(train_distribute="mirrored"),
     "train_distribute must be a tf.distribute.Strategy instance."),
    (dict(eval_distribute=object()),
     "eval_distribute must be a tf.distribute.Strategy instance."),
    (dict(tpu_config={"iterations_per_loop": 2}), "tpu_config must be a TPUConfig instance."),
    (dict(master="", cluster=FakeClusterResolver()), "Both master and cluster are set."),
    (dict(cluster=FakeClusterResolver(),
          session_config=tf.compat.v1.ConfigProto(
              cluster_def=tf.train.ClusterSpec({"w": ["a:1"]}).as_cluster_def())),
     "You cannot provide a ClusterResolver and session_config.cluster_def."),
])
def test_run_config_validation(kwargs, message):
    with raises(ValueError, message):
        RunConfig(**kwargs)


def test_run_config_validation_shows_value():
    with pytest.raises(ValueError, match=r"should be >= 0 \(0 disables summaries\)\. Got: -7\.$"):
        RunConfig(save_summary_steps=-7)


def test_run_config_replace():
    base = RunConfig(model_dir="/tmp/a", save_checkpoints_secs=300)
    new = base.replace(model_dir="/tmp/b", keep_checkpoint_max=1,
                       tpu_config=TPUConfig(iterations_per_loop=100),
                       log_step_count_steps=None)
    assert isinstance(new, RunConfig) and new is not base
    assert (new.model_dir, new.keep_checkpoint_max, new.log_step_count_steps) == (
        "/tmp/b", 1, None)
    assert new.tpu_config.iterations_per_loop == 100
    assert new.save_checkpoints_secs == 300
    # The original is untouched.
    assert (base.model_dir, base.keep_checkpoint_max, base.log_step_count_steps) == (
        "/tmp/a", 5, 100)
    assert base.tpu_config.iterations_per_loop == 2


@pytest.mark.parametrize("kwargs, expected", [
    (dict(save_checkpoints_steps=100), (100, None)),
    (dict(save_checkpoints_secs=60), (None, 60)),
    (dict(save_checkpoints_steps=None), (None, 600)),
    (dict(save_checkpoints_steps=None, save_checkpoints_secs=None), (None, None)),
    (dict(save_checkpoints_steps=7, save_checkpoints_secs=None), (7, None)),
])
def test_run_config_replace_checkpoint_policy(kwargs, expected):
    new = RunConfig().replace(**kwargs)  # Starts from (None, 600).
    assert (new.save_checkpoints_steps, new.save_checkpoints_secs) == expected


@pytest.mark.parametrize("kwargs, message", [
    (dict(save_checkpoints_steps=1, save_checkpoints_secs=1),
     "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."),
    (dict(master="grpc://x"), "Replacing master is not supported. Allowed properties are ["),
    (dict(cluster=None), "Replacing cluster is not supported."),
    (dict(modeldir="/tmp"), "Replacing modeldir is not supported."),
    (dict(model_dir=""), "model_dir should be non-empty."),
    (dict(log_step_count_steps=0), "log_step_count_steps should be > 0"),
    (dict(tpu_config=TPUConfig()._asdict()), "tpu_config must be a TPUConfig instance."),
])
def test_run_config_replace_rejects(kwargs, message):
    with raises(ValueError, message):
        RunConfig().replace(**kwargs)


def test_run_config_replace_tpu_config_none_means_default():
    cfg = RunConfig(tpu_config=TPUConfig(iterations_per_loop=9))
    assert cfg.replace(tpu_config=None).tpu_config == TPUConfig()


def test_run_config_replace_names_the_fix():
    with pytest.raises(ValueError, match="Build a new RunConfig to change master"):
        RunConfig().replace(master="grpc://x")


# --------------------------------------------------------------------------- cluster

def test_cluster_resolver_is_queried_lazily():
    resolver = FakeClusterResolver()
    cfg = RunConfig(cluster=resolver)
    assert resolver.calls == []
    assert cfg.cluster is resolver
    assert cfg.master == "grpc://10.0.0.2:8470"
    assert cfg.evaluation_master == "grpc://10.0.0.2:8470"
    assert resolver.calls == ["master"]
    assert cfg.master == "grpc://10.0.0.2:8470"
    assert resolver.calls == ["master"]  # Cached.


def test_cluster_resolver_spec_goes_into_session_config():
    resolver = FakeClusterResolver(cluster={"worker": ["10.0.0.2:8470", "10.0.0.3:8470"]})
    cfg = RunConfig(cluster=resolver)
    assert resolver.calls == []
    session_config = cfg.session_config
    assert session_config.allow_soft_placement and session_config.isolate_session_state
    assert tf.train.ClusterSpec(session_config.cluster_def).as_dict() == {
        "worker": ["10.0.0.2:8470", "10.0.0.3:8470"]}
    assert cfg.cluster_spec.as_dict() == {"worker": ["10.0.0.2:8470", "10.0.0.3:8470"]}
    assert resolver.calls == ["cluster_spec"]


def test_cluster_resolver_with_user_session_config():
    user = tf.compat.v1.ConfigProto(log_device_placement=True)
    cfg = RunConfig(cluster=FakeClusterResolver(), session_config=user)
    assert cfg.session_config.log_device_placement
    assert tf.train.ClusterSpec(cfg.session_config.cluster_def).jobs == ["worker"]


def test_failing_cluster_resolver_fails_only_when_read():
    class NoTPU(FakeClusterResolver):
        def master(self):
            raise ValueError("Could not find any TPU.")

    cfg = RunConfig(cluster=NoTPU())
    assert cfg.model_dir is None
    with pytest.raises(ValueError, match="Could not find any TPU."):
        cfg.master


def test_explicit_empty_master_is_kept():
    assert RunConfig(master="").master == ""
    assert RunConfig(master="grpc://m").evaluation_master == "grpc://m"


# ------------------------------------------------------------------------- TF_CONFIG

CLUSTER = {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
           "worker": ["host3:2222", "host4:2222", "host5:2222"]}


def test_tf_config_worker(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    cfg = RunConfig()
    assert cfg.master == "grpc://host4:2222"
    assert cfg.evaluation_master == "grpc://host4:2222"
    assert (cfg.task_type, cfg.task_id, cfg.is_chief) == ("worker", 1, False)
    assert (cfg.num_ps_replicas, cfg.num_worker_replicas) == (2, 4)
    assert cfg.cluster_spec.as_dict() == CLUSTER
    assert cfg.global_id_in_cluster == 2


def test_tf_config_chief(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    cfg = RunConfig()
    assert cfg.master == "grpc://host0:2222"
    assert (cfg.task_type, cfg.task_id, cfg.is_chief) == ("chief", 0, True)
    assert (cfg.num_ps_replicas, cfg.num_worker_replicas) == (2, 4)
    assert cfg.global_id_in_cluster == 0


def test_tf_config_ps_global_id(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "ps", "index": 1}})
    cfg = RunConfig()
    assert (cfg.global_id_in_cluster, cfg.is_chief) == (5, False)


def test_tf_config_evaluator(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0},
                                "eval_session_master": "grpc://eval:1"})
    cfg = RunConfig()
    assert (cfg.master, cfg.evaluation_master) == ("", "grpc://eval:1")
    assert (cfg.task_type, cfg.task_id, cfg.is_chief) == ("evaluator", 0, False)
    assert (cfg.num_ps_replicas, cfg.num_worker_replicas) == (0, 0)
    assert cfg.cluster_spec.as_dict() == {}
    assert cfg.global_id_in_cluster is None


def test_tf_config_evaluator_without_eval_master_is_not_given_master(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
    assert RunConfig(master="grpc://train").evaluation_master == ""


@pytest.mark.parametrize("index, is_chief, global_id", [(0, True, 0), (1, False, 1)])
def test_tf_config_without_chief_makes_worker_0_chief(monkeypatch, index, is_chief, global_id):
    cluster = {"worker": ["w0:1", "w1:1"]}
    set_tf_config(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": index}})
    cfg = RunConfig()
    assert (cfg.is_chief, cfg.global_id_in_cluster) == (is_chief, global_id)
    assert (cfg.num_worker_replicas, cfg.num_ps_replicas) == (2, 0)
    assert cfg.master == f"grpc://w{index}:1"


def test_tf_config_legacy_master_job(monkeypatch):
    cluster = {"master": ["m:1"], "worker": ["w0:1"], "ps": ["p:1"]}
    set_tf_config(monkeypatch, {"cluster": cluster, "task": {"type": "master", "index": 0}})
    cfg = RunConfig()
    assert (cfg.is_chief, cfg.num_worker_replicas, cfg.global_id_in_cluster) == (True, 2, 0)


def test_tf_config_single_node_is_local(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": {"chief": ["h:1"]},
                                "task": {"type": "chief", "index": "0"}})
    cfg = RunConfig()
    assert (cfg.master, cfg.task_id, cfg.is_chief) == ("", 0, True)


def test_tf_config_session_master_and_service(monkeypatch):
    set_tf_config(monkeypatch, {"session_master": "grpc://sm:1", "service": {"k": "v"},
                                "eval_session_master": "grpc://em:1"})
    cfg = RunConfig()
    assert (cfg.master, cfg.evaluation_master, cfg.service) == (
        "grpc://sm:1", "grpc://em:1", {"k": "v"})


def test_tf_config_model_dir(monkeypatch):
    set_tf_config(monkeypatch, {"model_dir": "/tmp/from_env"})
    assert RunConfig().model_dir == "/tmp/from_env"
    assert RunConfig(model_dir="/tmp/from_env").model_dir == "/tmp/from_env"
    with raises(ValueError, "`model_dir` provided in RunConfig construct, if set, must have "
                            "the same value as the model_dir in TF_CONFIG."):
        RunConfig(model_dir="/tmp/other")


def test_tf_config_is_read_once_at_construction(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 2}})
    cfg = RunConfig()
    monkeypatch.delenv("TF_CONFIG")
    assert (cfg.task_id, cfg.master) == (2, "grpc://host5:2222")
    assert cfg.replace(keep_checkpoint_max=3).task_id == 2


@pytest.mark.parametrize("tf_config, exc, message", [
    ({"task": {"type": "ps"}}, ValueError,
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.'),
    ({"task": {"type": "worker", "index": 1}}, ValueError,
     'If "cluster" is not set in TF_CONFIG, task index must be 0.'),
    ({"cluster": CLUSTER, "task": {"index": 0}}, ValueError,
     'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker"}}, ValueError,
     'If "cluster" is set in TF_CONFIG, task index must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}}, ValueError,
     "Task index must be non-negative number."),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}}, ValueError,
     "trainer is not a valid task_type in the cluster_spec:"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 3}}, ValueError,
     "3 is not a valid task_id for task_type worker in the cluster_spec:"),
    ({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}},
     ValueError, 'The "cluster" in TF_CONFIG must have only one "chief" node.'),
    ({"cluster": {"chief": ["a:1"], "master": ["b:1"]}, "task": {"type": "chief", "index": 0}},
     ValueError, "If `master` node exists in `cluster`, job `chief` is not supported."),
    ({"cluster": {"master": ["b:1"]}, "task": {"type": "evaluator", "index": 0}},
     ValueError, "If `master` node exists in `cluster`, task_type `evaluator` is not supported."),
    ({"service": "tpu"}, TypeError,
     "If \"service\" is set in TF_CONFIG, it must be a dict. Given <class 'str'>"),
    ({"model_dir": ""}, ValueError, "model_dir in TF_CONFIG should be non-empty."),
])
def test_tf_config_errors(monkeypatch, tf_config, exc, message):
    set_tf_config(monkeypatch, tf_config)
    with raises(exc, message):
        RunConfig()


def test_tf_config_invalid_json(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "{cluster:")
    with raises(ValueError, "The TF_CONFIG environment variable is not valid JSON"):
        RunConfig()


def test_parse_tf_config_is_pure():
    facts = parse_tf_config(
        {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})
    assert facts.task_type == "worker" and facts.global_id_in_cluster == 1
    assert "TF_CONFIG" not in os.environ


# ------------------------------------------------------------------ resolve_model_dir

def test_resolve_model_dir_from_constructor():
    cfg = resolve_model_dir(RunConfig(), "/tmp/ctor")
    assert cfg.model_dir == "/tmp/ctor"


def test_resolve_model_dir_from_config():
    base = RunConfig(model_dir="/tmp/cfg")
    assert resolve_model_dir(base, None).model_dir == "/tmp/cfg"
    assert resolve_model_dir(base, "/tmp/cfg").model_dir == "/tmp/cfg"
    assert resolve_model_dir(base, pathlib.Path("/tmp/cfg")).model_dir == "/tmp/cfg"


def test_resolve_model_dir_conflict():
    with raises(ValueError, "`model_dir` are set both in constructor and `RunConfig`, but with "
                            "different values. In constructor: '/tmp/a', in `RunConfig`: "
                            "'/tmp/b' "):
        resolve_model_dir(RunConfig(model_dir="/tmp/b"), "/tmp/a")


def test_resolve_model_dir_uses_a_temp_dir(caplog):
    with caplog.at_level("WARNING"):
        cfg = resolve_model_dir(RunConfig(), None)
    assert os.path.isdir(cfg.model_dir)
    assert f"Using temporary folder as model directory: {cfg.model_dir}" in caplog.text
    os.rmdir(cfg.model_dir)


def test_resolve_model_dir_default_config_and_type_check():
    assert resolve_model_dir(None, "/tmp/x").model_dir == "/tmp/x"
    with raises(ValueError, "config must be an instance of `RunConfig`, but provided"):
        resolve_model_dir({"model_dir": "/tmp/x"}, None)


def test_a_gcs_model_dir_without_network_or_credentials_says_so(monkeypatch):
    def unreachable(path):
        raise tf.errors.FailedPreconditionError(
            None, None, "Error executing an HTTP request: libcurl code 6 meaning 'Could not "
            "resolve hostname', error details: Could not resolve host: www.googleapis.com\n\t "
            f"when reading metadata of {path}")
    monkeypatch.setattr(tf.io.gfile, "exists", unreachable)
    with pytest.raises(tf.errors.FailedPreconditionError,
                       match=r"Cannot reach model_dir gs://bucket/run on Google Cloud Storage: "
                             r"Error executing an HTTP request: libcurl code 6 .*when reading "
                             r"metadata of gs://bucket/run\. Check this machine's network "
                             r"connection to storage\.googleapis\.com, and its Google Cloud "
                             r"credentials"):
        resolve_model_dir(RunConfig(model_dir="gs://bucket/run"), None)


# ------------------------------------------------------------------ the loop-size policy

def test_tpu_config_keeps_iterations_per_loop_parsed():
    cfg = TPUConfig(iterations_per_loop="3m")
    assert cfg.iterations_per_loop == "3m"  # as given, as the original
    assert cfg.parsed_iterations_per_loop == (180, "seconds")
    assert cfg._replace(iterations_per_loop=4).parsed_iterations_per_loop == (4, "count")
    assert TPUConfig._make(cfg).parsed_iterations_per_loop == (180, "seconds")
    assert copy.deepcopy(cfg).parsed_iterations_per_loop == (180, "seconds")


_TPU, _CPU = dict(tpu_semantics=True), dict(tpu_semantics=False)


@pytest.mark.parametrize("mode, ipl, estimator, kwargs, expected", [
    # TPUEstimator: iterations_per_loop steps per train/predict loop, eval in one loop
    ("train", 5, "tpu", dict(**_TPU, has_hooks=True), LoopSize(5)),
    ("train", 5, "tpu", dict(**_CPU, has_hooks=False), LoopSize(5)),
    ("train", "2m", "tpu", dict(**_TPU, has_hooks=False), LoopSize(None, seconds=120)),
    ("infer", 5, "tpu", dict(**_TPU, has_hooks=False), LoopSize(5)),
    ("infer", "30s", "tpu", dict(**_TPU, has_hooks=False), LoopSize(1)),
    ("eval", 5, "tpu", dict(**_TPU, has_hooks=True), LoopSize(None)),
    ("eval", 5, "tpu", dict(**_CPU, has_hooks=False), LoopSize(None)),
    # hooks with CPU/GPU semantics see every step
    ("train", 5, "tpu", dict(**_CPU, has_hooks=True), LoopSize(1, hooks_every_step=True)),
    ("eval", 5, "tpu", dict(**_CPU, has_hooks=True), LoopSize(1, hooks_every_step=True)),
    ("infer", 5, "tpu", dict(**_CPU, has_hooks=True), LoopSize(1, hooks_every_step=True)),
    ("train", "2m", "tpu", dict(**_CPU, has_hooks=True), LoopSize(1, hooks_every_step=True)),
    # Estimator: one step per Session.run; evaluate in one loop
    ("train", 5, "plain", dict(**_CPU, has_hooks=False), LoopSize(1)),
    ("infer", 5, "plain", dict(**_CPU, has_hooks=False), LoopSize(1)),
    ("eval", 5, "plain", dict(**_CPU, has_hooks=False), LoopSize(None)),
    ("eval", 5, "plain", dict(**_CPU, has_hooks=True), LoopSize(1, hooks_every_step=True)),
    # parameter servers: rounds of the smallest interval, closures of iterations_per_loop
    ("train", 5, "tpu", dict(**_CPU, has_hooks=True, parameter_servers=True),
     LoopSize(50, steps_per_execution=5)),
    ("train", 5, "plain", dict(**_CPU, has_hooks=True, parameter_servers=True),
     LoopSize(50, steps_per_execution=1)),
    ("train", 80, "tpu", dict(**_CPU, has_hooks=False, parameter_servers=True),
     LoopSize(80, steps_per_execution=80)),
    ("eval", 5, "tpu", dict(**_CPU, has_hooks=True, parameter_servers=True), LoopSize(None)),
])
def test_loop_size(mode, ipl, estimator, kwargs, expected):
    config = RunConfig(save_checkpoints_steps=200, save_summary_steps=50,
                       log_step_count_steps=None,
                       tpu_config=TPUConfig(iterations_per_loop=ipl))
    assert loop_size(mode, config, tpu_estimator=estimator == "tpu", **kwargs) == expected


def test_loop_size_of_parameter_servers_without_intervals_is_100_steps():
    config = RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None,
                       save_summary_steps=None, log_step_count_steps=None)
    assert loop_size("train", config, tpu_estimator=False, tpu_semantics=False,
                     has_hooks=False, parameter_servers=True) == LoopSize(100, None, False, 1)


def test_loop_size_of_parameter_servers_needs_a_count():
    config = RunConfig(tpu_config=TPUConfig(iterations_per_loop="1m"))
    with pytest.raises(ValueError, match=re.escape(
            "Parameter-server training runs `iterations_per_loop` steps per closure on a "
            "worker, a count of steps; got '1m'. Pass a number of steps.")):
        loop_size("train", config, tpu_estimator=True, tpu_semantics=False, has_hooks=False,
                  parameter_servers=True)
