"""The corpus script's mechanical import rewriting (tests/real_programs/rewrite.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "real_programs"))

import notebook  # noqa: E402
import rewrite  # noqa: E402


def test_tf1_and_contrib_imports_point_at_the_v1_namespace():
    source = ("import tensorflow as tf\n"
              "import tensorflow.compat.v1 as tf\n"
              "from tensorflow.compat.v1 import estimator as tf_estimator\n"
              "from tensorflow.contrib import tpu as contrib_tpu\n"
              "from tensorflow.contrib.tpu.python.tpu import tpu_estimator\n"
              "from tensorflow.python.estimator import estimator\n"
              "from tensorflow_estimator.python.estimator.tpu import tpu_config\n"
              "import tensorflow\n")
    assert rewrite.rewrite_source(source) == (
        "import tpu_estimator_compat.v1 as tf\n"
        "import tpu_estimator_compat.v1 as tf\n"
        "from tpu_estimator_compat.v1 import estimator as tf_estimator\n"
        "from tpu_estimator_compat.v1.contrib import tpu as contrib_tpu\n"
        "from tpu_estimator_compat.v1.contrib.tpu.python.tpu import tpu_estimator\n"
        "from tpu_estimator_compat.v1.python.estimator import estimator\n"
        "from tpu_estimator_compat.v1.python.estimator.tpu import tpu_config\n"
        "import tpu_estimator_compat.v1 as tensorflow\n")


def test_an_import_with_a_trailing_comment_is_rewritten_and_keeps_it():
    """lasertagger's official_transformer: `import tensorflow as tf  # pylint: ...`."""
    source = ("import tensorflow as tf  # pylint: disable=g-bad-import-order\n"
              "import tensorflow.contrib.slim  # slim\n")
    assert rewrite.rewrite_source(source) == (
        "import tpu_estimator_compat.v1 as tf  # pylint: disable=g-bad-import-order\n"
        "import tpu_estimator_compat.v1 as tensorflow  # slim\n")


def test_tensorflow_v2_protos_xla_and_other_libraries_are_left_alone():
    source = ("import tensorflow.compat.v2 as tf2\n"
              "from tensorflow.core.protobuf import rewriter_config_pb2\n"
              "import tensorflow_datasets as tfds\n"
              "import tensorflow_hub as hub\n"
              "x = 'import tensorflow as tf'\n")
    assert rewrite.rewrite_source(source) == source


def test_tensorflow_2_code_gets_the_v2_namespace_and_keras_2():
    """The migration guides' imports, as docs/cli.md tells a TF2 program's user to change
    them."""
    source = ("import tensorflow as tf\n"
              "import tensorflow.compat.v1 as tf1\n"
              "from tensorflow.keras import layers\n"
              "from tensorflow.compat.v1 import estimator as tf_estimator\n")
    assert rewrite.rewrite_source(source, tf2=True) == (
        "import tpu_estimator_compat.v2 as tf\n"
        "import tpu_estimator_compat.v1 as tf1\n"
        "from tf_keras import layers\n"
        "from tpu_estimator_compat.v1 import estimator as tf_estimator\n")


def test_a_notebook_becomes_a_script_displaying_each_cells_last_value(tmp_path):
    import json  # noqa: PLC0415
    cells = [{"cell_type": "markdown", "source": ["# Title"]},
             {"cell_type": "code", "source": ["!pip install tf-nightly\n", "x = 2\n", "x * 3"]},
             {"cell_type": "code", "source": "%load_ext tensorboard\nprint(x)\nx;"},
             {"cell_type": "code", "source": ["f(1,\n", "  2)  # call"]}]
    path = tmp_path / "guide.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    display = "_ = ({})\nif _ is not None:\n    print('Out:', repr(_))"
    assert notebook.notebook_source(str(path)) == "\n\n".join([
        "x = 2\n" + display.format("x * 3"), "print(x)\nx;",
        display.format("f(1,\n  2)")]) + "\n"


def test_tensorflow_python_paths_are_served_too():
    """As the README's rule and the runner: BERT-NER's metrics call TF 1.15's
    `variable_scope.variable`, which only the served module has."""
    assert rewrite.rewrite_source("from tensorflow.python.ops import variable_scope\n") == (
        "from tpu_estimator_compat.v1.python.ops import variable_scope\n")


def test_run_reports_the_exception_line_or_a_native_crash():
    import run  # noqa: PLC0415  (the corpus runner; its status column quotes these lines)

    traceback = ("I0 some log\nTraceback (most recent call last):\n  File \"x.py\", line 1\n"
                 "ValueError: first line\n  of a long message\n")
    assert run.failure_reason(traceback) == "ValueError: first line"
    crash = ("Saving checkpoints\ndouble free or corruption (!prev)\nFatal Python error: "
             "Aborted\n\nThread 0x1 (most recent call first):\n  File \"y.py\"\n\n"
             "Extension modules: numpy\n")
    assert run.failure_reason(crash) == (
        "double free or corruption (!prev): Fatal Python error: Aborted")
    segfault = ("I1124 01:05:29.53 1 training.py:316] Saving checkpoints\n"
                "Fatal Python error: Segmentation fault\n")
    assert run.failure_reason(segfault) == "Fatal Python error: Segmentation fault"
