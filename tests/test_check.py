"""`python -m tpu_estimator_compat check`: static report of the TF1 APIs a codebase uses."""
import inspect
import io
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from tpu_estimator_compat import __main__ as cli
from tpu_estimator_compat.cli import check as compat_check
from tpu_estimator_compat.cli import inventory
from tpu_estimator_compat.cli import native_stderr
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths
from tpu_estimator_compat.v1 import contrib as v1_contrib
from tpu_estimator_compat.v1 import estimator as v1_estimator
from tpu_estimator_compat.v1.contrib import tpu as v1_contrib_tpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRAIN = '''\
import tensorflow as tf
from tensorflow.contrib import slim
from tensorflow.python.estimator import estimator as est
import tensorflow_estimator as tfe

layers = tf.contrib.layers
FLAGS = tf.flags.FLAGS


def model(x):
    y = slim.conv2d(x, 3, 3)
    z = layers.softmax(y)
    cell = tf.contrib.quantize.create_eval_graph()
    hook = tf.train.LoggingTensorHook({}, every_n_iter=1)
    return tfe.estimator.tpu.TPUEstimator(None), est.Estimator, FLAGS.model_dir, cell
'''

DATA = '''\
import numpy as np
import tensorflow.compat.v1 as tf1
from tensorflow.contrib.training import HParams
from tensorflow.contrib.tpu import *

tf1.data.TFRecordDataset
x = np.zeros(3)
'''


def test_report_groups_apis_by_file_with_status_links_and_summary(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    (tmp_path / "pkg" / "data.py").write_text(DATA)
    (tmp_path / "pkg" / "py2_tool.py").write_text('print "hello"\n')
    (tmp_path / "pkg" / "no_tf.py").write_text("import os\n")
    (tmp_path / "pkg" / "notes.txt").write_text("import tensorflow.contrib.quantize\n")
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "pkg")], out=out)
    known = "see docs/compatibility.md#known-differences-from-the-original"
    hooks = compat_check.DIFFERENCE_NOTES["train.SessionRunHook"]
    root = str(tmp_path / "pkg")
    assert out.getvalue().splitlines() == [
        f"{root}/data.py",
        "  supported    tensorflow.compat.v1  (line 2)",
        "  difference   tensorflow.contrib.training.HParams  (line 3): no hparam_def protocol "
        "buffers, no indexed assignments (parse('a[1]=2')); "
        "see docs/compatibility.md#tf1-module-paths-and-contrib-modules",
        "  supported    tensorflow.contrib.tpu  (line 4)",
        "  supported    tensorflow.compat.v1.data.TFRecordDataset  (line 6)",
        f"{root}/py2_tool.py",
        "  cannot parse (Missing parentheses in call to 'print'. Did you mean print(...)?, "
        "line 1): not checked",
        f"{root}/train.py",
        "  supported    tensorflow.contrib.slim  (line 2)",
        "  supported    tensorflow.python.estimator.estimator  (line 3)",
        "  supported    tensorflow.contrib.layers  (line 6)",
        "  supported    tensorflow.flags.FLAGS  (line 7)",
        "  supported    tensorflow.contrib.slim.conv2d  (line 11)",
        "  supported    tensorflow.contrib.layers.softmax  (line 12)",
        "  UNSUPPORTED  tensorflow.contrib.quantize  (line 13): module "
        "'tpu_estimator_compat.v1.contrib' has no attribute 'quantize'. tf.contrib was removed in "
        "TensorFlow 2; tpu_estimator_compat provides tf.contrib.{cluster_resolver, crf, data, "
        "distribute, estimator, framework, gan, image, layers, learn, lookup, metrics, opt, "
        "predictor, rnn, slim, stateless, summary, tpu, training} only.",
        f"  difference   tensorflow.train.LoggingTensorHook  (line 14): {hooks}; {known}",
        "  difference   tensorflow_estimator.estimator.tpu.TPUEstimator  (line 15): runs on "
        "tf.distribute strategies; evaluate(steps=None) counts every example once; no "
        f"graph.pbtxt; TPU embeddings without sequence columns; {known}",
        "  difference   tensorflow.python.estimator.estimator.Estimator  (line 15): one device "
        f"unless RunConfig(train_distribute=...); no graph.pbtxt; {known}",
        "14 TensorFlow APIs used: 9 supported, 4 supported with documented differences, "
        "1 unsupported; 1 file could not be parsed.",
        # TF 1.15's names served (cli/inventory.py), per top module used
        "TF 1.15 names served, of the modules used: tf {}, "
        "tf.contrib.layers {}, tf.contrib.quantize 0/4, tf.contrib.slim {}, tf.contrib.tpu {}, "
        "tf.contrib.training {}, tf.data {}, tf.estimator.tpu {}, tf.train 128/128.".format(*(
            "{}/{}".format(*inventory.coverage(inventory.walk(
                [m for m in inventory.walked_modules() if inventory.top_module(m) == top]))[top])
            for top in ("tf", "tf.contrib.layers", "tf.contrib.slim",
                        "tf.contrib.tpu", "tf.contrib.training", "tf.data", "tf.estimator.tpu"))),
    ]
    assert totals["unsupported"] == {"tensorflow.contrib.quantize"}
    assert cli.main(["check", str(tmp_path / "pkg")]) == 1
    assert cli.main(["check", str(tmp_path / "pkg" / "data.py")]) == 0
    assert cli.main(["check", str(tmp_path / "missing")]) == 2

    full = out.getvalue().splitlines()
    out = io.StringIO()
    compat_check.check([str(tmp_path / "pkg")], out=out, problems_only=True)
    # only the problems (and the files holding them), then the same summary lines
    assert out.getvalue().splitlines() == [
        line for line in full
        if not line.startswith(("  supported", "  difference")) and line != f"{root}/data.py"]
    assert len(out.getvalue().splitlines()) == len(full) - 14


