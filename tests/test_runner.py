"""`python -m tpu_estimator_compat run`: unmodified TF1 programs, with the program's own imports
of tensorflow / tensorflow_estimator served by `tpu_estimator_compat.v1` and libraries' imports
by TensorFlow 2. Two subprocesses (a script, a `-m` package), each checking many facts."""
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tpu_estimator_compat import __main__ as cli
from tpu_estimator_compat.cli import runner
from tpu_estimator_compat.cli import unused_flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A third-party library (in a site-packages directory): must get TensorFlow 2.
THIRD_PARTY = """
import tensorflow as tf
import tensorflow.compat.v1 as tf_compat_v1
"""

HELPER = """
import tensorflow.contrib.slim as slim
from tensorflow.contrib import layers


def net(images, is_training):
    with slim.arg_scope([slim.conv2d, layers.fully_connected],
                        weights_regularizer=slim.l2_regularizer(1e-4)):
        out = slim.conv2d(images, 4, [3, 3], normalizer_fn=slim.batch_norm,
                          normalizer_params={"is_training": is_training})
        return layers.fully_connected(slim.flatten(out), 2, activation_fn=None)
"""

SCRIPT = """
import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as tf_v1
from tensorflow.contrib import tpu as contrib_tpu
from tensorflow.contrib.tpu.python.tpu import tpu_config
from tensorflow.python.estimator import estimator as estimator_lib
from tensorflow_estimator.python.estimator.tpu import tpu_estimator

import helper
import thirdparty

flags = tf.flags
flags.DEFINE_integer("train_steps", 2, "steps")
flags.DEFINE_bool("use_tpu", False, "TPU semantics")
flags.DEFINE_string("model_dir", None, "where")
flags.DEFINE_integer("exit_status", 0, "returned by main")
FLAGS = flags.FLAGS

IMAGES = np.random.RandomState(0).rand(64, 6, 6, 1).astype(np.float32)
LABELS = (IMAGES.mean(axis=(1, 2, 3)) > 0.5).astype(np.int32)


def input_fn(params):
    data = tf.data.Dataset.from_tensor_slices((IMAGES, LABELS))
    return data.repeat().batch(params["batch_size"], drop_remainder=True)


SHARD_BATCH_SIZES = []


def model_fn(features, labels, mode, params):
    SHARD_BATCH_SIZES.append(params["batch_size"])
    logits = helper.net(features, mode == tf.estimator.ModeKeys.TRAIN)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = contrib_tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tpu_estimator.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(argv):
    config = tpu_config.RunConfig(
        model_dir=FLAGS.model_dir, tpu_config=tpu_config.TPUConfig(iterations_per_loop=2))
    estimator = contrib_tpu.TPUEstimator(model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
                                         train_batch_size=16)
    estimator.train(input_fn, max_steps=FLAGS.train_steps)
    report = {
        "argv": sys.argv, "absl_argv": argv, "path0": sys.path[0],
        "main_file": sys.modules["__main__"].__file__,
        "tf": tf.__name__, "tf_v1_is_tf": tf_v1 is tf,
        "estimator": estimator_lib.Estimator.__module__,
        "tpu_estimator": tpu_estimator.__name__,
        "slim": helper.slim.arg_scope.__module__,
        "third_party_tf": thirdparty.tf.__name__,
        "third_party_tf_v1": thirdparty.tf_compat_v1.__name__,
        "sys_modules_tensorflow": sys.modules["tensorflow"].__name__,
        "shard_batch_sizes": sorted(set(SHARD_BATCH_SIZES)),
        "variables": sorted(name for name, _ in tf.train.list_variables(FLAGS.model_dir)),
        "global_step": int(tf.train.load_variable(FLAGS.model_dir, "global_step")),
        "moving_mean_moved": bool(np.abs(tf.train.load_variable(
            FLAGS.model_dir, "Conv/BatchNorm/moving_mean")).sum() > 0),
    }
    print("REPORT " + json.dumps(report))
    return FLAGS.exit_status


if __name__ == "__main__":
    tf.app.run()
"""

