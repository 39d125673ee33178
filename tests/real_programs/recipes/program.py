"""The recipe type and the helpers every recipe shares."""
import dataclasses
import os
from typing import Callable, Optional, Sequence, Union

import numpy as np


@dataclasses.dataclass
class Program:
    """One real program: where it lives, what it exercises, and how to run it tiny.

    `prepare(work, use_tpu)` writes the program's inputs under `work` (a fresh directory) and
    returns `(argv, expected)`: the program's arguments (or a list of them: one invocation
    each, in order, as a program run with `--mode=train` then `--mode=eval`), and the files
    whose existence shows it finished its job (checkpoints, results; glob patterns for
    timestamped exports). Programs are run from a copy of
    `<snapshots>/<snapshot>/<copy_from>` placed at `work/src/<copy_to>`; `script` and
    `pythonpath` are relative to `work/src`. `tf1_libraries` names the installed TF1-era
    libraries a program imports that import TF1 names themselves (see `run.py`: with
    rewritten imports such a program runs through the runner, which serves those libraries
    the v1 namespace). A program written as a package's module (relative imports) names it
    in `module` and runs as `python -m MODULE` (`script` still names its file).
    `with_snapshots` lists other repositories the program imports as packages, as
    `(snapshot, copy_from, copy_to)` copied the same way (lasertagger's `bert`; BERT-NER's
    `bert` submodule, empty in its snapshot).
    A program published as a Jupyter notebook (TensorFlow's guides) names it in `notebook`
    (relative to `copy_from`): its code cells, shell (`!`) and magic (`%`) lines left out,
    become the script `script` at copy time (`notebook.py`), nothing of it stored here.
    `tf2` marks TensorFlow 2 code (`import tensorflow as tf` beside `tf.compat.v1`): its
    rewritten import is `tpu_estimator_compat.v2`, as the runner decides for it.
    `environ(work)` returns environment variables the program reads (`TFDS_DATA_DIR`...);
    `log_expects` are regular expressions its log must match (what it prints of its
    results, for a program that keeps no files: an Estimator without `model_dir`).

    The numbers checks (`run.py`'s `eval-recheck` and `replica-check` modes):
    `eval_only(work, use_tpu)` returns the argv that evaluates the model directory a run of
    `prepare`'s argv left (its latest checkpoint), without training, or a string: why the
    program has no such evaluation to compare; `eval_log` names the `numbers_checks` function
    that reads the evaluations from a log (`eval_results`: the Estimator's "Saving dict"
    lines; `printed_results`). `replica_check` is either `(work, cores) -> (argv, model_dir)`,
    a short deterministic run on the simulated TPU with `cores` replicas (dropout off, no
    unseeded shuffling, the global batch the same for any number of cores) writing
    checkpoints into `model_dir`, or a string: why the program cannot give the 1-replica
    run's weights (`batch norm`...). `gradients` says how its train op
    reduces gradients across replicas: "mean" (CrossShardOptimizer's minimize or
    compute_gradients) or "sum" (its own tf.gradients, then CrossShardOptimizer's
    apply_gradients). `slots` name its optimizer's slots (`<weight>/<slot>`) and the power of
    the gradient each holds after one step (`{"adam_m": 1, "adam_v": 2}`): a "sum" program's
    must be 8**power x the 1-replica run's (see `numbers_checks`), a "mean" program's equal to
    them (a gradient 8x, a sum where TF1 took the mean, shows there even where the
    optimizer's update is scale-invariant, as Adam's).
    """
    name: str
    repo: str
    commit: str
    snapshot: str  # directory name under the snapshots root
    script: str
    exercises: str
    prepare: Callable
    copy_from: str = "."
    copy_to: str = "."
    pythonpath: Sequence[str] = (".",)
    check_paths: Sequence[str] = (".",)  # what `check` reads, relative to work/src
    has_use_tpu: bool = True
    tpu_only: bool = False  # use_tpu=True is a constant of the program: no CPU modes
    tf1_libraries: Sequence[str] = ()
    module: str = ""
    with_snapshots: Sequence[tuple] = ()
    eval_only: Union[Callable, str, None] = None
    eval_log: str = "eval_results"
    replica_check: Union[Callable, str, None] = None
    gradients: str = "mean"
    slots: Optional[dict] = None
    notebook: str = ""
    tf2: bool = False
    environ: Optional[Callable] = None
    log_expects: Sequence[str] = ()


def seeded_rng():
    return np.random.RandomState(0)


def ckpt(model_dir, step):
    return os.path.join(model_dir, "model.ckpt-%d.index" % step)


def tpu_flag(use_tpu):
    return ["--use_tpu=%s" % use_tpu]


def with_flags(argv, flags):
    """`argv` with each `--name=value` of `flags` (a dict name -> value) in place of the
    argv's own `--name=...` (appended where it has none)."""
    names = tuple("--%s=" % name for name in flags)
    return [a for a in argv if not a.startswith(names)] + [
        "--%s=%s" % item for item in flags.items()]


def evaluation_with(prepare, **flags):
    """An eval-only argv (`Program.eval_only`): `prepare`'s argv (its last invocation's, for
    a program run in several) with `flags` set (`mode="eval"`, `do_train="false"`...)."""
    def eval_only(work, use_tpu):
        argv, _ = prepare(work, use_tpu)
        if argv and isinstance(argv[0], (list, tuple)):
            argv = argv[-1]
        return with_flags(argv, flags)
    return eval_only