def test_check_command_prints_only_its_report_without_tensorflow_start_up_lines(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    result = subprocess.run(
        [sys.executable, "-m", "tpu_estimator_compat", "check", "--problems-only",
         str(tmp_path)], capture_output=True, text=True, timeout=300, check=False, env=env)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""  # no `oneDNN custom operations are on`, `cudart_stub.cc`...
    assert result.stdout.splitlines()[0] == f"{tmp_path}/train.py"
    assert result.stdout.count("UNSUPPORTED") == 1 and "  difference  " not in result.stdout


def test_native_stderr_is_printed_when_the_command_fails(capfd):
    with pytest.raises(RuntimeError):
        with native_stderr.native_stderr_captured():
            os.write(2, b"native line\n")
            print("python line", file=sys.stderr)
            raise RuntimeError
    assert capfd.readouterr().err == "python line\nnative line\n"
    with native_stderr.native_stderr_captured():
        os.write(2, b"native line\n")
    assert capfd.readouterr().err == ""


def test_uses_follow_aliases_from_imports_and_assignments():
    source = (
        "import tensorflow.compat.v1 as tf\n"
        "import tensorflow.contrib.tpu\n"
        "from tensorflow.contrib import tpu as contrib_tpu\n"
        "from tensorflow.contrib.tpu.python.tpu import tpu_config as cfg\n"
        "opt = contrib_tpu.CrossShardOptimizer\n"
        "opt(tf.train.AdamOptimizer(0.1)).minimize\n"
        "cfg.TPUConfig(iterations_per_loop=3)\n"
        "tensorflow.contrib.tpu.TPUEstimator\n"
        "x = tf.contrib\n"
        "x = 3\n"
        "x.slim\n"
        "other.tf.train.Saver\n")
    assert compat_check.uses_in_source(source) == {
        "tensorflow.compat.v1": 1, "tensorflow.contrib.tpu": 2,
        "tensorflow.contrib.tpu.python.tpu.tpu_config": 4,
        "tensorflow.contrib.tpu.CrossShardOptimizer": 5,
        "tensorflow.compat.v1.train.AdamOptimizer": 6,
        "tensorflow.contrib.tpu.python.tpu.tpu_config.TPUConfig": 7,
        "tensorflow.contrib.tpu.TPUEstimator": 8, "tensorflow.compat.v1.contrib": 9}


def test_parameters_and_local_assignments_shadow_imported_names():
    # vfonov/deep-qc's estimator.py: `from tensorflow.python.platform import flags`, then
    # `def _flags2params(flags): ... flags.batch_size` reads its FLAGS argument.
    source = (
        "from tensorflow.python.platform import flags\n"
        "import tensorflow as tf\n"
        "def params(flags, *tf):\n"
        "    return flags.batch_size, tf.x\n"
        "def local():\n"
        "    flags = object()\n"
        "    return flags.model_dir\n"
        "scaled = lambda flags: flags.learning_rate\n"
        "def typed(x: tf.Tensor = flags.FLAGS):\n"
        "    import tensorflow as flags\n"
        "    return flags.contrib\n"
        "flags.DEFINE_string\n")
    assert compat_check.uses_in_source(source) == {
        "tensorflow.python.platform.flags": 1,
        "tensorflow.Tensor": 9, "tensorflow.python.platform.flags.FLAGS": 9,
        "tensorflow.contrib": 11, "tensorflow.python.platform.flags.DEFINE_string": 12}


def _served_paths():
    """Every name and module path the namespace lists: the `_paths` table, its entries'
    names, and the name tables of `contrib`, `contrib.tpu` and `estimator`."""
    paths = {path: f"tpu_estimator_compat.v1.{path}" for path in _paths.MODULES}
    for path, entry in _paths.MODULES.items():
        if isinstance(entry, _paths.Virtual):
            paths.update({f"{path}.{name}": spec for name, spec in entry.names.items()})
    paths.update({f"contrib.tpu.{name}": spec for name, spec in v1_contrib_tpu.NAMES.items()})
    paths.update({f"estimator.{name}": spec for name, spec in v1_estimator.NAMES.items()})
    paths.update({f"contrib.{name}": None for name in v1_contrib.SUBMODULES})
    return paths


def test_support_table_agrees_with_what_the_namespace_serves():
    resolver = compat_check.Resolver()
    for path, spec in _served_paths().items():
        assert resolver.verdict(f"tensorflow.{path}").status != "unsupported", path
        if spec is not None:
            assert compat_check.lookup(path) is _lazy.resolve(spec), path


@pytest.mark.parametrize("statement", [
    "from tensorflow.contrib.tpu import TPUEstimator",
    "from tensorflow.contrib.tpu import keras_to_tpu_model",
    "from tensorflow.contrib import rnn",
    "from tensorflow.contrib.slim.nets import resnet_v2",
    "from tensorflow.contrib.slim.nets import nasnet",
    "from tensorflow.estimator import DNNClassifier",
    "from tensorflow.python.estimator.canned import head",
    "from tensorflow.python.ops import array_ops",
    "from tensorflow.contrib.training import bucket_by_sequence_length",
    "from tensorflow_estimator.python.estimator.tpu import tpu_config",
])
def test_verdict_is_unsupported_exactly_when_the_rewritten_import_fails(statement):
    module, _, name = statement[len("from "):].partition(" import ")
    verdict = compat_check.Resolver().verdict(f"{module}.{name}")
    rewritten = statement.replace("tensorflow_estimator", "tensorflow").replace(
        "tensorflow", "tpu_estimator_compat.v1")
    try:
        exec(rewritten, {})  # noqa: S102
        imported = True
    except ImportError:
        imported = False
    assert (verdict.status != "unsupported") == imported


def test_documented_differences_are_served_and_link_existing_docs_sections():
    with open(os.path.join(REPO, compat_check.DOCS)) as f:
        headings = [line.lstrip("#").strip() for line in f if line.startswith("#")]
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    for key, anchor in compat_check.DIFFERENCES.items():
        compat_check.lookup(key)  # raises if not served
        assert anchor in anchors, anchor
    assert set(compat_check.DIFFERENCE_NOTES) == set(compat_check.DIFFERENCES)
    for key, note in compat_check.DIFFERENCE_NOTES.items():
        assert "\n" not in note and 10 < len(note) <= 140, note
    # the estimators' notes deny no argument they take (it said "no embedding_config_spec")
    for key in ("contrib.tpu.TPUEstimator", "estimator.Estimator"):
        arguments = inspect.signature(compat_check.lookup(key)).parameters
        denied = set(re.findall(r"\bno (\w+)", compat_check.DIFFERENCE_NOTES[key]))
        assert not denied & set(arguments), key


TF2_CODE = """
import tensorflow.compat.v2 as tf
import tensorflow.compat.v1 as tf1
tf.keras.layers.Dense
tf.keras.layers.experimental.SyncBatchNormalization
tf.logging.info
tf1.compat.v2.summary.scalar
"""


def test_tensorflow_2_names_are_tf2_not_unsupported(tmp_path):
    (tmp_path / "model.py").write_text(TF2_CODE)
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "model.py")], out=out)
    version = tf.__version__
    # (TensorFlow names its compat.v2 module either way, depending on how it was imported.)
    lines = [re.sub(r"module 'tensorflow[._a-z0-9]*compat\.v2'", "module 'tensorflow.compat.v2'",
                    line) for line in out.getvalue().splitlines()[1:]]
    assert lines == [
        "  TF2          tensorflow.compat.v2  (line 2)",
        "  supported    tensorflow.compat.v1  (line 3)",
        "  TF2          tensorflow.compat.v2.keras.layers.Dense  (line 4)",
        f"  TF2          tensorflow.compat.v2.keras.layers.experimental  (line 5): not in "
        f"TensorFlow {version} (module 'keras._tf_keras.keras.layers' has no attribute "
        "'experimental'); tf.keras is Keras 3 there: Keras 2 names are tf_keras's, which "
        "TF_USE_LEGACY_KERAS=1 makes tf.keras",
        f"  TF2          tensorflow.compat.v2.logging  (line 6): not in TensorFlow {version} "
        "(module 'tensorflow.compat.v2' has no attribute 'logging')",
        "  TF2          tensorflow.compat.v1.compat.v2.summary.scalar  (line 7)",
        "6 TensorFlow APIs used: 1 supported, 0 supported with documented differences, "
        "0 unsupported, 5 TensorFlow 2 (TensorFlow's own: tensorflow.compat.v2, or TF2 "
        "code's names).",
        "TF 1.15 names served, of the modules used: tf {}/{}.".format(
            *inventory.coverage(inventory.walk(["tensorflow"]))["tf"]),
    ]
    assert totals["unsupported"] == set()
    assert cli.main(["check", str(tmp_path / "model.py")]) == 0