MODULE = """
import sys

import numpy as np
import tensorflow_estimator as tf_estimator
from tensorflow.contrib.training import HParams
import tensorflow.compat.v1 as tf

import kept

tf.disable_v2_behavior()  # TF 1.15 style: graph mode for the program's own code
X = np.arange(32, dtype=np.float32).reshape(16, 2) / 16.0


def input_fn(params):
    data = tf.data.Dataset.from_tensor_slices((X, X.sum(1, keepdims=True)))
    return data.repeat().batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    predictions = tf.layers.dense(features, 1, kernel_initializer=tf.ones_initializer())
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.tpu.TPUEstimatorSpec(mode, predictions={"y": predictions})
    loss = tf.losses.mean_squared_error(labels, predictions)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_global_step())
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


hparams = HParams(learning_rate=0.1, layers=[4, 2]).parse(sys.argv[1])
estimator = tf.estimator.tpu.TPUEstimator(
    model_fn=model_fn, use_tpu=False, train_batch_size=8, eval_batch_size=8,
    predict_batch_size=8, config=tf.estimator.tpu.RunConfig(model_dir=sys.argv[2]))
estimator.train(input_fn, max_steps=3)
predictions = [p["y"].tolist() for p in estimator.predict(
    lambda params: tf.data.Dataset.from_tensor_slices(X[:2]).batch(2))]
print("REPORT", {"argv0": sys.argv[0], "argv": sys.argv[1:], "path0": sys.path[0],
                 "name": __name__, "estimator": tf_estimator.estimator.Estimator.__name__,
                 "tf": tf.__name__, "kept": kept.tf.__name__, "hparams": hparams.values(),
                 "program_eager": tf.executing_eagerly(),
                 "global_step": int(estimator.evaluate(input_fn, steps=1)["global_step"]),
                 "predictions": len(predictions)})
raise ValueError("boom from the program")
"""


def _report(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("REPORT ")]
    assert len(lines) == 1, stdout
    return lines[0][len("REPORT "):]


