"""`TPUConfig` and `InputPipelineConfig`: the TPU part of a RunConfig, validated when built;
`loop_size`, the one policy for how many steps a call's device loops run."""
import collections
import dataclasses
import re
from typing import Optional

import numpy as np

from tpu_estimator_compat.config import tf_config as tf_config_lib

_VALID_NUM_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)


class InputPipelineConfig:
    """How `input_fn` is deployed; see the `per_host_input_for_training` arg of `TPUConfig`."""
    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


_INPUT_MODES = (1, 2, 3, 4, 5)

# --------------------------------------------------------------------------------------
# iterations_per_loop
# --------------------------------------------------------------------------------------

IterationsPerLoop = collections.namedtuple("IterationsPerLoop", ["value", "unit"])
IterationsPerLoop.__doc__ = """A parsed `iterations_per_loop`: `unit` is 'count' or 'seconds'."""

_ITERATIONS_PER_LOOP_RE = re.compile(r"(?P<value>[1-9]\d*)(?P<suffix>[smh]?)")
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600}


def parse_iterations_per_loop(value):
    """Parses `TPUConfig.iterations_per_loop`.

    Args:
      value: a positive int (a step count), or a string `'<N>s'`, `'<N>m'` or `'<N>h'`
        (a time budget per device loop). Digit strings such as `'10'` count steps.

    Returns:
      An `IterationsPerLoop(value, unit)`: `unit` is `'count'`, or `'seconds'` with the
      time normalised to seconds.

    Raises:
      ValueError: if `value` has neither form.
    """
    match = None if isinstance(value, bool) else _ITERATIONS_PER_LOOP_RE.fullmatch(str(value))
    if match is None:
        raise ValueError(
            "Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer "
            "value or time-based value `<N><s|m|h>` where <N> is any positive integer and "
            "`s`, `m`, `h` are unit of time in seconds, minutes, hours respectively. "
            f"Examples of valid values: `3600s`, `60m`, `1h`. Got: {value!r}.")
    suffix = match.group("suffix")
    number = int(match.group("value"))
    if not suffix:
        return IterationsPerLoop(number, "count")
    return IterationsPerLoop(number * _SECONDS_PER_UNIT[suffix], "seconds")


@dataclasses.dataclass(frozen=True)
class LoopSize:
    """How many steps each device loop of one call runs (`loop_size`).

    steps: at most this many per loop; None: no count (evaluate: every step in one loop, or
      with CPU semantics up to its next progress line; train: `seconds` decides).
    seconds: train's time budget per loop ('<N>s'): the first loop runs one step, later ones
      as many as fit in it at the recent mean step time.
    hooks_every_step: loops of one step so that the hooks see every step (CPU/GPU semantics:
      one step per Session.run, as Estimator).
    steps_per_execution: parameter-server training: the steps of one closure on a worker
      (`steps` is then the steps of one round of the chief's).
    """
    steps: Optional[int]
    seconds: Optional[int] = None
    hooks_every_step: bool = False
    steps_per_execution: Optional[int] = None


# ModeKeys' values (config/ is below api/, which names them).
_TRAIN, _EVAL = "train", "eval"