TF2_ERA_CODE = """
import tensorflow as tf
step = tf.compat.v1.train.get_or_create_global_step()
estimator = tf.estimator.Estimator
writer = tf.summary.create_file_writer
layer = tf.keras.layers.Dense
tf.no_such_op
tf.estimator.DNNClassifier
tf.estimator.BoostedTreesClassifier
"""


def test_tf2_era_code_is_checked_against_tensorflow_2_with_the_estimator(tmp_path):
    """A file `run` serves TensorFlow 2 (tf.compat.v1 from `import tensorflow`, no TF1-only
    name): its TF2 names are TensorFlow 2.21's (or tf_keras's), its tf.compat.v1 and
    tf.estimator names the v1 namespace's, and a name TensorFlow 2 lacks is unsupported."""
    (tmp_path / "train.py").write_text(TF2_ERA_CODE)
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "train.py")], out=out)
    lines = out.getvalue().splitlines()
    assert lines[1] == ("  TensorFlow 2 code: `run` serves its `import tensorflow` "
                        "tpu_estimator_compat.v2 (TensorFlow 2 with tf.estimator); see "
                        "docs/cli.md")
    assert lines[2:7] == [
        "  supported    tensorflow.compat.v1.train.get_or_create_global_step  (line 3)",
        "  difference   tensorflow.estimator.Estimator  (line 4): one device unless "
        "RunConfig(train_distribute=...); no graph.pbtxt; see "
        "docs/compatibility.md#known-differences-from-the-original",
        "  TF2          tensorflow.summary.create_file_writer  (line 5)",
        "  TF2          tensorflow.keras.layers.Dense  (line 6)",
        f"  UNSUPPORTED  tensorflow.no_such_op  (line 7): not in TensorFlow {tf.__version__} "
        "(module 'tpu_estimator_compat.v2' has no attribute 'no_such_op')"]
    # TensorFlow 2's canned estimators (the V2 classes) are served; BoostedTrees* are not
    assert lines[7] == "  supported    tensorflow.estimator.DNNClassifier  (line 8)"
    assert lines[8].startswith(
        "  UNSUPPORTED  tensorflow.estimator.BoostedTreesClassifier  (line 9): not in "
        f"TensorFlow {tf.__version__} (module 'tpu_estimator_compat.v2.estimator' has no "
        "attribute 'BoostedTreesClassifier': TF 1.x's gradient-boosted trees are not provided "
        "by tpu_estimator_compat. Use TensorFlow Decision Forests, their successor")
    assert totals["unsupported"] == {"tensorflow.no_such_op",
                                     "tensorflow.estimator.BoostedTreesClassifier"}