def _run(args, cwd, env_extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(env_extra["pythonpath"]),
               TF_CPP_MIN_LOG_LEVEL="2")
    env.update(env_extra.get("env", {}))
    return subprocess.run([sys.executable, "-m", "tpu_estimator_compat", "run", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


@pytest.mark.slow  # starts processes
def test_script_runs_unmodified_on_the_simulated_tpu_with_flags_and_exit_status(tmp_path):
    program, libs = tmp_path / "program", tmp_path / "venv" / "lib" / "site-packages"
    _write(str(program / "train.py"), SCRIPT)
    _write(str(program / "helper.py"), HELPER)
    _write(str(libs / "thirdparty.py"), THIRD_PARTY)
    model_dir = tmp_path / "model"
    result = _run([str(program / "train.py"), "--use_tpu", "--train_steps=4",
                   f"--model_dir={model_dir}", "--exit_status=3", "--save_sumary_steps=1"],
                  cwd=str(tmp_path), env_extra={
                      "pythonpath": [REPO, str(libs)],
                      "env": {"TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES": "8"}})
    assert result.returncode == 3, result.stderr[-3000:]
    report = json.loads(_report(result.stdout))
    argv = [str(program / "train.py"), "--use_tpu", "--train_steps=4",
            f"--model_dir={model_dir}", "--exit_status=3", "--save_sumary_steps=1"]
    assert report["argv"] == argv
    # absl removed the flags it parsed; tf.app.run passed the unknown one on, as TensorFlow
    assert report["absl_argv"] == [argv[0], "--save_sumary_steps=1"]
    # ...and the runner named it, once (the program reads FLAGS after tf.app.run parsed)
    warnings = [line for line in result.stderr.splitlines()
                if line.startswith(unused_flags.PREFIX)]
    assert warnings == [unused_flags.PREFIX + "no flag of the program consumed "
                        "--save_sumary_steps=1; tf.app.run passes unknown flags on to main, "
                        "which ignores them. Check the spelling (`--helpfull` lists the "
                        "program's flags)."]
    assert report["path0"] == str(program)
    assert report["main_file"] == str(program / "train.py")
    assert report["tf"] == "tpu_estimator_compat.v1" and report["tf_v1_is_tf"]
    assert report["estimator"] == "tpu_estimator_compat.estimator"
    assert report["tpu_estimator"] == "tpu_estimator_compat.v1.python.estimator.tpu.tpu_estimator"
    assert report["slim"] == "tf_slim.ops.arg_scope"
    assert report["third_party_tf"] == "tensorflow"
    assert report["third_party_tf_v1"].startswith("tensorflow.")  # TF's own compat.v1
    assert report["sys_modules_tensorflow"] == "tensorflow"
    assert report["global_step"] == 4
    assert report["variables"] == [
        "Conv/BatchNorm/beta", "Conv/BatchNorm/moving_mean", "Conv/BatchNorm/moving_variance",
        "Conv/weights", "fully_connected/biases", "fully_connected/weights", "global_step"]
    assert report["moving_mean_moved"]
    assert report["shard_batch_sizes"] == [2]  # TPU semantics: 16 over 8 simulated cores


@pytest.mark.slow  # starts processes
def test_module_with_disable_v2_behavior_runs_with_dash_m_and_fails_like_python(tmp_path):
    _write(str(tmp_path / "pkg" / "__init__.py"), "")
    _write(str(tmp_path / "pkg" / "main.py"), MODULE)
    _write(str(tmp_path / "lib" / "kept.py"), THIRD_PARTY)
    result = _run(["--keep-tf2", str(tmp_path / "lib"), "-m", "pkg.main",
                   "learning_rate=0.5,layers=[8,8,2]", str(tmp_path / "model")],
                  cwd=str(tmp_path), env_extra={"pythonpath": [REPO, str(tmp_path / "lib")]})
    assert result.returncode == 1
    assert result.stderr.rstrip().endswith("ValueError: boom from the program")
    assert unused_flags.PREFIX not in result.stderr  # its arguments are not absl's
    report = eval(_report(result.stdout))  # a dict literal printed by the program
    assert report == {
        "argv0": str(tmp_path / "pkg" / "main.py"),
        "argv": ["learning_rate=0.5,layers=[8,8,2]", str(tmp_path / "model")],
        "path0": str(tmp_path), "name": "__main__", "estimator": "Estimator",
        "tf": "tpu_estimator_compat.v1", "kept": "tensorflow",
        "hparams": {"learning_rate": 0.5, "layers": [8, 8, 2]},
        # disable_v2_behavior(): the program stays in graph mode, the estimator still runs
        "program_eager": False, "global_step": 3, "predictions": 2}


def test_import_redirect_decides_by_the_importing_file(tmp_path):
    redirect = runner.ImportRedirect([str(tmp_path / "kept")])
    assert redirect.is_program_file(str(tmp_path / "prog" / "a.py"))
    assert not redirect.is_program_file(str(tmp_path / "kept" / "b.py"))
    assert not redirect.is_program_file(str(tmp_path / "x" / "dist-packages" / "c.py"))
    assert not redirect.is_program_file(runner.__file__)  # this package imports real TF
    assert not redirect.is_program_file(os.__file__)  # the standard library
    assert runner.redirected_name("tensorflow") == "tpu_estimator_compat.v1"
    assert (runner.redirected_name("tensorflow_estimator.python.estimator.tpu.tpu_estimator")
            == "tpu_estimator_compat.v1.python.estimator.tpu.tpu_estimator")


# TF1-era libraries in site-packages (gin.tf's pattern): they subclass tf.estimator names at import.
OLD_LIBRARY = """
import tensorflow as tf
from tensorflow.contrib import tpu


class Hook(tf.estimator.SessionRunHook):
    pass
"""

# tensorflow_hub before 0.16 (TF1 Hub format), installed: served the v1 namespace by default.
OLD_HUB = """
from tensorflow.compat.v1 import estimator as tf_estimator


class LatestModuleExporter(tf_estimator.Exporter):
    pass
"""

V1_FOR_PROGRAM = """
import importlib.util
import sys
import tensorflow_hub
import oldlib.hooks
import plainlib
report = {"oldlib": oldlib.hooks.tf.__name__, "oldlib_tpu": oldlib.hooks.tpu.__name__,
          "hub_exporter_base": tensorflow_hub.LatestModuleExporter.__mro__[1].__name__,
          "oldlib_hook_base": oldlib.hooks.Hook.__mro__[1].__name__,
          "plainlib": plainlib.tf.__name__}
if importlib.util.find_spec("gin"):
    import gin.tf
    report["gin_hook_base"] = gin.tf.GinConfigSaverHook.__mro__[1].__name__
if importlib.util.find_spec("tensorflow_gan"):  # TF-GAN 2.1: no import on TF 2.21 without it
    import tensorflow_gan
    report["tfgan_base"] = tensorflow_gan.estimator.TPUGANEstimator.__mro__[1].__name__
print("REPORT", report)
"""


@pytest.mark.slow  # starts processes
def test_v1_for_serves_the_namespace_to_named_libraries_and_gin_tf(tmp_path):
    libs = tmp_path / "lib" / "python3" / "site-packages"
    _write(str(libs / "oldlib" / "__init__.py"), "")
    _write(str(libs / "oldlib" / "hooks.py"), OLD_LIBRARY)
    _write(str(libs / "plainlib.py"), THIRD_PARTY)
    _write_distribution(libs, "tensorflow-hub", "0.15.0")
    _write(str(libs / "tensorflow_hub" / "__init__.py"), OLD_HUB)
    _write(str(tmp_path / "prog.py"), V1_FOR_PROGRAM)
    result = _run(["--v1-for", "oldlib", str(tmp_path / "prog.py")], cwd=str(tmp_path),
                  env_extra={"pythonpath": [REPO, str(libs)]})
    assert result.returncode == 0, result.stderr[-3000:]
    report = eval(_report(result.stdout))  # a dict literal printed by the program
    installed = {"gin_hook_base": "SessionRunHook", "tfgan_base": "TPUEstimator"}
    installed = {key: base for key, base in installed.items() if key in report}
    assert report == {"oldlib": "tpu_estimator_compat.v1",
                      "oldlib_tpu": "tpu_estimator_compat.v1.contrib.tpu",
                      "oldlib_hook_base": "SessionRunHook", "plainlib": "tensorflow",
                      "hub_exporter_base": "Exporter", **installed}
    without = _run([str(tmp_path / "prog.py")], cwd=str(tmp_path),
                   env_extra={"pythonpath": [REPO, str(libs)]})
    assert without.returncode == 1
    assert without.stderr.rstrip().endswith(
        "ModuleNotFoundError: No module named 'tensorflow.contrib'")


def _write_distribution(site_dir, name, version):
    """An installed distribution's metadata (what `importlib.metadata.version` reads)."""
    _write(str(site_dir / f"{name.replace('-', '_')}-{version}.dist-info" / "METADATA"),
           f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.parametrize("version, served", [("0.15.0", True), ("0.12.0", True),
                                             ("0.16.0", False), ("0.16.1", False)])
def test_tensorflow_hub_before_0_16_is_served_the_v1_namespace(
        tmp_path, monkeypatch, version, served):
    _write_distribution(tmp_path, "tensorflow-hub", version)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert runner.v1_libraries() == ("gin.tf", "tensorflow_gan") + (
        ("tensorflow_hub",) if served else ())


def test_a_library_not_installed_is_not_served(monkeypatch):
    monkeypatch.setattr(runner, "_V1_LIBRARIES_BEFORE", (("nolib", "no-such-dist", (9,)),))
    assert runner.v1_libraries() == runner.V1_LIBRARIES


def test_v1_for_matches_the_module_and_its_submodules_only():
    redirect = runner.ImportRedirect(v1_for=runner.V1_LIBRARIES + ("oldlib",))
    assert redirect.serves_v1_to("gin.tf") and redirect.serves_v1_to("gin.tf.utils")
    assert redirect.serves_v1_to("oldlib") and redirect.serves_v1_to("oldlib.hooks")
    assert redirect.serves_v1_to("tensorflow_gan.python.estimator.tpu_gan_estimator")
    assert not redirect.serves_v1_to("gin") and not redirect.serves_v1_to("gin.torch")
    assert not redirect.serves_v1_to("oldlibrary") and not redirect.serves_v1_to("")


@pytest.mark.parametrize("argv, message", [
    (["run"], "run: error: the following arguments are required: SCRIPT.py or -m MODULE"),
    (["run", "-m"], "run: error: argument -m: expected one argument"),
    (["run", "--keep-tf2"], "run: error: argument --keep-tf2: expected one argument"),
    (["run", "--keep-tf2", "lib", "--v1-for"],
     "run: error: argument --v1-for: expected one argument"),
    (["run", "--frobnicate", "train.py"], "run: error: unrecognized arguments: --frobnicate"),
    (["run", "--seed", "x", "train.py"], "run: error: argument --seed: invalid int value: 'x'"),
    (["check"], "check: error: the following arguments are required: PATH"),
    (["frobnicate"], "error: argument COMMAND: invalid choice: 'frobnicate' "
                     "(choose from 'run', 'check')"),
    ([], "error: the following arguments are required: COMMAND"),
])
def test_command_line_usage_errors(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and err.endswith(f"{message}\n"), err


@pytest.mark.parametrize("argv, expected", [
    (["--help"], ["usage: python -m tpu_estimator_compat [-h] [--version] COMMAND ...",
                  "    run       run a TensorFlow 1 program unmodified",
                  "    check     list the TF1 APIs a codebase uses"]),
    (["run", "--help"], ["usage: python -m tpu_estimator_compat run [--keep-tf2 DIR]... "
                         "[--v1-for MODULE]... [--seed N] SCRIPT.py [ARGS...]",
                         "  --seed N         every RunConfig the program builds without a "
                         "tf_random_seed gets N",
                         "  --keep-tf2 DIR   files under DIR count as libraries: they keep "
                         "TensorFlow 2"]),
    (["run", "--keep-tf2", "lib", "-h"], ["  -m MODULE        run library module MODULE as a "
                                          "script, as `python -m` does"]),
    (["check", "--help"], ["  --problems-only  print only the problems (UNSUPPORTED APIs, "
                           "files that do not"]),
])
def test_help_of_the_commands(argv, expected, capsys):
    assert cli.main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    for line in expected:
        assert " ".join(line.split()) in text, text


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    import configparser  # noqa: PLC0415
    import tpu_estimator_compat  # noqa: PLC0415
    assert capsys.readouterr().out == f"tpu-estimator-compat {tpu_estimator_compat.__version__}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", tpu_estimator_compat.__version__)
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    assert config["metadata"]["version"] == "attr: tpu_estimator_compat.__version__"


def test_usage_names_the_console_script_when_run_as_it(tmp_path):
    script = tmp_path / "bin" / "tpu-estimator-compat"
    script.parent.mkdir()
    script.write_text("import sys\nfrom tpu_estimator_compat.__main__ import main\n"
                      "sys.exit(main())\n")
    result = subprocess.run([sys.executable, str(script), "run", "--help"], capture_output=True,
                            text=True, check=False, env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: tpu-estimator-compat run [--keep-tf2 DIR]...")
    assert cli.program_name("/usr/bin/python3") == "python -m tpu_estimator_compat"


ECHO = """
import json, sys
print("ARGV", json.dumps(sys.argv))
"""


@pytest.mark.parametrize("ours, program", [
    (["{dir}/echo.py"], ["--help"]),
    (["--keep-tf2", "lib", "{dir}/echo.py"], ["--keep-tf2", "x", "-m", "y", "--version", "-h"]),
    (["-m", "echo"], ["--help", "--v1-for", "z"]),
])
def test_the_program_gets_its_arguments_untouched(tmp_path, ours, program):
    (tmp_path / "echo.py").write_text(ECHO)
    ours = [arg.format(dir=tmp_path) for arg in ours]
    result = subprocess.run(
        [sys.executable, "-m", "tpu_estimator_compat", "run", *ours, *program],
        capture_output=True, text=True, check=False, cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout.split("ARGV ", 1)[1])
    assert argv[1:] == program
    assert argv[0] == str(tmp_path / "echo.py")


def test_missing_script_fails_like_python(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "missing.py"), "--flag"]) == 2  # python's status
    assert capsys.readouterr().err == (f"python -m tpu_estimator_compat: can't open file "
                                       f"'{tmp_path / 'missing.py'}': no such file or directory\n")


def test_console_script_is_declared():
    import configparser  # noqa: PLC0415
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    scripts = config["options.entry_points"]["console_scripts"].split("=")
    assert [part.strip() for part in scripts] == ["tpu-estimator-compat",
                                                  "tpu_estimator_compat.__main__:main"]
    metadata = config["metadata"]
    for field in ("author", "license", "description", "keywords"):
        assert metadata[field].strip(), field
    classifiers = metadata["classifiers"].split()
    assert "Apache" in classifiers and "Intended" in classifiers, classifiers
    assert config["options"]["python_requires"].startswith(">=3.")


def test_inspect_getargspec_exists_while_a_legacy_program_runs(tmp_path, monkeypatch):
    """Python 3.11 removed `inspect.getargspec`, which TF1-era code (TF-GAN 2.1, programs
    reading their functions' arguments) calls; Python 3.10's answers."""
    script = tmp_path / "argspec_program.py"
    script.write_text(
        "import inspect, json, sys\n"
        "def f(a, b=2, *args, **kwargs): pass\n"
        "def g(a, *, b): pass\n"
        "spec = inspect.getargspec(f)\n"
        "try:\n"
        "    inspect.getargspec(g)\n"
        "    error = None\n"
        "except ValueError as e:\n"
        "    error = str(e)\n"
        "json.dump([list(spec), spec.keywords, error], open(sys.argv[1], 'w'))\n")
    had_it = hasattr(inspect, "getargspec")
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the runner sets the program's
    monkeypatch.setattr(sys, "path", list(sys.path))
    runner.run([str(script), str(tmp_path / "out.json")])
    spec, keywords, error = json.loads((tmp_path / "out.json").read_text())
    assert spec == [["a", "b"], "args", "kwargs", [2]] and keywords == "kwargs"
    assert error == ("Function has keyword-only parameters or annotations, use "
                     "inspect.signature() API which can support them")
    assert hasattr(inspect, "getargspec") == had_it  # the process's Python as it was


def test_a_program_importing_tf_slim_gets_it_repaired_for_tensorflow_2_21(tmp_path, monkeypatch):
    """BLEURT's metrics (`from tf_slim import metrics`): tf-slim's streaming_concat reads
    `control_flow_ops.cond`, which TensorFlow 2.21 moved (AttributeError before); served as
    `tf.contrib.slim` is, it concatenates the batches it saw."""
    script = tmp_path / "slim_program.py"
    script.write_text(
        "import json, sys\n"
        "import tensorflow.compat.v1 as tf\n"
        "from tf_slim import metrics\n"
        "with tf.Graph().as_default():\n"
        "    values = tf.placeholder(tf.float32, [None])\n"
        "    concat, update = metrics.streaming_concat(values)\n"
        "    with tf.Session() as sess:\n"
        "        sess.run(tf.local_variables_initializer())\n"
        "        for batch in ([1.0, 2.0], [3.0], [4.0, 5.0, 6.0]):\n"
        "            sess.run(update, {values: batch})\n"
        "        json.dump(sess.run(concat).tolist(), open(sys.argv[1], 'w'))\n")
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    runner.run([str(script), str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text()) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_collections_and_numpy_aliases_exist_while_a_legacy_program_runs(tmp_path, monkeypatch):
    """Python 3.10 removed `collections.Mapping`... (gin-config 0.4 uses them), NumPy 1.24
    and 2.0 `np.float_`, `np.int`... (TF1-era programs): restored as the types they named,
    for the program's run only."""
    import collections  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    script = tmp_path / "aliases_program.py"
    script.write_text(
        "import collections, collections.abc, json, sys\n"
        "import numpy as np\n"
        "json.dump([collections.Mapping is collections.abc.Mapping,\n"
        "           issubclass(dict, collections.MutableMapping),\n"
        "           np.float_ is np.float64, np.int is int, np.unicode_ is np.str_,\n"
        "           np.zeros(2, dtype=np.float).dtype.name, np.bool is np.bool_],\n"
        "          open(sys.argv[1], 'w'))\n")
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    runner.run([str(script), str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text()) == [True] * 5 + ["float64", True]
    assert not hasattr(collections, "Mapping") and "float_" not in vars(np)  # as it was


def test_flags_no_absl_flag_consumed_are_named_once_with_the_flag_they_resemble(
        monkeypatch, capsys):
    """tf.app.run parses with known_only=True: a misspelt flag reaches main's argv and is
    ignored (TensorFlow's tolerance); under the runner it is named, once."""
    from absl import flags  # noqa: PLC0415
    values = flags.FlagValues()
    flags.DEFINE_integer("train_steps", 1, "steps", flag_values=values)
    flags.DEFINE_bool("use_tpu", False, "TPU", flag_values=values)
    argv = ["train.py", "--use_tpu", "--trian_steps=5", "data.txt", "-q", "--", "--after"]
    monkeypatch.setattr(sys, "argv", argv)
    original = flags.FlagValues.__call__
    with unused_flags.warned(values):
        unparsed = values(argv, known_only=True)  # what tf.app.run's parser calls
        assert values(argv, known_only=True) == unparsed  # parsed again: said once only
        assert values(["made-up", "--zzz"], known_only=True) == ["made-up", "--zzz"]
        other = flags.FlagValues()
        other(argv, known_only=True)  # another FlagValues: not the program's flags
    assert unparsed == ["train.py", "--trian_steps=5", "data.txt", "-q", "--", "--after"]
    assert values.train_steps == 1 and values.use_tpu
    assert capsys.readouterr().err == (
        "tpu-estimator-compat run: warning: no flag of the program consumed "
        "--trian_steps=5 (did you mean --train_steps?), -q; tf.app.run passes unknown flags "
        "on to main, which ignores them. Check the spelling (`--helpfull` lists the "
        "program's flags).\n")
    assert flags.FlagValues.__call__ is original
    with unused_flags.warned(values), pytest.raises(flags.UnrecognizedFlagError):
        values(argv)  # absl.app.run's strict parse raises on its own: nothing to add
    assert capsys.readouterr().err == ""


def test_seed_is_the_tf_random_seed_of_run_configs_the_program_builds_without_one(
        tmp_path, monkeypatch):
    """`run --seed N`: a program that sets no seed (BERT's RunConfig) runs reproducibly; a
    seed the program sets wins; after the run RunConfig's default is None again."""
    from tpu_estimator_compat import v1 as tf  # noqa: PLC0415
    script = tmp_path / "seed_program.py"
    script.write_text(
        "import json, sys\n"
        "import tensorflow as tf\n"
        "configs = [tf.contrib.tpu.RunConfig(), tf.estimator.RunConfig(tf_random_seed=3),\n"
        "           tf.contrib.tpu.RunConfig(tf_random_seed=None)]\n"
        "json.dump([c.tf_random_seed for c in configs], open(sys.argv[1], 'w'))\n")
    calls = []
    monkeypatch.setattr(runner, "run", lambda *args: calls.append(args))
    assert cli.main(["run", "--seed", "7", str(script), "out.json"]) == 0
    assert calls == [([str(script), "out.json"], [], [], 7)]
    monkeypatch.undo()
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    runner.run([str(script), str(tmp_path / "out.json")], seed=7)
    assert json.loads((tmp_path / "out.json").read_text()) == [7, 3, 7]
    assert tf.estimator.RunConfig().tf_random_seed is None


# A TensorFlow 2.x-era program: eager code, tf.function, TF2 summaries, Keras 2 layers in an
# Estimator's model_fn, TF1 APIs reached through tf.compat.v1.
TF2_PROGRAM = '''
import json
import sys

import numpy as np
import tensorflow.compat.v1 as tf1
import tensorflow as tf
from tensorflow.keras import layers

FEATURES = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
LABELS = FEATURES[:, :1] * 0.5 - FEATURES[:, 1:] * 0.25


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, LABELS)).repeat().batch(8)


def model_fn(features, labels, mode):
    model = tf.keras.Sequential([
        layers.Dense(3, activation="relu",
                     kernel_initializer=tf.keras.initializers.Constant(
                         [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]),
                     bias_initializer=tf.keras.initializers.Constant(0.1)),
        layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(0.5))])
    loss = tf.reduce_mean(tf.keras.losses.mean_squared_error(labels, model(features["x"])))
    train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir):
    with tf.summary.create_file_writer(model_dir + "/eager").as_default():
        written = bool(tf.summary.scalar("value", 1.5, step=7))  # TF2's signature
    kept = float(tf.reduce_mean(tf.cast(tf.nn.dropout(tf.ones([10000]), 0.9, seed=1) > 0,
                                        tf.float32)))  # TF2: 0.9 is the rate
    estimator = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    estimator.train(input_fn, max_steps=3)
    return {"tf": tf.__name__, "keras": tf.keras.__name__, "layers": layers.__name__,
            "eager": tf.executing_eagerly(),
            "doubled": float(tf.function(lambda x: 2 * x)(tf.constant(1.5))),
            "summary_written": written, "dropout_kept_about_0.1": abs(kept - 0.1) < 0.02,
            "weights": {name: estimator.get_variable_value(name).tolist()
                        for name in estimator.get_variable_names()}}


if __name__ == "__main__":
    print("REPORT", json.dumps(main(sys.argv[1])))
'''

# TF2_PROGRAM run unmodified by the original (TensorFlow 2.15 + tensorflow-estimator 2.15),
# where `tensorflow` and `tensorflow.keras` had those names.
ORIGINAL_TF2_PROGRAM_REPORT = {
    "eager": True, "doubled": 3.0, "summary_written": True, "dropout_kept_about_0.1": True,
    "weights": {
        "global_step": 3,
        "sequential/dense/bias": [0.06796687096357346, 0.061428170651197433,
                                  0.06479029357433319],
        "sequential/dense/kernel": [[0.08650804311037064, -0.21051737666130066,
                                     0.3252509832382202],
                                    [0.38223695755004883, 0.4843396842479706,
                                     -0.5794436931610107]],
        "sequential/dense_1/bias": [-0.1265038549900055],
        "sequential/dense_1/kernel": [[0.4773178994655609], [0.4817834198474884],
                                      [0.48478978872299194]]}}


def _assert_original_tf2_report(report):
    weights = report.pop("weights")
    expected = dict(ORIGINAL_TF2_PROGRAM_REPORT)
    expected_weights = expected.pop("weights")
    assert report == {"tf": "tpu_estimator_compat.v2",
                      "keras": "tpu_estimator_compat.v2.keras",  # tf_keras, our estimator
                      "layers": "tf_keras.layers", **expected}
    assert sorted(weights) == sorted(expected_weights)
    for name, value in expected_weights.items():
        np.testing.assert_allclose(weights[name], value, rtol=1e-6, err_msg=name)


@pytest.mark.slow  # starts a process
def test_a_tf2_era_program_runs_as_tensorflow_2_with_the_estimator(tmp_path):
    """`run` gives a TF2-era file TensorFlow 2 (eager, TF2 summaries and dropout, Keras 2
    as TensorFlow 2.15's tf.keras) with tf.estimator served, and says so; the estimator
    trains to the original's weights."""
    _write(str(tmp_path / "tf2_program.py"), TF2_PROGRAM)
    result = _run([str(tmp_path / "tf2_program.py"), str(tmp_path / "model")],
                  cwd=str(tmp_path), env_extra={"pythonpath": [REPO]})
    assert result.returncode == 0, result.stderr[-3000:]
    assert (f"tpu_estimator_compat run: {tmp_path / 'tf2_program.py'} is TensorFlow 2 code "
            "(it uses tensorflow.compat.v1, tensorflow.summary.create_file_writer and no "
            "TF1-only name): its `import tensorflow` gets TensorFlow 2 with tf.estimator "
            "(tpu_estimator_compat.v2)") in result.stderr
    _assert_original_tf2_report(json.loads(_report(result.stdout)))


def test_a_tf2_era_program_with_its_imports_changed_runs_in_process(tmp_path):
    """The same program with its imports changed (`tpu_estimator_compat.v2` as tf, the v1
    namespace as tf1, tf_keras's `layers`): the original's numbers."""
    import runpy  # noqa: PLC0415

    source = (TF2_PROGRAM.replace("import tensorflow as tf\n",
                                  "import tpu_estimator_compat.v2 as tf\n")
              .replace("import tensorflow.compat.v1 as tf1\n",
                       "import tpu_estimator_compat.v1 as tf1\n")
              .replace("from tensorflow.keras import layers", "from tf_keras import layers"))
    _write(str(tmp_path / "changed.py"), source)
    program = runpy.run_path(str(tmp_path / "changed.py"))
    _assert_original_tf2_report(program["main"](str(tmp_path / "model")))


@pytest.mark.parametrize("source, tf2", [
    # TF2 code: tf.compat.v1 reached from `import tensorflow`, TF2-only names
    ("import tensorflow as tf\ntf.compat.v1.train.get_or_create_global_step()\n", True),
    ("import tensorflow\nds = tensorflow.data.AUTOTUNE\n", True),
    ("import tensorflow as tf\nimport tensorflow.compat.v1 as tf1\ntf1.estimator.tpu\n", True),
    # TF1 code: any TF1-only name wins; `import tensorflow.compat.v1 as tf` is TF1's way
    ("import tensorflow as tf\ntf.compat.v1.train.get_global_step()\ntf.layers.dense\n",
     False),
    ("import tensorflow.compat.v1 as tf\ntf.train.get_global_step()\n", False),
    ("import tensorflow as tf\ntf.estimator.Estimator\ntf.reduce_sum\n", False),  # no sign
    ("import tensorflow as tf\ntf.contrib.tpu.TPUEstimator\ntf.data.AUTOTUNE\n", False),
    ("import tensorflow as tf\ntf.train.AdamOptimizer(0.1)\ntf.compat.v1.logging\n", False),
    ("def broken(:\n", False),
])
def test_the_runner_tells_tf2_files_from_tf1_files(source, tf2):
    from tpu_estimator_compat.cli import program_era  # noqa: PLC0415

    assert program_era.era_of_source(source).tf2 is tf2


def test_a_tf2_file_imports_tensorflow_2_module_paths():
    assert runner.tf2_redirected_name("tensorflow") == "tpu_estimator_compat.v2"
    assert runner.tf2_redirected_name("tensorflow.compat.v1") == "tpu_estimator_compat.v1"
    assert (runner.tf2_redirected_name("tensorflow.compat.v1.estimator.tpu")
            == "tpu_estimator_compat.v1.estimator.tpu")
    assert runner.tf2_redirected_name("tensorflow.compat.v2") == "tpu_estimator_compat.v2"
    assert (runner.tf2_redirected_name("tensorflow.estimator")
            == "tpu_estimator_compat.v2.estimator")
    assert (runner.tf2_redirected_name("tensorflow.estimator.export")
            == "tpu_estimator_compat.v1.estimator.export")
    assert runner.tf2_redirected_name("tensorflow.keras.layers") == "tf_keras.layers"
    # tf.keras is tf_keras with this package's tf.keras.estimator.model_to_estimator.
    assert runner.tf2_redirected_name("tensorflow.keras") == "tpu_estimator_compat.v2.keras"
    assert (runner.tf2_redirected_name("tensorflow.keras.estimator")
            == "tpu_estimator_compat.v2.keras_estimator")
    assert runner.tf2_redirected_name("tensorflow.python.ops") == "tensorflow.python.ops"
    assert runner.tf2_redirected_name("tensorflow.data") == "tensorflow.data"


def test_an_import_failing_in_a_copy_of_tpu_estimator_names_the_fix(tmp_path, monkeypatch):
    """transformer-xl's tf/train.py imports its own copy of TF 1.x's tpu_estimator.py, whose
    first import of a TensorFlow internal fails: the ImportError names the fix `check` names."""
    copy = tmp_path / "tpu_estimator.py"
    copy.write_text("from tensorflow.contrib.tpu.python.tpu import error_handling\n"
                    "class TPUEstimator(object):\n    pass\n"
                    "class _ModelFnWrapper(object):\n    pass\n")
    (tmp_path / "own.py").write_text("from tensorflow.contrib.tpu.python.tpu import nothing\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    for module in ("tpu_estimator", "own"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    (tmp_path / "train.py").write_text("import tpu_estimator\n")
    with pytest.raises(ImportError) as raised:
        runner.run([str(tmp_path / "train.py")])
    first, note = str(raised.value).split("\n")
    assert first == ("cannot import name 'error_handling' from "
                     "'tpu_estimator_compat.v1.contrib.tpu.python.tpu' (unknown location)")
    assert note == (
        f"note: {copy} is a copy of TensorFlow's tpu_estimator.py (it defines TPUEstimator, "
        "_ModelFnWrapper) on TensorFlow 1.x internals, which TensorFlow 2 removed: this import "
        "is one of those internals. Fix: import TensorFlow's own, which this package serves "
        "(`from tensorflow.contrib.tpu.python.tpu import tpu_estimator`, or "
        "`tf.contrib.tpu.TPUEstimator`), where the program imports the copy, and delete the "
        "copy; move what the copy changed into model_fn, hooks or a TPUEstimator subclass.")
    # another file's failing import stays as Python raised it
    (tmp_path / "train.py").write_text("import own\n")
    with pytest.raises(ImportError) as raised:
        runner.run([str(tmp_path / "train.py")])
    assert str(raised.value) == ("cannot import name 'nothing' from "
                                 "'tpu_estimator_compat.v1.contrib.tpu.python.tpu' "
                                 "(unknown location)")