def loop_size(mode: str, config, *, tpu_estimator: bool, tpu_semantics: bool,
              has_hooks: bool, parameter_servers: bool = False) -> LoopSize:
    """The steps per device loop of a train ('train'), evaluate ('eval') or predict
    ('infer') call: the policy in one place.

    Estimator (`tpu_estimator=False`) runs one step per loop, as its one step per
    Session.run. TPUEstimator runs `config.tpu_config.iterations_per_loop` steps per
    training or prediction loop (a time budget predicts one step per loop), and every
    evaluation step in one loop. Either runs loops of one step when hooks must see every
    step (hooks, CPU/GPU semantics, no parameter servers). With parameter servers a training
    round runs the smallest of the save/summary/log intervals (100 without any), at least
    one closure of `iterations_per_loop` steps (Estimator: one).

    Args:
      mode: a ModeKeys value.
      config: the call's RunConfig (its `tpu_config`, and with parameter servers its save,
        summary and log intervals).
      tpu_estimator: a TPUEstimator's call (else an Estimator's).
      tpu_semantics: the call runs with TPU semantics (`use_tpu=True`).
      has_hooks: the call runs SessionRunHooks.
      parameter_servers: the call trains with parameter servers.

    Raises:
      ValueError: parameter-server training with a time-based `iterations_per_loop`.
    """
    parsed = (config.tpu_config.parsed_iterations_per_loop if tpu_estimator
              else IterationsPerLoop(1, "count"))
    if mode == _TRAIN and parameter_servers:
        if parsed.unit != "count":
            raise ValueError(
                "Parameter-server training runs `iterations_per_loop` steps per closure on a "
                "worker, a count of steps; got "
                f"{config.tpu_config.iterations_per_loop!r}. Pass a number of steps.")
        intervals = [n for n in (config.save_checkpoints_steps, config.save_summary_steps,
                                 config.log_step_count_steps) if n]
        return LoopSize(steps=max(parsed.value, min(intervals, default=100)),
                        steps_per_execution=parsed.value)
    if has_hooks and not tpu_semantics and not parameter_servers:
        return LoopSize(steps=1, hooks_every_step=True)
    if mode == _EVAL:
        return LoopSize(steps=None)
    if parsed.unit == "count":
        return LoopSize(steps=parsed.value)
    return LoopSize(steps=None, seconds=parsed.value) if mode == _TRAIN else LoopSize(steps=1)