@pytest.mark.parametrize("path, api, instead", [
    ("tensorflow.contrib.learn.RunConfig", "tensorflow.contrib.learn.RunConfig",
     "Instead of the rest of tf.contrib.learn, use tf.estimator (Estimator, RunConfig, "
     "ModeKeys, export; served here) with tf.data input functions"),
    ("tensorflow.compat.v1.contrib.cloud.BigQueryReader", "tensorflow.compat.v1.contrib.cloud",
     "Instead of tf.contrib.cloud, use tf.io.gfile and tf.data, which read gs:// paths "
     "directly"),
])
def test_unserved_contrib_modules_name_what_to_use_instead(path, api, instead):
    verdict = compat_check.Resolver().verdict(path)
    assert verdict.status == "unsupported"
    assert verdict.api == api
    assert instead in verdict.detail
    with pytest.raises(AttributeError, match=re.escape(instead)):
        compat_check.lookup(_v1_relative(path))


def _v1_relative(path):
    return compat_check._v1_relative(path.split("."))


def test_contrib_learn_serves_its_downloader_only():
    verdict = compat_check.Resolver().verdict(
        "tensorflow.contrib.learn.datasets.base.maybe_download")
    assert verdict.status == "supported"


def test_contrib_opt_serves_what_tpu_programs_use():
    resolver = compat_check.Resolver()
    for name in ("AdamWOptimizer", "LARSOptimizer", "LazyAdamOptimizer", "MovingAverageOptimizer"):
        assert resolver.verdict(f"tensorflow.contrib.opt.{name}").status == "supported"
    verdict = resolver.verdict("tensorflow.contrib.opt.NadamOptimizer")
    assert verdict == compat_check.Verdict(
        "tensorflow.contrib.opt.NadamOptimizer", "unsupported",
        "module 'tpu_estimator_compat.v1.contrib.opt' has no attribute 'NadamOptimizer'. "
        "tpu_estimator_compat provides these of tf.contrib.opt only: LARSOptimizer, "
        "LazyAdamOptimizer, MovingAverageOptimizer, AdamWOptimizer, MomentumWOptimizer, "
        "extend_with_decoupled_weight_decay, DecoupledWeightDecayExtension.")


GUARDED = '''\
import tensorflow.compat.v1 as tf

try:
    from tensorflow.contrib import cloud
    from tensorflow.contrib.cloud import BigtableClient
except (ValueError, ImportError) as error:
    tf.logging.exception("Bigtable is not supported in TensorFlow 2.x.")
    raise error

try:
    import tensorflow.contrib.quantize as rnn
except ValueError:
    rnn = None


def source():
    return cloud.BigtableClient, BigtableClient
'''


def test_imports_guarded_by_except_import_error_are_optional_not_unsupported(tmp_path):
    (tmp_path / "input.py").write_text(GUARDED)
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "input.py")], out=out)
    lines = out.getvalue().splitlines()
    assert lines[2].startswith(
        "  optional     tensorflow.contrib.cloud  (line 4): imported only under "
        "`except ImportError`, which the program handles; unsupported: module "
        "'tpu_estimator_compat.v1.contrib' has no attribute 'cloud'.")
    # `except ValueError` does not catch the ImportError: the program fails there.
    assert lines[4].startswith("  UNSUPPORTED  tensorflow.contrib.quantize  (line 11): ")
    assert totals["optional"] == {"tensorflow.contrib.cloud"}
    assert totals["unsupported"] == {"tensorflow.contrib.quantize"}
    assert lines[-2] == (
        "4 TensorFlow APIs used: 1 supported, 0 supported with documented differences, "
        "1 unsupported (+1 imported only under `except ImportError`, which the program "
        "handles), 1 not in TensorFlow 1.x (the program's own errors).")
    # Without the unguarded rnn import, the check passes.
    (tmp_path / "input.py").write_text(GUARDED.split("try:\n    import")[0] + GUARDED.split(
        "rnn = None\n")[1])
    assert cli.main(["check", str(tmp_path / "input.py")]) == 0