def _check_positive_integer(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be int, got {type(value)}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")



def _normalize_input_mode(per_host_input_for_training):
    # The legacy booleans must be mapped before any comparison: True == 1 in Python.
    if per_host_input_for_training is False:
        return InputPipelineConfig.PER_SHARD_V1
    if per_host_input_for_training is True:
        return InputPipelineConfig.PER_HOST_V1
    if per_host_input_for_training not in _INPUT_MODES:
        raise ValueError(
            "per_host_input_for_training must be True, False or an InputPipelineConfig value "
            f"(PER_SHARD_V1=1 ... SLICED=5); got {per_host_input_for_training!r}")
    return per_host_input_for_training


class TPUConfig(collections.namedtuple("TPUConfig", [
        "iterations_per_loop",
        "num_shards",
        "num_cores_per_replica",
        "per_host_input_for_training",
        "tpu_job_name",
        "initial_infeed_sleep_secs",
        "input_partition_dims",
        "eval_training_input_configuration",
        "experimental_host_call_every_n_steps",
        "experimental_allow_per_host_v2_parallel_get_next",
        "experimental_feed_hook",
])):
    """TPU-related configuration of a `TPUEstimator` (a validated namedtuple).

    Args:
      iterations_per_loop: train steps per device loop (one host round-trip), or a time
        budget `'<N>s|m|h'`; see `parse_iterations_per_loop`. Not used by evaluation.
      num_shards: deprecated; if set, must equal the real number of replicas.
      num_cores_per_replica: cores per model replica (model parallelism), one of 1, 2, 4,
        ..., 128; `None` disables model parallelism.
      per_host_input_for_training: an `InputPipelineConfig` value; the legacy `True`/`False`
        become `PER_HOST_V1`/`PER_SHARD_V1`.
      tpu_job_name: job name for TPU placement; defaults to
        `TF_CONFIG['service']['tpu_worker_job_name']`.
      initial_infeed_sleep_secs: seconds to wait before the first batch is fed.
      input_partition_dims: `[feature_dims]` or `[feature_dims, label_dims]` for spatial
        partitioning (PER_HOST_V2 with `num_cores_per_replica` only).
      eval_training_input_configuration: `PER_HOST_V1` or `SLICED`, for EVAL and PREDICT.
      experimental_host_call_every_n_steps: run `host_call` every n steps of a train loop.
      experimental_allow_per_host_v2_parallel_get_next: PER_HOST_V2 may fetch in parallel.
      experimental_feed_hook: a replacement infeed/outfeed hook class (kept, unused).

    Raises:
      ValueError, TypeError: on an invalid value, with the original TPUConfig messages.
    """
    # No __slots__: the parsed iterations_per_loop is kept beside the fields.

    def __new__(cls,
                iterations_per_loop=2,
                num_shards=None,
                num_cores_per_replica=None,
                per_host_input_for_training=True,
                tpu_job_name=None,
                initial_infeed_sleep_secs=None,
                input_partition_dims=None,
                eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
                experimental_host_call_every_n_steps=1,
                experimental_allow_per_host_v2_parallel_get_next=False,
                experimental_feed_hook=None):
        parsed_iterations_per_loop = parse_iterations_per_loop(iterations_per_loop)
        if num_shards is not None:
            _check_positive_integer(num_shards, "TPUConfig num_shards")
        per_host_input_for_training = _normalize_input_mode(per_host_input_for_training)
        _validate_input_partition_dims(
            input_partition_dims, per_host_input_for_training, num_cores_per_replica)
        if num_cores_per_replica is not None and (
                isinstance(num_cores_per_replica, bool)
                or num_cores_per_replica not in _VALID_NUM_CORES_PER_REPLICA):
            raise ValueError("num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; "
                             f"got {num_cores_per_replica}")
        if (isinstance(eval_training_input_configuration, bool)
                or eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1,
                                                             InputPipelineConfig.SLICED)):
            raise ValueError("eval_training_input_configuration must be PER_HOST_V1 or SLICED;"
                             f" got {eval_training_input_configuration}")
        if initial_infeed_sleep_secs:
            _check_positive_integer(initial_infeed_sleep_secs,
                                    "TPUConfig initial_infeed_sleep_secs")
        _check_positive_integer(experimental_host_call_every_n_steps,
                                "TPUConfig experimental_host_call_every_n_steps")
        self = super().__new__(
            cls,
            iterations_per_loop=iterations_per_loop,
            num_shards=num_shards,
            num_cores_per_replica=num_cores_per_replica,
            per_host_input_for_training=per_host_input_for_training,
            tpu_job_name=tpu_job_name or tf_config_lib.tpu_job_name_from_tf_config(),
            initial_infeed_sleep_secs=initial_infeed_sleep_secs,
            input_partition_dims=input_partition_dims,
            eval_training_input_configuration=eval_training_input_configuration,
            experimental_host_call_every_n_steps=experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next=(
                experimental_allow_per_host_v2_parallel_get_next),
            experimental_feed_hook=experimental_feed_hook)
        self._parsed_iterations_per_loop = parsed_iterations_per_loop
        return self

    @property
    def parsed_iterations_per_loop(self) -> IterationsPerLoop:
        """`iterations_per_loop` parsed (`parse_iterations_per_loop`), once, when built."""
        return self._parsed_iterations_per_loop

    @classmethod
    def _make(cls, iterable):
        """A validated `TPUConfig` of the fields in `iterable`, in order."""
        return cls(*iterable)

    def _replace(self, **kwargs):
        """A new, re-validated `TPUConfig` with some fields replaced."""
        return type(self)(**{**self._asdict(), **kwargs})


def _validate_input_partition_dims(dims, input_mode, num_cores_per_replica):
    if dims is None:
        return
    if not isinstance(dims, (list, tuple)) or len(dims) not in (1, 2):
        raise ValueError("input_partition_dims must be a list/tuple with one or two elements.")
    if input_mode != InputPipelineConfig.PER_HOST_V2:
        raise ValueError("input_partition_dims is only supported in PER_HOST_V2 mode.")
    if num_cores_per_replica is None:
        raise ValueError("input_partition_dims requires setting num_cores_per_replica.")