def test_a_fallback_import_is_unsupported_only_when_the_import_it_replaces_is(tmp_path):
    # imcaspar/gpt2-ml's scripts/demo.py: TF 1.14's module name first, TF 1.13's as fallback.
    fallback = ("try:\n"
                "    from tensorflow.python.util import module_wrapper as deprecation\n"
                "except ImportError:\n"
                "    from tensorflow.python.util import deprecation_wrapper as deprecation\n"
                "deprecation._PER_MODULE_WARNING_LIMIT = 0\n")
    (tmp_path / "demo.py").write_text(fallback)
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path)], out=out, problems_only=True)
    assert totals["unsupported"] == set()
    assert totals["optional"] == {"tensorflow.python.util.deprecation_wrapper"}
    # When the import it replaces is unsupported, the fallback runs: its failure is the run's.
    (tmp_path / "demo.py").write_text(fallback.replace("module_wrapper", "no_such_wrapper"))
    totals = compat_check.check([str(tmp_path)], out=io.StringIO(), problems_only=True)
    assert totals["unsupported"] == {"tensorflow.python.util.deprecation_wrapper"}
    assert totals["optional"] == {"tensorflow.python.util.no_such_wrapper"}


def test_an_unguarded_use_of_a_guarded_module_is_unsupported():
    source = ("try:\n    import tensorflow.contrib.cloud as cloud\nexcept ImportError:\n"
              "    pass\nimport tensorflow.contrib.cloud as cloud\ncloud.BigtableClient\n"
              "try:\n    def later():\n        from tensorflow.contrib import quantize\n"
              "except ImportError:\n    pass\n")
    _, collector = compat_check._collect(source, "<source>")
    assert collector.uses == {"tensorflow.contrib.cloud": 2,
                              "tensorflow.contrib.cloud.BigtableClient": 6,
                              "tensorflow.contrib.quantize": 9}
    # (A function defined in a `try` runs its imports later, unguarded.)
    assert collector.required == {"tensorflow.contrib.cloud",
                                  "tensorflow.contrib.cloud.BigtableClient",
                                  "tensorflow.contrib.quantize"}


@pytest.mark.parametrize("path, status", [
    ("tensorflow.compat.v1.logging.exception", "not-tf1"),  # TF 1.x raised AttributeError too
    ("tensorflow.logging.exception", "not-tf1"),
    ("tensorflow.train.NoSuchOptimizer", "not-tf1"),
    ("tensorflow.no_such_name", "not-tf1"),
    # Below modules that lost TF 1.x names since TensorFlow 2.15, a missing name may have been
    # TF 1.x API: unsupported.
    ("tensorflow.nn.rnn_cell.NoSuchCell", "unsupported"),
    ("tensorflow.layers.no_such_layer", "unsupported"),
    ("tensorflow.contrib.tpu.no_such_name", "unsupported"),
    ("tensorflow.python.ops.math_ops.no_such_op", "unsupported"),
])
def test_names_tensorflow_1_never_had_are_not_unsupported(path, status):
    verdict = compat_check.Resolver().verdict(path)
    assert verdict.api == path
    assert verdict.status == status
    if status == "not-tf1":
        assert verdict.detail.startswith("TensorFlow 1.x did not have it either (the program's "
                                         "own error, raised there too): module ")


CONDITIONAL = '''\
import tensorflow as tf

flags = tf.app.flags
flags.DEFINE_bool("quantize", False, "")
FLAGS = flags.FLAGS


def model_fn(loss):
    if FLAGS.quantize:
        tf.contrib.quantize.create_training_graph()
    else:
        step = tf.train.get_global_step()
    opt = tf.contrib.cloud.X if FLAGS.quantize else tf.train.AdamOptimizer(0.1)
    return opt
'''


def test_unsupported_uses_reached_only_under_a_condition_do_not_fail_the_check(tmp_path):
    # The unseen program of issue 19: contrib.quantize / contrib.cloud behind flags the run
    # never sets ran; the check said it would fail.
    (tmp_path / "model.py").write_text(CONDITIONAL)
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "model.py")], out=out)
    assert totals["conditional"] == {"tensorflow.contrib.quantize", "tensorflow.contrib.cloud"}
    assert not totals["unsupported"]
    assert [line for line in out.getvalue().splitlines() if line.startswith(
        "  conditional  tensorflow.contrib.quantize  (line 10): used only under a condition "
        "(an `if` branch): fails only in a run that takes it; unsupported: module "
        "'tpu_estimator_compat.v1.contrib' has no attribute 'quantize'.")]
    assert "(+2 unsupported used only under a condition, which fail only in a run that takes " \
           "it)" in out.getvalue()
    assert cli.main(["check", str(tmp_path / "model.py")]) == 0
    # The same use outside the `if`, or in the `__main__` block (which always runs), fails it.
    (tmp_path / "model.py").write_text(CONDITIONAL + "tf.contrib.quantize.create_eval_graph()\n")
    assert cli.main(["check", str(tmp_path / "model.py")]) == 1
    (tmp_path / "model.py").write_text(
        CONDITIONAL + 'if __name__ == "__main__":\n    tf.contrib.quantize.create_eval_graph()\n')
    assert cli.main(["check", str(tmp_path / "model.py")]) == 1


def test_contrib_summary_by_its_tf1_paths_agrees_with_its_coverage_line(tmp_path):
    """TF 1.x's `tf.contrib.summary` was the module `tensorflow.contrib.summary.summary`
    (where TF 1.15's inventory lists its names): both paths are served, and the coverage
    line counts the names the per-name verdicts call supported (it said 0/34 while every
    call was supported)."""
    names = sorted(n for names in inventory.load()["tensorflow.contrib.summary.summary"].values()
                   for n in names)
    (tmp_path / "summaries.py").write_text(
        "import tensorflow as tf\nfrom tensorflow.contrib.summary import summary\n"
        + "".join(f"tf.contrib.summary.{name}\nsummary.{name}\n" for name in names))
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path / "summaries.py")], out=out)
    served = {api.rpartition(".")[2] for api in totals["supported"]} - {"summary"}
    unsupported = {api.rpartition(".")[2] for api in totals["unsupported"]}
    assert served | unsupported == set(names) and not served & unsupported
    assert unsupported == {"create_db_writer", "graph", "import_event"}
    assert "tensorflow.contrib.summary.summary" in totals["supported"]
    assert out.getvalue().splitlines()[-1] == (
        "TF 1.15 names served, of the modules used: "
        f"tf.contrib.summary {len(served)}/{len(names)}.")


VENDORED_TPU_ESTIMATOR = """
from tensorflow.contrib.tpu.python.tpu import error_handling
from tensorflow.contrib.tpu.python.tpu import tpu_config
from tensorflow.python.estimator import estimator as estimator_lib
from tensorflow.python.estimator import util as estimator_util


class _InputPipeline(object):
    pass


class _ModelFnWrapper(object):
    pass


class TPUEstimator(estimator_lib.Estimator):
    pass
"""


def test_a_copy_of_tensorflows_tpu_estimator_gets_a_named_fix(tmp_path):
    """xlnet, transformer-xl... ship their own copy of TensorFlow's tpu_estimator.py: its
    internals are UNSUPPORTED, and the note above them says what to do about the file."""
    (tmp_path / "tpu_estimator.py").write_text(VENDORED_TPU_ESTIMATOR)
    # a subclass of the served TPUEstimator with unsupported imports is not a copy
    (tmp_path / "own.py").write_text(
        "import tensorflow as tf\nfrom tensorflow.python.estimator import util\n"
        "class TPUEstimator(tf.contrib.tpu.TPUEstimator):\n    pass\n")
    out = io.StringIO()
    totals = compat_check.check([str(tmp_path)], out=out, problems_only=True)
    copy = str(tmp_path / "tpu_estimator.py")
    assert out.getvalue().splitlines()[:5] == [
        str(tmp_path / "own.py"),
        "  UNSUPPORTED  tensorflow.python.estimator.util  (line 2): module "
        "'tpu_estimator_compat.v1.python.estimator' has no attribute 'util'",
        copy,
        f"  note: {copy} is a copy of TensorFlow's tpu_estimator.py (it defines TPUEstimator, "
        "_InputPipeline, _ModelFnWrapper) on TensorFlow 1.x internals, which TensorFlow 2 "
        "removed: its UNSUPPORTED names below are those internals. Fix: import TensorFlow's "
        "own, which this package serves (`from tensorflow.contrib.tpu.python.tpu import "
        "tpu_estimator`, or `tf.contrib.tpu.TPUEstimator`), where the program imports the "
        "copy, and delete the copy; move what the copy changed into model_fn, hooks or a "
        "TPUEstimator subclass.",
        "  UNSUPPORTED  tensorflow.contrib.tpu.python.tpu.error_handling  (line 2): module "
        "'tpu_estimator_compat.v1.contrib.tpu.python.tpu' has no attribute 'error_handling'"]
    assert totals["unsupported"] == {"tensorflow.python.estimator.util",
                                     "tensorflow.contrib.tpu.python.tpu.error_handling"}
    # the fix's import is served
    assert compat_check.Resolver().verdict(
        "tensorflow.contrib.tpu.python.tpu.tpu_estimator").status == "supported"
